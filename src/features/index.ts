// The one list of features. The server, `npm run worker`, the migrations and the retention loop read it; a new
// feature is a folder under src/features/ that exports a `Feature` (src/platform/feature.ts) and one line here.
// Then src/handlers.ts: remove its operations from `notImplemented`. docs/server.md has the checklist.
// Only entry points (src/server.ts, src/worker.ts, and tests) import this list; they hand it down to the platform
// (Platform.features, startWorkers, startRetention, migrate), which never imports it. The CLI migrates with
// src/features/migrations.ts, the features' migrations without the features.
import type { Feature } from '../platform/feature.ts';
import { chatFeature } from './chat/index.ts';
import { chatbotsFeature } from './chatbots/index.ts';
import { dashboardFeature } from './dashboard/index.ts';
import { directoryFeature } from './directory/index.ts';
import { documentsFeature } from './documents/index.ts';
import { engineFeature } from './engine/index.ts';
import { knowledgeFeature } from './knowledge/index.ts';
import { limitsFeature } from './limits/index.ts';
import { policyFeature } from './policy/index.ts';
import { projectsFeature } from './projects/index.ts';
import { serviceFeature } from './service/index.ts';
import { sessionsFeature } from './sessions/index.ts';
import { ssoFeature } from './sso/index.ts';
import { voicesFeature } from './voices/index.ts';
import { webhooksFeature } from './webhooks/index.ts';
import { workflowsFeature } from './workflows/index.ts';
import { workspaceFeature } from './workspace/index.ts';

export const features = [
  serviceFeature,
  workspaceFeature,
  directoryFeature,
  sessionsFeature,
  ssoFeature,
  webhooksFeature,
  projectsFeature,
  engineFeature,
  limitsFeature,
  chatFeature,
  voicesFeature,
  policyFeature,
  knowledgeFeature,
  documentsFeature,
  chatbotsFeature,
  workflowsFeature,
  dashboardFeature,
] as const satisfies readonly Feature[];

// The one list of features. The server, `npm run worker`, the migrations and the retention loop read it; a new
// feature is a folder under src/features/ that exports a `Feature` (src/platform/feature.ts) and one line here.
// Then src/handlers.ts: remove its operations from `notImplemented`. docs/server.md has the checklist.
// Only entry points (server, worker, app, handlers, storage/database.ts) import this list statically; a module that
// a feature imports must not (or import it inside a function), else loading that feature first reads the list
// before it is built ("Cannot access 'xHandlers' before initialization").
import type { Feature } from '../platform/feature.ts';
import { chatFeature } from './chat/index.ts';
import { chatbotsFeature } from './chatbots/index.ts';
import { projectsFeature } from './projects/index.ts';
import { serviceFeature } from './service/index.ts';
import { webhooksFeature } from './webhooks/index.ts';
import { workspaceFeature } from './workspace/index.ts';

export const features = [serviceFeature, workspaceFeature, webhooksFeature, projectsFeature, chatFeature, chatbotsFeature] as const satisfies readonly Feature[];

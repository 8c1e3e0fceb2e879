// The one list of features. The server, `npm run worker`, the migrations and the retention loop read it; a new
// feature is a folder under src/features/ that exports a `Feature` (src/platform/feature.ts) and one line here.
// Then src/handlers.ts: remove its operations from `notImplemented`. docs/server.md has the checklist.
import type { Feature } from '../platform/feature.ts';
import { chatFeature } from './chat/index.ts';
import { chatbotsFeature } from './chatbots/index.ts';
import { serviceFeature } from './service/index.ts';
import { webhooksFeature } from './webhooks/index.ts';
import { workspaceFeature } from './workspace/index.ts';

export const features = [serviceFeature, workspaceFeature, webhooksFeature, chatFeature, chatbotsFeature] as const satisfies readonly Feature[];

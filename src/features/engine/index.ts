// The engine feature: the content engine that every feature writing text calls (engine.ts), the model catalogue it
// serves (GET /v1/models), and the usage it records (GET /v1/usage).
import type { Feature } from '../../platform/feature.ts';
import { usage } from './migrations/007_usage.ts';
import { modelHandlers } from './models.ts';
import { usageHandlers } from './usage.ts';

export const engineFeature = {
  name: 'engine',
  handlers: { ...modelHandlers, ...usageHandlers },
  migrations: { '007_usage': usage },
} satisfies Feature;

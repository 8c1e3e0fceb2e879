// The service feature: liveness, readiness and the contract itself.
import type { Feature } from '../../platform/feature.ts';
import { serviceHandlers } from './handlers.ts';

export const serviceFeature = {
  name: 'service',
  handlers: serviceHandlers,
} satisfies Feature;

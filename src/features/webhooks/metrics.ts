// What the webhooks feature tells operators at GET /metrics, declared here and registered by the platform through
// the feature (Feature.metrics): the delivery attempts this process sent.
import { counter } from '../../platform/metrics.ts';

export const deliveryAttempts = counter({
  name: 'webhook_delivery_attempts_total',
  help: 'Webhook delivery attempts sent by this process, by outcome (succeeded: a 2xx answer).',
  labelNames: ['outcome'],
});

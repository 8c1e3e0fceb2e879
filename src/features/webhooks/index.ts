// The webhooks feature: endpoints, events, deliveries and the delivery worker.

import { iso } from '../../platform/clock.ts';
import type { Feature } from '../../platform/feature.ts';
import { RETENTION_DAYS } from '../../platform/retention.ts';
import { PENDING } from '../../storage/partial-indexes.ts';
import { deliveryHandlers } from './deliveries.ts';
import { DeliveryWorker } from './delivery-worker.ts';
import { endpointHandlers } from './endpoints.ts';
import { eventHandlers } from './events.ts';
import { deliveryAttempts } from './metrics.ts';
import { webhooks } from './migrations/002_webhooks.ts';
import { eventCatalogue } from './migrations/006_event_catalogue.ts';

const DAY_MS = 86_400_000;

export const webhooksFeature = {
  name: 'webhooks',
  handlers: { ...endpointHandlers, ...deliveryHandlers, ...eventHandlers },
  migrations: { '002_webhooks': webhooks, '006_event_catalogue': eventCatalogue },
  metrics: [deliveryAttempts],
  async retention(db, now) {
    const before = iso(new Date(now.getTime() - RETENTION_DAYS.events * DAY_MS));
    await db.deleteFrom('events').where('created_at', '<', before).execute();
    // Attempts go with their delivery (on delete cascade). A delivery still pending (a long queue behind an endpoint
    // that keeps failing) is kept until it ends: deleting it would lose the event and stall its endpoint's queue.
    await db
      .deleteFrom('webhook_deliveries')
      .where('created_at', '<', before)
      .where('status', '!=', 'pending')
      .execute();
  },
  workers: ({ config, db, kind, clock, logger, metrics }) => [
    new DeliveryWorker({
      db,
      kind,
      databaseUrl: config.databaseUrl,
      clock,
      logger,
      metrics,
      allowLoopback: config.webhooksAllowLoopback,
      attemptTimeoutMs: config.webhookAttemptTimeoutMs,
    }),
  ],
  gauges: ({ db }) => [
    {
      name: 'webhook_queue_depth',
      help: 'Webhook deliveries not yet ended (status pending: due, waiting for a retry, or queued behind their endpoint).',
      // On the partial index of pending deliveries (webhook_deliveries_due): its size is the backlog, not the history.
      async collect() {
        const row = await db
          .selectFrom('webhook_deliveries')
          .select((eb) => eb.fn.countAll<number | string>().as('count'))
          .where('status', '=', PENDING)
          .executeTakeFirstOrThrow();
        return [{ value: Number(row.count) }];
      },
    },
  ],
} satisfies Feature;

// The public API: what other features and the entry points use (docs/server.md, "Dependency rules").
export { recordEvent } from './record-event.ts'; // every feature records its events in the transaction of its change
export { scheduleTable } from './schedule.ts'; // the retry schedule, written into the docs by npm run docs

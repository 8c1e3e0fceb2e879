// The delivery worker: sends due deliveries, records each attempt, schedules retries, and keeps every endpoint's
// queue in order. It is driven only by database state, so any number of workers (inside servers or `npm run
// worker`) share the work, and a crashed one loses nothing:
//   - Claiming: a worker leases due deliveries (`leased_until`, `lease_token`) in one statement; on PostgreSQL with
//     `for update skip locked`, so two workers never claim the same one. A crashed worker's lease runs out after
//     LEASE_MS and another worker (or the same one, restarted) sends that attempt again: at-least-once.
//   - Order: in an endpoint's queue only the head (the oldest pending delivery) has a `next_attempt_at`; the others
//     wait with null. When the head ends (delivered, or its attempts are exhausted), the transaction that records
//     this makes the next one due, and leases it to the same worker, which sends it at once. So the next event of an
//     endpoint is never sent before the previous one ended.
//   - Waking: at once when deliveries are created (their transaction calls notifyOnCommit on DELIVERIES_CHANNEL),
//     and every POLL_MS for retries that fell due.
// The loop around this (claim, run, wake, poll, stop) is the platform's ClaimLoop, which the job runner runs too;
// deliveries keep their own table and claim rather than being jobs, for their per-endpoint order and the handoff to
// the queue's next delivery in the transaction that records an attempt (no extra round trip per delivery).
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { Logger } from 'pino';
import { signWebhookPayload } from '../../../generated/webhooks.ts';
import type { Clock } from '../../platform/clock.ts';
import { iso } from '../../platform/clock.ts';
import type { DatabaseKind } from '../../storage/database.ts';
import { forUpdate } from '../../storage/locks.ts';
import type { Database, WebhookDeliveriesTable, WebhookEndpointsTable } from '../../storage/schema.ts';
import { ATTEMPT_TIMEOUT_MS, nextAttemptAt } from './schedule.ts';
import { sendAttempt, type AttemptOutcome } from './send.ts';
import { ClaimLoop, newLease, type BackgroundWorker, type Lease } from '../../platform/jobs/claim-loop.ts';

/**
 * The channel that wakes delivery workers: a transaction that creates deliveries (or makes some due) calls
 * `notifyOnCommit(trx, DELIVERIES_CHANNEL)` (`pg_notify` on commit on PostgreSQL, an in-process signal on SQLite).
 */
export const DELIVERIES_CHANNEL = 'webhook_deliveries';

/** Longer than an attempt can take: a lease still running belongs to a live worker. */
export const LEASE_MS = ATTEMPT_TIMEOUT_MS + 15_000;
/** How often an idle worker looks for retries that fell due (and, on SQLite, for other processes' deliveries). */
export const POLL_MS = 250;

export const USER_AGENT = 'content-service-webhooks/1.0';

type Delivery = Selectable<WebhookDeliveriesTable>;

export interface DeliveryWorkerOptions {
  db: Kysely<Database>;
  kind: DatabaseKind;
  databaseUrl: string;
  clock: Clock;
  logger: Logger;
  /** WEBHOOKS_ALLOW_LOOPBACK: attempts may go to http and loopback/private addresses. */
  allowLoopback: boolean;
  /** Attempts in flight at most, over all endpoints. */
  concurrency?: number;
}

export class DeliveryWorker implements BackgroundWorker {
  readonly name = 'webhook-delivery';
  readonly #options: Required<DeliveryWorkerOptions>;
  readonly #loop: ClaimLoop<Handoff>;

  constructor(options: DeliveryWorkerOptions) {
    this.#options = { concurrency: 100, ...options };
    this.#loop = new ClaimLoop<Handoff>({
      name: this.name,
      kind: options.kind,
      databaseUrl: options.databaseUrl,
      channel: DELIVERIES_CHANNEL,
      logger: options.logger,
      concurrency: this.#options.concurrency,
      pollMs: POLL_MS,
      claim: (limit) => this.#claim(limit),
      run: (item, stopping) => this.#attempt(item.delivery, item.endpoint, stopping),
      describe: (item) => ({ delivery_id: item.delivery.id }),
    });
  }

  start(): Promise<void> {
    return this.#loop.start();
  }

  /** Looks for due deliveries now. */
  wake(): void {
    this.#loop.wake();
  }

  /** Stops claiming, then waits for the attempts in flight to be sent and recorded (each ends within 15 s). */
  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** Leases up to `limit` due deliveries to this worker, and reads their endpoints in one query. */
  async #claim(limit: number): Promise<Handoff[]> {
    const { db, clock, kind } = this.#options;
    const now = iso(clock.now());
    const lease = newLease(LEASE_MS);
    const due = db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('leased_until', 'is', null), eb('leased_until', '<=', lease.expired)]))
      .orderBy('next_attempt_at')
      .limit(limit);
    // One statement, so one round trip: its own transaction.
    const deliveries = await db
      .updateTable('webhook_deliveries')
      .set({ leased_until: lease.until, lease_token: lease.token })
      .where('id', 'in', kind === 'postgres' ? due.forUpdate().skipLocked() : due)
      .returningAll()
      .execute();
    if (deliveries.length === 0) return [];
    const ids = [...new Set(deliveries.map((d) => d.endpoint_id))];
    const endpoints = new Map((await db.selectFrom('webhook_endpoints').select(endpointTargetColumns).where('id', 'in', ids).execute()).map((e) => [e.id, e]));
    return deliveries.map((delivery) => ({ delivery, endpoint: endpoints.get(delivery.endpoint_id) }));
  }

  async #attempt(delivery: Delivery, endpoint: EndpointTarget | undefined, stopping: () => boolean): Promise<Handoff | undefined> {
    const { db, clock, allowLoopback } = this.#options;
    if (!endpoint) {
      // Deleted while this delivery was being claimed: deletion ends pending deliveries, nothing is sent.
      await db
        .updateTable('webhook_deliveries')
        .set({ leased_until: null, lease_token: null, status: 'failed', next_attempt_at: null })
        .where('id', '=', delivery.id)
        .where('lease_token', '=', delivery.lease_token)
        .execute();
      return undefined;
    }
    const started = clock.now();
    const timestamp = Math.floor(started.getTime() / 1000);
    const secrets = [endpoint.secret];
    if (endpoint.previous_secret && endpoint.previous_secret_expires_at && endpoint.previous_secret_expires_at > iso(started)) secrets.push(endpoint.previous_secret);
    const outcome = await sendAttempt(
      endpoint.url,
      delivery.payload,
      {
        'Content-Type': 'application/json',
        'User-Agent': USER_AGENT,
        // One signature per active secret, the newest first (DESIGN.md).
        'Service-Signature': secrets.map((secret) => signWebhookPayload(delivery.payload, secret, timestamp)).join(','),
        'Service-Timestamp': String(timestamp),
        'Service-Event-Id': delivery.event_id,
        'Service-Event-Type': delivery.event_type,
      },
      allowLoopback,
    );
    return this.#record(delivery, started, outcome, stopping);
  }

  /**
   * Records the attempt and the delivery's next state. When the delivery ended, the endpoint's next queued delivery
   * becomes due and, unless the worker is stopping, is leased to this worker in the same transaction and returned,
   * with the endpoint as it is now (a changed URL applies to pending retries too, a rotated secret signs at once).
   */
  async #record(delivery: Delivery, started: Date, outcome: AttemptOutcome, stopping: () => boolean): Promise<Handoff | undefined> {
    const { db, clock, logger } = this.#options;
    const ended = clock.now();
    const result = await db.transaction().execute(async (trx) => {
      // The endpoint's lock first (see recordEvent): a delivery queued meanwhile is visible to the search below.
      const endpoint = await forUpdate(trx.selectFrom('webhook_endpoints').select(endpointTargetColumns).where('id', '=', delivery.endpoint_id), trx).executeTakeFirst();
      const number = delivery.attempt_count + 1;
      const succeeded = outcome.status === 'succeeded';
      const retryAt = succeeded || delivery.test ? null : nextAttemptAt(number, ended);
      // Only while this worker still holds the lease. A delivery ended meanwhile (its endpoint disabled or deleted)
      // stays failed unless this attempt succeeded; `status` in the expressions is the value before this update.
      const updated = await trx
        .updateTable('webhook_deliveries')
        .set({
          status: succeeded ? 'delivered' : retryAt ? sql<'pending' | 'failed'>`case when status = 'pending' then 'pending' else 'failed' end` : 'failed',
          next_attempt_at: retryAt ? sql<string | null>`case when status = 'pending' then ${iso(retryAt)} else null end` : null,
          attempt_count: number,
          last_attempt_at: iso(started),
          last_response_status_code: outcome.responseStatusCode,
          delivered_at: succeeded ? iso(ended) : null,
          leased_until: null,
          lease_token: null,
        })
        .where('id', '=', delivery.id)
        .where('lease_token', '=', delivery.lease_token)
        .returning('status')
        .executeTakeFirst();
      if (!updated) return 'lease_lost' as const;
      await trx
        .insertInto('webhook_attempts')
        .values({
          delivery_id: delivery.id,
          number,
          workspace_id: delivery.workspace_id,
          trigger: number === 1 && delivery.manual ? 'manual' : 'scheduled',
          started_at: iso(started),
          status: outcome.status,
          response_status_code: outcome.responseStatusCode,
          response_body: outcome.responseBody,
          duration_ms: outcome.durationMs,
          error: outcome.error,
        })
        .execute();
      const { status } = updated;
      if (status === 'pending' || !delivery.ordered) return undefined;
      const next = await startNextInQueue(trx, delivery.endpoint_id, ended, stopping() || !endpoint ? undefined : newLease(LEASE_MS));
      return next && endpoint ? { delivery: next, endpoint } : undefined;
    });
    if (result === 'lease_lost') {
      logger.warn({ delivery_id: delivery.id }, 'a webhook attempt ended after its lease ran out; another worker owns the delivery now');
      return undefined;
    }
    return result;
  }
}

const endpointTargetColumns = ['id', 'url', 'secret', 'previous_secret', 'previous_secret_expires_at'] as const;
type EndpointTarget = Pick<Selectable<WebhookEndpointsTable>, (typeof endpointTargetColumns)[number]>;
/** A claimed delivery with its endpoint as it is now (undefined: deleted meanwhile). */
interface Handoff {
  delivery: Delivery;
  endpoint: EndpointTarget | undefined;
}

/**
 * Makes the oldest waiting delivery of the endpoint's queue due, unless the queue still has a pending head. With a
 * lease, also leases it and returns it, for the caller to send at once.
 */
export async function startNextInQueue(trx: Transaction<Database>, endpointId: string, now: Date, lease?: Lease): Promise<Delivery | undefined> {
  const head = trx
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'pending')
    .where('ordered', '=', 1)
    .orderBy('sequence')
    .limit(1);
  return trx
    .updateTable('webhook_deliveries')
    .set({ next_attempt_at: iso(now), ...(lease ? { leased_until: lease.until, lease_token: lease.token } : {}) })
    .where('id', '=', head)
    // A head that is already due is the queue's current attempt, not one waiting behind it.
    .where('next_attempt_at', 'is', null)
    .returningAll()
    .executeTakeFirst()
    .then((row) => (lease ? row : undefined));
}

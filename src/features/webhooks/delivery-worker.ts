// The delivery worker: sends due deliveries, records each attempt, schedules retries, and keeps every endpoint's
// queue in order. It is driven only by database state, so any number of workers (inside servers or `npm run
// worker`) share the work, and a crashed one loses nothing:
//   - Claiming: a worker leases due deliveries (`leased_until`, `lease_token`) in one statement; on PostgreSQL with
//     `for update skip locked`, so two workers never claim the same one. A living worker renews the leases of its
//     attempts in flight every RENEW_MS; a crashed worker's run out LEASE_MS after their last renewal, and another
//     worker (or the same one, restarted) sends that attempt again: at-least-once.
//   - Order: in an endpoint's queue only the head (the oldest pending delivery) has a `next_attempt_at`; the others
//     wait with null. When the head ends (delivered, or its attempts are exhausted), the transaction that records
//     this makes the next one due, and leases it to the same worker, which sends it at once. So the next event of an
//     endpoint is never sent before the previous one ended.
//   - Waking: at once when deliveries are created (their transaction calls notifyOnCommit on DELIVERIES_CHANNEL),
//     and every POLL_MS for retries that fell due.
// The loop around this (claim, run, wake, poll, stop) is the platform's ClaimLoop, which the job runner runs too;
// deliveries keep their own table and claim rather than being jobs, for their per-endpoint order and the handoff to
// the queue's next delivery in the transaction that records an attempt (no extra round trip per delivery).

import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
} from '@opentelemetry/semantic-conventions';
import { type Kysely, type Selectable, sql, type Transaction } from 'kysely';
import type { Logger } from 'pino';
import { signWebhookPayload } from '../../../generated/webhooks.ts';
import type { Clock } from '../../platform/clock.ts';
import { iso } from '../../platform/clock.ts';
import { type BackgroundWorker, ClaimLoop, type Lease, newLease } from '../../platform/jobs/claim-loop.ts';
import type { Metrics } from '../../platform/metrics.ts';
import { failSpan, inSpan, SpanKind } from '../../platform/telemetry.ts';
import type { DatabaseKind } from '../../storage/database.ts';
import { forUpdate } from '../../storage/locks.ts';
import { ONE, PENDING } from '../../storage/partial-indexes.ts';
import type { Database } from '../../storage/schema.ts';
import { DELIVERIES_CHANNEL } from './channel.ts';
import { deliveryAttempts } from './metrics.ts';
import { nextAttemptAt } from './schedule.ts';
import type { WebhookDeliveriesTable, WebhookEndpointsTable } from './schema.ts';
import { type AttemptOutcome, sendAttempt } from './send.ts';

/**
 * How long a lease lasts after its last renewal: a lease still running belongs to a live worker, which renews it every
 * RENEW_MS however long its attempt takes (up to the attempt timeout). Short, so that a dead worker's attempt is taken
 * over within seconds; several renewals long, and longer than a wait for a pool connection (DATABASE_POOL_TIMEOUT_MS),
 * so that a slow round trip does not lose a live worker its lease.
 */
export const LEASE_MS = 10_000;
export const RENEW_MS = 2000;
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
  /** Where each attempt's outcome is counted (GET /metrics). */
  metrics: Metrics;
  /** WEBHOOK_ATTEMPT_TIMEOUT_MS: an attempt without a complete answer within this time has failed (`timeout`). */
  attemptTimeoutMs: number;
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
      run: (item, stopping) =>
        this.#holding(item.delivery, () => this.#attempt(item.delivery, item.endpoint, stopping)),
      describe: (item) => ({ delivery_id: item.delivery.id }),
    });
  }

  async start(): Promise<void> {
    await this.#loop.start();
    this.#renewal = setInterval(() => void this.#renew(), RENEW_MS);
    this.#renewal.unref();
  }

  /** The deliveries whose attempt this worker is making, with the token of their lease. */
  readonly #held = new Map<string, string>();
  #renewal: NodeJS.Timeout | undefined;

  async #holding<T>(delivery: Delivery, attempt: () => Promise<T>): Promise<T> {
    if (delivery.lease_token) this.#held.set(delivery.id, delivery.lease_token);
    try {
      return await attempt();
    } finally {
      this.#held.delete(delivery.id);
    }
  }

  #renewing = false;

  /**
   * Renews the leases of the attempts in flight (one statement, never two at once); one that failed is tried again at
   * the next tick. The new end is counted from when the statement has its connection, not from before the wait.
   */
  async #renew(): Promise<void> {
    if (this.#held.size === 0 || this.#renewing) return;
    this.#renewing = true;
    try {
      await this.#options.db.connection().execute((connection) =>
        connection
          .updateTable('webhook_deliveries')
          .set({ leased_until: iso(new Date(Date.now() + LEASE_MS)) })
          .where('id', 'in', [...this.#held.keys()])
          .where('lease_token', 'in', [...new Set(this.#held.values())])
          .execute(),
      );
    } catch (error) {
      this.#options.logger.warn({ err: error }, 'renewing the leases of webhook attempts failed; trying again');
    } finally {
      this.#renewing = false;
    }
  }

  /** Looks for due deliveries now. */
  wake(): void {
    this.#loop.wake();
  }

  /** Stops claiming, then waits for the attempts in flight to be sent and recorded (each ends within its timeout). */
  async stop(): Promise<void> {
    await this.#loop.stop();
    clearInterval(this.#renewal);
  }

  /** Leases up to `limit` due deliveries to this worker, and reads their endpoints in one query. */
  async #claim(limit: number): Promise<Handoff[]> {
    const { db, clock, kind } = this.#options;
    const now = iso(clock.now());
    const lease = newLease(LEASE_MS);
    const due = db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('status', '=', PENDING)
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
    const endpoints = new Map(
      (await db.selectFrom('webhook_endpoints').select(endpointTargetColumns).where('id', 'in', ids).execute()).map(
        (e) => [e.id, e],
      ),
    );
    return deliveries.map((delivery) => ({ delivery, endpoint: endpoints.get(delivery.endpoint_id) }));
  }

  async #attempt(
    delivery: Delivery,
    endpoint: EndpointTarget | undefined,
    stopping: () => boolean,
  ): Promise<Handoff | undefined> {
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
    if (
      endpoint.previous_secret &&
      endpoint.previous_secret_expires_at &&
      endpoint.previous_secret_expires_at > iso(started)
    )
      secrets.push(endpoint.previous_secret);
    const headers = {
      'Content-Type': 'application/json',
      'User-Agent': USER_AGENT,
      // One signature per active secret, the newest first (DESIGN.md).
      'Service-Signature': secrets.map((secret) => signWebhookPayload(delivery.payload, secret, timestamp)).join(','),
      'Service-Timestamp': String(timestamp),
      'Service-Event-Id': delivery.event_id,
      'Service-Event-Type': delivery.event_type,
    };
    // A span per attempt (a trace of its own), named after the event type it carries.
    const outcome = await inSpan(
      `webhook ${delivery.event_type}`,
      SpanKind.CLIENT,
      {},
      async (span) => {
        const sent = await sendAttempt(
          endpoint.url,
          delivery.payload,
          headers,
          allowLoopback,
          this.#options.attemptTimeoutMs,
        );
        if (span) {
          span.setAttributes(deliveryAttributes(delivery, endpoint.url));
          if (sent.responseStatusCode !== null)
            span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, sent.responseStatusCode);
          if (sent.status === 'failed')
            failSpan(
              span,
              new Error(`the attempt failed: ${sent.error ?? sent.responseStatusCode}`),
              sent.error ?? String(sent.responseStatusCode),
            );
        }
        return sent;
      },
      { root: true },
    );
    this.#options.metrics.count(deliveryAttempts, { outcome: outcome.status });
    return this.#record(delivery, started, outcome, stopping);
  }

  /**
   * Records the attempt and the delivery's next state. When the delivery ended, the endpoint's next queued delivery
   * becomes due and, unless the worker is stopping, is leased to this worker in the same transaction and returned,
   * with the endpoint as it is now (a changed URL applies to pending retries too, a rotated secret signs at once).
   *
   * Attempts that end while a recording transaction runs wait for it and are recorded together in the next one
   * (group commit): under load one commit serves many attempts (a commit was the largest cost of a delivery), and an
   * attempt that ends alone is recorded at once, without waiting for company.
   */
  #record(
    delivery: Delivery,
    started: Date,
    outcome: AttemptOutcome,
    stopping: () => boolean,
  ): Promise<Handoff | undefined> {
    return new Promise((resolve, reject) => {
      this.#unrecorded.push({
        delivery,
        started,
        ended: this.#options.clock.now(),
        outcome,
        stopping,
        resolve,
        reject,
      });
      // After the event loop's I/O phase, so that the attempts whose answers came in the same phase go together (a
      // SQLite transaction runs on microtasks alone: no other answer can come in while it runs).
      if (!this.#recordScheduled && this.#recorders < (this.#options.kind === 'postgres' ? POSTGRES_RECORDERS : 1)) {
        this.#recordScheduled = true;
        setImmediate(() => void this.#recordWaiting());
      }
    });
  }

  readonly #unrecorded: Ended[] = [];
  #recordScheduled = false;
  /** Recording transactions running now: one on SQLite (one writer anyway), a few on PostgreSQL's pool. */
  #recorders = 0;

  async #recordWaiting(): Promise<void> {
    this.#recordScheduled = false;
    this.#recorders++;
    try {
      while (this.#unrecorded.length > 0) {
        const batch = this.#unrecorded.splice(0, MAX_RECORDED_TOGETHER);
        let results: Array<Handoff | undefined | 'lease_lost'>;
        try {
          results = await this.#options.db.transaction().execute((trx) => recordAttempts(trx, batch));
        } catch (error) {
          if (batch.length === 1) {
            batch[0]!.reject(error);
            continue;
          }
          // One attempt's failure must not cost the others their record: each alone, in its own transaction.
          for (const ended of batch) {
            this.#options.db
              .transaction()
              .execute((trx) => recordAttempts(trx, [ended]))
              .then(([result]) => this.#settle(ended, result), ended.reject);
          }
          continue;
        }
        batch.forEach((ended, index) => {
          this.#settle(ended, results[index]);
        });
      }
    } finally {
      this.#recorders--;
    }
  }

  #settle(ended: Ended, result: Handoff | undefined | 'lease_lost'): void {
    if (result !== 'lease_lost') {
      ended.resolve(result);
      return;
    }
    this.#options.logger.warn(
      { delivery_id: ended.delivery.id },
      'a webhook attempt ended after its lease ran out; another worker owns the delivery now',
    );
    ended.resolve(undefined);
  }
}

/** Attempts recorded in one transaction at most. */
const MAX_RECORDED_TOGETHER = 100;
/** Recording transactions at once on PostgreSQL, where each waits on its round trips and its commit's flush. */
const POSTGRES_RECORDERS = 3;

/** An attempt that ended and waits to be recorded, with the promise of its handoff. */
interface Ended {
  delivery: Delivery;
  started: Date;
  ended: Date;
  outcome: AttemptOutcome;
  stopping: () => boolean;
  resolve(handoff: Handoff | undefined): void;
  reject(error: unknown): void;
}

/**
 * Records the attempts of `batch` in the caller's transaction, in a few statements whatever its size (on PostgreSQL
 * each statement is a round trip while the endpoints stay locked); per attempt, the handoff or that the lease was lost.
 */
async function recordAttempts(
  trx: Transaction<Database>,
  batch: Ended[],
): Promise<Array<Handoff | undefined | 'lease_lost'>> {
  // The endpoints' locks first (see recordEvent), in id order as recordEvent takes them (two transactions locking
  // the same endpoints in different orders could deadlock on PostgreSQL): a delivery queued meanwhile is visible to
  // the queue's search below.
  const endpointIds = [...new Set(batch.map((ended) => ended.delivery.endpoint_id))].sort();
  const endpoints = new Map(
    (
      await forUpdate(
        trx.selectFrom('webhook_endpoints').select(endpointTargetColumns).where('id', 'in', endpointIds).orderBy('id'),
        trx,
      ).execute()
    ).map((e) => [e.id, e]),
  );

  // Every delivery's next state in one statement, only while this worker still holds its lease. A delivery ended
  // meanwhile (its endpoint disabled or deleted) stays failed unless this attempt succeeded; `d.status` is the value
  // before this update. (Values come as text from the VALUES list, hence the casts; SQLite's `returning` takes no
  // table names, so the list's columns are named unlike the table's.)
  const rows = batch.map(({ delivery, started, ended, outcome }) => {
    const number = delivery.attempt_count + 1;
    const succeeded = outcome.status === 'succeeded';
    const retryAt = succeeded || delivery.test ? null : nextAttemptAt(number, ended);
    const next = succeeded ? 'delivered' : retryAt ? 'retry' : 'failed';
    return sql`(${delivery.id}, ${delivery.lease_token}, ${next}, ${retryAt && iso(retryAt)}, ${String(number)}, ${iso(started)}, ${outcome.responseStatusCode === null ? null : String(outcome.responseStatusCode)}, ${succeeded ? iso(ended) : null})`;
  });
  const { rows: updated } = await sql<{ id: string; status: Delivery['status'] }>`
    with v (delivery_id, held_lease, next, retry_at, attempt_number, started_at, code, ended_at) as (values ${sql.join(rows)})
    update webhook_deliveries as d set
      status = case v.next when 'delivered' then 'delivered' when 'retry' then (case when d.status = 'pending' then 'pending' else 'failed' end) else 'failed' end,
      next_attempt_at = case when v.next = 'retry' and d.status = 'pending' then v.retry_at else null end,
      attempt_count = cast(v.attempt_number as integer),
      last_attempt_at = v.started_at,
      last_response_status_code = cast(v.code as integer),
      delivered_at = v.ended_at,
      leased_until = null,
      lease_token = null
    from v
    where d.id = v.delivery_id and d.lease_token = v.held_lease
    returning id, status`.execute(trx);
  const statusOf = new Map(updated.map((row) => [row.id, row.status]));

  const recorded = batch.filter(({ delivery }) => statusOf.has(delivery.id));
  if (recorded.length > 0) {
    await trx
      .insertInto('webhook_attempts')
      .values(
        recorded.map(({ delivery, started, outcome }) => ({
          delivery_id: delivery.id,
          number: delivery.attempt_count + 1,
          workspace_id: delivery.workspace_id,
          trigger: delivery.attempt_count === 0 && delivery.manual ? ('manual' as const) : ('scheduled' as const),
          started_at: iso(started),
          status: outcome.status,
          response_status_code: outcome.responseStatusCode,
          response_body: outcome.responseBody,
          duration_ms: outcome.durationMs,
          error: outcome.error,
        })),
      )
      .execute();
  }

  // The queues whose head ended move on; their next deliveries are leased to this worker unless it is stopping.
  const movedOn = recorded.filter(({ delivery }) => delivery.ordered && statusOf.get(delivery.id) !== 'pending');
  const now = new Date(Math.max(...batch.map(({ ended }) => ended.getTime())));
  const leased = movedOn
    .filter(({ delivery, stopping }) => !stopping() && endpoints.has(delivery.endpoint_id))
    .map(({ delivery }) => delivery.endpoint_id);
  const unleased = movedOn.map(({ delivery }) => delivery.endpoint_id).filter((id) => !leased.includes(id));
  const nextOf = new Map(
    (await startNextInQueues(trx, leased, now, newLease(LEASE_MS))).map((next) => [next.endpoint_id, next]),
  );
  await startNextInQueues(trx, unleased, now);

  return batch.map(({ delivery }) => {
    if (!statusOf.has(delivery.id)) return 'lease_lost';
    const next = delivery.ordered ? nextOf.get(delivery.endpoint_id) : undefined;
    const endpoint = endpoints.get(delivery.endpoint_id);
    return next && endpoint ? { delivery: next, endpoint } : undefined;
  });
}

/** A delivery attempt's span attributes: the receiver's host (never its full URL, which may carry a token). */
function deliveryAttributes(delivery: Delivery, url: string): Record<string, string> {
  return {
    [ATTR_HTTP_REQUEST_METHOD]: 'POST',
    [ATTR_SERVER_ADDRESS]: URL.parse(url)?.hostname ?? '',
    'content_service.webhook.event_type': delivery.event_type,
    'content_service.webhook.event_id': delivery.event_id,
    'content_service.webhook.delivery_id': delivery.id,
  };
}

const endpointTargetColumns = ['id', 'url', 'secret', 'previous_secret', 'previous_secret_expires_at'] as const;
type EndpointTarget = Pick<Selectable<WebhookEndpointsTable>, (typeof endpointTargetColumns)[number]>;
/** A claimed delivery with its endpoint as it is now (undefined: deleted meanwhile). */
interface Handoff {
  delivery: Delivery;
  endpoint: EndpointTarget | undefined;
}

/**
 * Makes the oldest waiting delivery of each endpoint's queue due, unless the queue still has a pending head. With a
 * lease, also leases them and returns them, for the caller to send at once.
 */
export async function startNextInQueues(
  trx: Transaction<Database>,
  endpointIds: string[],
  now: Date,
  lease?: Lease,
): Promise<Delivery[]> {
  if (endpointIds.length === 0) return [];
  const heads = trx
    .selectFrom('webhook_endpoints as e')
    .select((eb) =>
      eb
        .selectFrom('webhook_deliveries as head')
        .select('head.id')
        .whereRef('head.endpoint_id', '=', 'e.id')
        .where('head.status', '=', PENDING)
        .where('head.ordered', '=', ONE)
        .orderBy('head.sequence')
        .limit(1)
        .as('id'),
    )
    .where('e.id', 'in', endpointIds);
  const rows = await trx
    .updateTable('webhook_deliveries')
    .set({ next_attempt_at: iso(now), ...(lease ? { leased_until: lease.until, lease_token: lease.token } : {}) })
    .where('id', 'in', heads as never)
    // A head that is already due is the queue's current attempt, not one waiting behind it.
    .where('next_attempt_at', 'is', null)
    .returningAll()
    .execute();
  return lease ? rows : [];
}

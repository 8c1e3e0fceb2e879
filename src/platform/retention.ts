// Background pruning of what the API keeps only for a while: the platform's idempotency keys (24 h), request log
// (30 days), audit log (365 days) and finished jobs (30 days), then each feature's own (Feature.retention: the
// webhooks feature's events and deliveries, 30 days).
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../storage/schema.ts';
import type { Clock } from './clock.ts';
import { iso } from './clock.ts';
import type { Feature } from './feature.ts';

export const RETENTION_DAYS = { events: 30, requestLog: 30, auditLog: 365, finishedJobs: 30 } as const;
const DAY_MS = 86_400_000;

const daysBefore = (now: Date, days: number) => iso(new Date(now.getTime() - days * DAY_MS));

export async function pruneExpired(db: Kysely<Database>, now: Date, features: readonly Feature[]): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('expires_at', '<=', iso(now)).execute();
  await db
    .deleteFrom('request_log_entries')
    .where('created_at', '<', daysBefore(now, RETENTION_DAYS.requestLog))
    .execute();
  await db.deleteFrom('audit_log_entries').where('created_at', '<', daysBefore(now, RETENTION_DAYS.auditLog)).execute();
  await db.deleteFrom('jobs').where('finished_at', '<', daysBefore(now, RETENTION_DAYS.finishedJobs)).execute();
  for (const feature of features) await feature.retention?.(db, now);
}

/** Runs `pruneExpired` now and then every `intervalMs`; the returned function stops it. */
export function startRetention(
  db: Kysely<Database>,
  clock: Clock,
  logger: Logger,
  features: readonly Feature[],
  intervalMs = 10 * 60_000,
): () => Promise<void> {
  let running: Promise<void> = Promise.resolve();
  const run = () => {
    running = pruneExpired(db, clock.now(), features).catch((error: unknown) =>
      logger.error({ err: error }, 'retention pruning failed'),
    );
  };
  run();
  const timer = setInterval(run, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}

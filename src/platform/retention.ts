// Background pruning of what the API keeps only for a while: idempotency keys (24 h), request log (30 days),
// audit log (365 days). Events are kept for the webhooks feature, which prunes them with its deliveries.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../storage/schema.ts';
import type { Clock } from './clock.ts';
import { iso } from './clock.ts';

export const RETENTION_DAYS = { events: 30, requestLog: 30, auditLog: 365 } as const;
const DAY_MS = 86_400_000;

export async function pruneExpired(db: Kysely<Database>, now: Date): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('expires_at', '<=', iso(now)).execute();
  await db.deleteFrom('request_log_entries').where('created_at', '<', iso(new Date(now.getTime() - RETENTION_DAYS.requestLog * DAY_MS))).execute();
  await db.deleteFrom('audit_log_entries').where('created_at', '<', iso(new Date(now.getTime() - RETENTION_DAYS.auditLog * DAY_MS))).execute();
}

/** Runs `pruneExpired` now and then every `intervalMs`; the returned function stops it. */
export function startRetention(db: Kysely<Database>, clock: Clock, logger: Logger, intervalMs = 10 * 60_000): () => Promise<void> {
  let running: Promise<void> = Promise.resolve();
  const run = () => {
    running = pruneExpired(db, clock.now()).catch((error: unknown) => logger.error({ err: error }, 'retention pruning failed'));
  };
  run();
  const timer = setInterval(run, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}

// Background pruning of what the API keeps only for a while: idempotency keys (24 h), request log (30 days),
// audit log (365 days), events and webhook deliveries with their attempts (30 days).
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
  const eventsBefore = iso(new Date(now.getTime() - RETENTION_DAYS.events * DAY_MS));
  await db.deleteFrom('events').where('created_at', '<', eventsBefore).execute();
  // Attempts go with their delivery (on delete cascade). A delivery still pending (a long queue behind an endpoint
  // that keeps failing) is kept until it ends: deleting it would lose the event and stall its endpoint's queue.
  await db.deleteFrom('webhook_deliveries').where('created_at', '<', eventsBefore).where('status', '!=', 'pending').execute();
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

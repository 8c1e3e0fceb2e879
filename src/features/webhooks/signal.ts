// How a delivery worker learns at once that deliveries were created, instead of polling slowly.
//   - PostgreSQL: `pg_notify` inside the transaction that created them. PostgreSQL sends the notification when, and
//     only if, the transaction commits, to every process that listens: servers and `npm run worker` alike.
//   - SQLite: an in-process signal. The process has one connection and Kysely runs one transaction at a time on it,
//     so the worker's next query waits for the transaction that signalled to end: it sees the committed rows.
//     A worker in another process on the same SQLite file sees them at its next poll (SQLITE_POLL_MS).
import { EventEmitter } from 'node:events';
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { isPostgres } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';

export const CHANNEL = 'webhook_deliveries';
const local = new EventEmitter().setMaxListeners(0);

/** Call in the transaction that created deliveries (or made some due). */
export async function deliveriesCreated(trx: Kysely<Database>): Promise<void> {
  if (isPostgres(trx)) {
    await sql`select pg_notify(${CHANNEL}, '')`.execute(trx);
  } else {
    local.emit(CHANNEL);
  }
}

/** Calls `wake` whenever deliveries may have been created; returns the function that stops listening. */
export async function listenForDeliveries(kind: 'sqlite' | 'postgres', databaseUrl: string, logger: Logger, wake: () => void): Promise<() => Promise<void>> {
  if (kind === 'sqlite') {
    local.on(CHANNEL, wake);
    return async () => {
      local.off(CHANNEL, wake);
    };
  }
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const connect = async (): Promise<void> => {
    const next = new pg.Client({ connectionString: databaseUrl });
    next.on('notification', wake);
    next.on('error', (error) => {
      logger.warn({ err: error }, 'the webhook notification connection failed; reconnecting');
      next.end().catch(() => {});
      if (client === next) client = undefined;
      if (!stopped) retry = setTimeout(() => void connect().catch(() => {}), 1000);
    });
    try {
      await next.connect();
      await next.query(`listen ${CHANNEL}`);
    } catch (error) {
      next.end().catch(() => {});
      if (!stopped) retry = setTimeout(() => void connect().catch(() => {}), 1000);
      throw error;
    }
    client = next;
    // Notifications sent while no connection listened are lost; the worker checks once now.
    wake();
  };
  await connect().catch((error: unknown) => logger.warn({ err: error }, 'could not listen for webhook notifications; polling until it can'));
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await client?.end().catch(() => {});
  };
}

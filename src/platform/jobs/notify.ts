// How a worker learns at once that work was committed, instead of polling slowly. One channel per kind of work
// (`webhook_deliveries`, `jobs`).
//   - PostgreSQL: `pg_notify` inside the transaction that created the work. PostgreSQL sends the notification when, and
//     only if, the transaction commits, to every process that listens: servers and `npm run worker` alike.
//   - SQLite: an in-process signal. The process has one connection and Kysely runs one transaction at a time on it,
//     so the worker's next query waits for the transaction that signalled to end: it sees the committed rows.
//     A worker in another process on the same SQLite file sees them at its next poll.
import { EventEmitter } from 'node:events';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import type { DatabaseKind } from '../../storage/database.ts';
import { isPostgres } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';

const local = new EventEmitter().setMaxListeners(0);

/** Call in the transaction that created work on `channel` (or made some due): listeners wake when it commits. */
export async function notifyOnCommit(trx: Kysely<Database>, channel: string): Promise<void> {
  if (isPostgres(trx)) {
    await sql`select pg_notify(${channel}, '')`.execute(trx);
  } else {
    local.emit(channel);
  }
}

/**
 * Calls `wake` whenever work may have been committed on `channel` (and when listening starts); `lost` when a
 * PostgreSQL listening connection fails, until it is back. Returns the function that stops listening.
 */
export async function listenForWork(
  kind: DatabaseKind,
  databaseUrl: string,
  channel: string,
  logger: Logger,
  wake: () => void,
  lost: () => void = () => {},
): Promise<() => Promise<void>> {
  if (kind === 'sqlite') {
    local.on(channel, wake);
    return async () => {
      local.off(channel, wake);
    };
  }
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const connect = async (): Promise<void> => {
    const next = new pg.Client({ connectionString: databaseUrl });
    next.on('notification', wake);
    next.on('error', (error) => {
      logger.warn({ err: error, channel }, 'the notification connection failed; reconnecting');
      lost();
      next.end().catch(() => {});
      if (client === next) client = undefined;
      if (!stopped) retry = setTimeout(() => void connect().catch(() => {}), 1000);
    });
    try {
      await next.connect();
      await next.query(`listen ${channel}`);
    } catch (error) {
      next.end().catch(() => {});
      if (!stopped) retry = setTimeout(() => void connect().catch(() => {}), 1000);
      throw error;
    }
    client = next;
    // Notifications sent while no connection listened are lost; the worker checks once now.
    wake();
  };
  await connect().catch((error: unknown) =>
    logger.warn({ err: error, channel }, 'could not listen for notifications; polling until it can'),
  );
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await client?.end().catch(() => {});
  };
}

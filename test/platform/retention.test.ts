// The retention loop of the real server, on SQLite and PostgreSQL: what it prunes and when it runs.
// - Idempotency-Key records go when they expire (24 h after the request), request-log rows and events after 30 days,
//   audit entries after 365 days; each to the millisecond: the row one millisecond younger stays.
// - The loop runs when a server starts, and then every 10 minutes (the interval timer is a fake one that the test
//   moves; the clock of the rows is a ManualClock); a closed server leaves no timer behind.
// The rows are made by requests at the ManualClock's time: one POST /v1/api-keys with an Idempotency-Key writes an
// idempotency record, a request-log row and an audit entry (the last two with its X-Request-Id); a POST /v1/members
// records an event.
import type { Kysely } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import { ManualClock } from '../../src/platform/clock.ts';
import { storedKey } from '../../src/platform/idempotency.ts';
import { openStorage, type Storage } from '../../src/storage/database.ts';
import type { Database } from '../../src/storage/schema.ts';
import { eventually } from '../support/expect.ts';
import {
  databaseKinds,
  freshDatabase,
  startTestServer,
  type TestDatabase,
  type TestServer,
} from '../support/server.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const RETENTION_INTERVAL_MS = 10 * 60_000;

interface Written {
  requestId: string;
  idempotencyKey: string;
  /** When its event was recorded (the only one at that instant). */
  eventAt: string;
}

/** Which of the rows a request wrote are still there. */
async function remaining(db: Kysely<Database>, written: Written) {
  const [record, logRow, auditEntry, event] = await Promise.all([
    db
      .selectFrom('idempotency_keys')
      .select('key')
      .where('key', '=', storedKey(written.idempotencyKey))
      .executeTakeFirst(),
    db.selectFrom('request_log_entries').select('id').where('id', '=', written.requestId).executeTakeFirst(),
    db.selectFrom('audit_log_entries').select('id').where('request_id', '=', written.requestId).executeTakeFirst(),
    db.selectFrom('events').select('id').where('created_at', '=', written.eventAt).executeTakeFirst(),
  ]);
  return {
    idempotency: record !== undefined,
    requestLog: logRow !== undefined,
    audit: auditEntry !== undefined,
    event: event !== undefined,
  };
}

describe.each(databaseKinds)('retention on %s', (kind) => {
  const start = Date.parse('2026-01-01T00:00:00.000Z');
  const clock = new ManualClock(new Date(start));
  let database: TestDatabase;
  let server: TestServer | undefined;
  let older: Written;
  let younger: Written;

  /** A server on the test's database, with the retention interval on a fake timer. */
  async function startServer(): Promise<TestServer> {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    // No delivery worker: its poll is an interval too, and there is nothing to deliver.
    server = await startTestServer({
      databaseUrl: database.url,
      clock,
      workspace: false,
      env: { WEBHOOKS_WORKER: 'false' },
    });
    return server;
  }

  async function stopServer(): Promise<void> {
    // close() waits for a pruning run in progress, and stops the loop.
    if (server) {
      await server.close();
      expect(vi.getTimerCount(), 'intervals left running by a closed server').toBe(0);
    }
    server = undefined;
    vi.useRealTimers();
  }

  beforeAll(async () => {
    database = await freshDatabase(kind);
    const first = await startTestServer({ databaseUrl: database.url, clock, env: { WEBHOOKS_WORKER: 'false' } });
    const write = async (label: string): Promise<Written> => {
      const idempotencyKey = `retention-${label}`;
      const answer = await first.call('POST', '/v1/api-keys', {
        body: { name: label, role: 'viewer' },
        headers: { 'Idempotency-Key': idempotencyKey },
      });
      expect(answer.status).toBe(201);
      const member = await first.call('POST', '/v1/members', {
        body: { email: `${label}@retention.example`, role: 'viewer' },
      });
      expect(member.status).toBe(201);
      return { requestId: answer.headers.get('x-request-id')!, idempotencyKey, eventAt: clock.now().toISOString() };
    };
    older = await write('older');
    clock.advance(1);
    younger = await write('younger');
    // Closing writes the request log.
    await first.close();
    expect(await remaining(await openDb(), older)).toEqual({
      idempotency: true,
      requestLog: true,
      audit: true,
      event: true,
    });
  });
  afterEach(stopServer);
  afterAll(async () => {
    await stopServer();
    await closeDb();
    await database?.drop();
  });

  // The database as the test reads it, between servers.
  let readDb: Storage | undefined;
  async function openDb(): Promise<Kysely<Database>> {
    readDb ??= openStorage(database.url);
    return readDb.db;
  }
  async function closeDb(): Promise<void> {
    await readDb?.close();
    readDb = undefined;
  }

  test('a server prunes when it starts: the expired Idempotency-Key record goes, to the millisecond', async () => {
    clock.set(new Date(start + 24 * HOUR));
    await startServer();
    await stopServer();
    const db = await openDb();
    expect(await remaining(db, older)).toEqual({ idempotency: false, requestLog: true, audit: true, event: true });
    expect(await remaining(db, younger)).toEqual({ idempotency: true, requestLog: true, audit: true, event: true });
  });

  test('then every 10 minutes: request-log rows and events go after 30 days, audit entries after 365 days', async () => {
    const running = await startServer();
    const db = running.platform.db;
    // The start's run saw the clock as it was; what expires later waits for the next run.
    clock.set(new Date(start + 1 + 30 * DAY));
    await vi.advanceTimersByTimeAsync(RETENTION_INTERVAL_MS);
    // Events are pruned after the request log: once the older one is gone, this run is past both.
    await eventually(
      () => remaining(db, older),
      (rows) => !rows.event,
    );
    expect(await remaining(db, older)).toMatchObject({ requestLog: false, audit: true });
    expect(await remaining(db, younger)).toEqual({ idempotency: false, requestLog: true, audit: true, event: true });

    clock.set(new Date(start + 1 + 365 * DAY));
    await vi.advanceTimersByTimeAsync(RETENTION_INTERVAL_MS);
    // The features' rows (events) are pruned after the platform's (audit entries): once the younger event is gone,
    // this run is past both.
    await eventually(
      () => remaining(db, younger),
      (rows) => !rows.event,
    );
    expect(await remaining(db, older)).toMatchObject({ audit: false });
    expect(await remaining(db, younger)).toEqual({ idempotency: false, requestLog: false, audit: true, event: false });
    // The younger entry is exactly 365 days old; one millisecond later it goes too.
    clock.advance(1);
    await vi.advanceTimersByTimeAsync(RETENTION_INTERVAL_MS);
    await eventually(
      () => remaining(db, younger),
      (rows) => !rows.audit,
    );
  });
});

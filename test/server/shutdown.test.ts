// Shutdown of a server in this process (close(), what SIGTERM runs), on SQLite:
// - a request still running at SHUTDOWN_TIMEOUT_MS has its connection closed, and close() finishes, saying meanwhile
//   what it still waits for;
// - the request log rows of the last requests are written before the database is closed;
// - a webhook attempt in flight is finished and recorded before the database is closed.
// test/server/shutdown-processes.test.ts does the same with SIGTERM to a real server process.
import { afterEach, describe, expect, test } from 'vitest';
import { openStorage } from '../../src/storage/database.ts';
import { capturedLogger } from '../support/logs.ts';
import { holdingReceiver } from '../support/receiver.ts';
import { freshDatabase, startTestServer, type TestDatabase } from '../support/server.ts';

describe('shutdown', () => {
  const databases: TestDatabase[] = [];
  afterEach(async () => {
    for (const database of databases.splice(0)) await database.drop();
  });
  async function database(): Promise<TestDatabase> {
    const created = await freshDatabase('sqlite');
    databases.push(created);
    return created;
  }

  test('a request still running at SHUTDOWN_TIMEOUT_MS has its connection closed, and close() finishes', {
    timeout: 20_000,
  }, async () => {
    const { logger, lines } = capturedLogger<{ msg: string; waiting_for?: string }>('info');
    const server = await startTestServer({ env: { SHUTDOWN_TIMEOUT_MS: '300' }, handlerOverrides: true, logger });
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    server.handlerOverrides.set('getWorkspace', () => {
      entered();
      return new Promise(() => {}); // never answers
    });
    const inFlight = server.call('GET', '/v1/workspace').then(
      (answer) => `answered ${answer.status}`,
      () => 'connection closed',
    );
    await inHandler;
    await server.close();
    expect(await inFlight).toBe('connection closed');
    // The handler's promise never settles: the stop waits SETTLE_TIMEOUT_MS for it, and says so while it waits.
    expect(lines.map((line) => line.msg)).toContain('requests still running at the shutdown timeout; ending them');
    expect(lines.filter((line) => line.msg === 'still stopping').map((line) => line.waiting_for)).toContain(
      'work after answers',
    );
  });

  test('the request log rows of the last requests are in the database when close() returns', async () => {
    const db = await database();
    const server = await startTestServer({ databaseUrl: db.url });
    const answers = await Promise.all(Array.from({ length: 5 }, () => server.call('GET', '/v1/workspace')));
    const ids = answers.map((answer) => answer.headers.get('x-request-id')!);
    await server.close();
    const storage = openStorage(db.url);
    try {
      const rows = await storage.db.selectFrom('request_log_entries').select('id').where('id', 'in', ids).execute();
      expect(rows.map((row) => row.id).sort()).toEqual([...ids].sort());
    } finally {
      await storage.close();
    }
  });

  test('a webhook attempt in flight is finished and recorded before close() returns', { timeout: 20_000 }, async () => {
    const db = await database();
    const receiver = await holdingReceiver();
    try {
      const server = await startTestServer({ databaseUrl: db.url, env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } });
      const endpoint = await server.call('POST', '/v1/webhooks/endpoints', {
        body: { url: `${receiver.url}/hook`, event_types: ['workspace.member.added'] },
      });
      expect(endpoint.status).toBe(201);
      expect(
        (await server.call('POST', '/v1/members', { body: { email: 'in-flight@shutdown.example', role: 'viewer' } }))
          .status,
      ).toBe(201);
      await receiver.arrival;

      const closed = server.close();
      let closeSettled = false;
      void closed.finally(() => (closeSettled = true));
      await new Promise((resolve) => setImmediate(resolve));
      expect(closeSettled).toBe(false);
      receiver.release();
      await closed;

      const storage = openStorage(db.url);
      try {
        const deliveries = await storage.db
          .selectFrom('webhook_deliveries')
          .select(['id', 'status', 'attempt_count'])
          .where('endpoint_id', '=', endpoint.body.id)
          .execute();
        expect(deliveries).toEqual([expect.objectContaining({ status: 'delivered', attempt_count: 1 })]);
        const attempts = await storage.db
          .selectFrom('webhook_attempts')
          .select(['status', 'response_status_code'])
          .where('delivery_id', '=', deliveries[0]!.id)
          .execute();
        expect(attempts).toEqual([{ status: 'succeeded', response_status_code: 200 }]);
      } finally {
        await storage.close();
      }
    } finally {
      await receiver.close();
    }
  });
});

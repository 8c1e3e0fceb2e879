// The request log's loss window: a real server process (`src/main.ts`, as `npm start` runs it) on a SQLite file is
// killed with SIGKILL (no shutdown, no last flush). The log is written in batches (RequestLogWriter, every 200 ms), so
// what the process answered more than a flush interval before it died is in the database, every row; only the rows
// of the last fraction of a second may be missing. The test waits well past the interval (a wait, not an assertion
// about time), sends a last burst and kills the process at once.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, expect, test } from 'vitest';
import { features } from '../../src/features/index.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { migrate, openStorage } from '../../src/storage/database.ts';
import { freePort, type ServerProcess, startServerProcess, waitUntilReady } from '../support/processes.ts';
import { freshDatabase, type TestDatabase } from '../support/server.ts';

let database: TestDatabase | undefined;
let server: ServerProcess | undefined;

afterEach(async () => {
  if (server && server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  server = undefined;
  await database?.drop();
  database = undefined;
});

/** Sends `count` GET /v1/workspace requests, 5 at a time; the request ids the server answered with. */
async function requests(url: string, secret: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let sent = 0; sent < count; sent += 5) {
    const answers = await Promise.all(
      Array.from({ length: Math.min(5, count - sent) }, () =>
        fetch(`${url}/v1/workspace`, { headers: { Authorization: `Bearer ${secret}` } }),
      ),
    );
    for (const answer of answers) {
      await answer.arrayBuffer();
      expect(answer.status).toBe(200);
      ids.push(answer.headers.get('x-request-id')!);
    }
  }
  return ids;
}

test('kill -9: every request log row older than the flush interval is in the database', {
  timeout: 90_000,
}, async () => {
  database = await freshDatabase('sqlite');
  const setup = openStorage(database.url);
  let secret: string;
  try {
    await migrate(setup.db, features);
    secret = (await createWorkspace(setup.db, { name: 'Kill', region: 'eu', ownerEmail: 'owner@kill.example' })).secret;
  } finally {
    await setup.close();
  }

  server = startServerProcess({ DATABASE_URL: database.url }, await freePort());
  await waitUntilReady(server);
  const early = await requests(server.url, secret, 60);
  // Ten flush intervals: the batch of the early requests is written long before the kill, even on a loaded machine.
  await sleep(2_000);
  const late = await requests(server.url, secret, 20);
  const killed = new Promise((resolve) => server!.child.once('exit', (_code, signal) => resolve(signal)));
  server.child.kill('SIGKILL');
  expect(await killed).toBe('SIGKILL');

  const storage = openStorage(database.url);
  try {
    const rows = await storage.db.selectFrom('request_log_entries').select(['id', 'status', 'path']).execute();
    const logged = new Set(rows.map((row) => row.id));
    expect(early.filter((id) => !logged.has(id))).toEqual([]);
    expect(rows.filter((row) => early.includes(row.id))).toHaveLength(60);
    // The last burst's rows may or may not have been written; any that were are whole.
    for (const row of rows.filter((row) => late.includes(row.id)))
      expect(row).toMatchObject({ status: 200, path: '/v1/workspace' });
  } finally {
    await storage.close();
  }
});

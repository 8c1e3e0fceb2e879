// The background workers' hot lookups must read their partial indexes, never scan a table whose size is the whole
// history (30 days of deliveries). SQLite uses a partial index only when the query states its condition with literal
// values (src/storage/partial-indexes.ts): a `status = ?` made the claim a full scan of webhook_deliveries, and the
// queue's next a scan of the endpoint's every delivery. This test records every statement the server prepares while
// an event is delivered, retried and replayed, and asks SQLite for the plan of each that reads the queue tables.
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { freshDatabase, startTestServer, type TestDatabase, type TestServer } from '../support/server.ts';

const prepared = new Set<string>();
const prepare = DatabaseSync.prototype.prepare;
let database: TestDatabase;
let server: TestServer;
let receiver: Receiver;

beforeAll(async () => {
  DatabaseSync.prototype.prepare = function (this: DatabaseSync, text: string, ...rest: never[]) {
    prepared.add(text);
    return prepare.call(this, text, ...rest);
  } as typeof prepare;
  database = await freshDatabase('sqlite');
  server = await startTestServer({ databaseUrl: database.url, env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } });
  receiver = await startReceiver();
});
afterAll(async () => {
  DatabaseSync.prototype.prepare = prepare;
  await receiver?.close();
  await server?.close();
  await database?.drop();
});

test('the delivery worker, the job runner and recordEvent read the queue tables through indexes only', async () => {
  // Three endpoints, one failing once: deliveries are claimed, recorded together, retried, and queues move on.
  let failed = false;
  receiver.respond = () => {
    if (failed) return { status: 204 };
    failed = true;
    return { status: 500 };
  };
  for (const path of ['/a', '/b', '/c']) {
    const created = await server.call('POST', '/v1/webhooks/endpoints', {
      body: { url: `${receiver.url}${path}`, event_types: ['*'] },
    });
    expect(created.status).toBe(201);
  }
  for (let i = 0; i < 4; i++) {
    expect(
      (await server.call('POST', '/v1/members', { body: { email: `plans${i}@plans.example`, role: 'viewer' } })).status,
    ).toBe(201);
  }
  // 12 deliveries, one of them failed first; its queue waits for the retry (10 s) with the next events behind it.
  await receiver.waitFor(9, 10_000);

  const plans = new DatabaseSync(database.url.slice('sqlite:'.length), { readOnly: true });
  const queueStatements = [...prepared].filter(
    (text) => /"(webhook_deliveries|jobs)"/.test(text) && /'pending'|"status" = \?/.test(text),
  );
  const read: string[] = [];
  try {
    for (const text of queueStatements) {
      if (!/^\s*(select|update|with)/i.test(text)) continue;
      const statement = plans.prepare(`explain query plan ${text}`);
      const parameters = Array.from({ length: (text.match(/\?/g) ?? []).length }, () => null);
      const steps = statement.all(...parameters).map((row) => String(row.detail));
      read.push(`${text}\n  ${steps.join('\n  ')}`);
      // `SCAN <table>` (or its alias) reads every row; `SEARCH … USING INDEX` reads the matching ones.
      const scans = steps.filter((step) => /^SCAN (webhook_deliveries|jobs|d|head)\b/.test(step));
      expect(scans, `${text}\n  ${steps.join('\n  ')}`).toEqual([]);
    }
  } finally {
    plans.close();
  }
  // The statements that matter were seen: the claim, the queue's next, and recordEvent's busy queues.
  expect(
    read.some(
      (text) => /update "webhook_deliveries" set "leased_until"/.test(text) && /webhook_deliveries_due/.test(text),
    ),
  ).toBe(true);
  expect(read.some((text) => /"head"/.test(text) && /webhook_deliveries_queue/.test(text))).toBe(true);
  expect(read.some((text) => /exists/.test(text) && /webhook_deliveries_queue/.test(text))).toBe(true);
  expect(read.some((text) => /update "jobs"/.test(text) && /jobs_due/.test(text))).toBe(true);
});

// The one check of the retry schedule in real time (system clock, SQLite): the second attempt comes 10 s (±5 %
// jitter) after the first failed, as the worker's poll and a busy machine may add a little to it. Every other
// schedule test moves a ManualClock instead (delivery.test.ts).
import { afterAll, beforeAll, expect, test } from 'vitest';
import { RETRY_WAITS_S } from '../../src/features/webhooks/schedule.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let receiver: Receiver;

beforeAll(async () => {
  server = await startTestServer({ database: 'sqlite', env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await server?.close();
});

test('the first retry of a failed delivery arrives 10 s (±5 %) after the first attempt', async () => {
  // The bounds below are written for the schedule's first wait; a change of the schedule must revisit them.
  expect(RETRY_WAITS_S[0]).toBe(10);
  receiver.respond = () => ({ status: receiver.requests.length === 1 ? 500 : 200 });
  const endpoint = await server.call('POST', '/v1/webhooks/endpoints', {
    body: { url: `${receiver.url}/hook`, event_types: ['workspace.member.added'] },
  });
  expect(endpoint.status).toBe(201);
  expect(
    (await server.call('POST', '/v1/members', { body: { email: 'retry@first-retry.example', role: 'viewer' } })).status,
  ).toBe(201);

  const [first] = await receiver.waitFor(1, 5_000);
  expect(first!.body.type).toBe('workspace.member.added');
  const [, second] = await receiver.waitFor(2, 20_000);
  expect(second!.body.id).toBe(first!.body.id);
  const gap = second!.receivedAt - first!.receivedAt;
  expect(gap).toBeGreaterThanOrEqual(9_500);
  expect(gap).toBeLessThanOrEqual(13_000);
}, 40_000);

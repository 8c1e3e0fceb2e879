// What makes two requests "the same" for Idempotency-Key, and when a record cut off mid-request frees its key, on the
// real server on SQLite and PostgreSQL (ManualClock; a handler that waits, through the handlerOverrides test seam):
// - the path is part of the request: the same key and the same (empty) body on another key's rotate URL is 422
//   idempotency_key_reused, never the first rotation's answer with that key's new secret;
// - a request still running holds its key (409 idempotency_key_in_use) until 5 minutes after it started, to the
//   millisecond; then the key is free and a retry runs the request. When the request that was cut off ends after
//   all, its answer does not replace the retry's: the key keeps replaying the retry's answer.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { features } from '../../src/features/index.ts';
import { ManualClock } from '../../src/platform/clock.ts';
import { collectByKey } from '../../src/platform/feature.ts';
import type { OperationHandler } from '../../src/platform/operations.ts';
import { expectProblem } from '../support/expect.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';

const MINUTE = 60_000;

describe.each(databaseKinds)('Idempotency-Key records on %s', (kind) => {
  let server: TestServer;
  const clock = new ManualClock('2026-04-01T08:00:00.000Z');

  beforeAll(async () => {
    server = await startTestServer({ database: kind, clock, handlerOverrides: true });
  });
  afterAll(async () => {
    server?.handlerOverrides.clear();
    await server?.close();
  });

  test("the path is part of the request: the same key on another key's rotate URL is 422, not the first answer", async () => {
    const first = await server.createKey('viewer');
    const second = await server.createKey('viewer');
    const headers = { 'Idempotency-Key': `rotate-${kind}` };
    const rotated = await server.call('POST', `/v1/api-keys/${first.id}/rotate`, { headers });
    expect(rotated.status).toBe(200);
    expect(rotated.body.id).toBe(first.id);

    const other = await server.call('POST', `/v1/api-keys/${second.id}/rotate`, { headers });
    expectProblem(other, 422, 'idempotency_key_reused');
    expect(other.text).not.toContain(rotated.body.secret);
    // The first URL still replays its own answer.
    const replayed = await server.call('POST', `/v1/api-keys/${first.id}/rotate`, { headers });
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body.secret).toBe(rotated.body.secret);
  });

  test('a request cut off mid-way holds its key for 5 minutes from its start, then a retry runs', async () => {
    // The first createApiKey waits until the test lets it go, as a request of a process that hangs would: its
    // record stays "running".
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    server.handlerOverrides.set('createApiKey', async (request, context) => {
      if (++calls === 1) {
        entered();
        await gate;
      }
      return (collectByKey(features, 'handlers').createApiKey as OperationHandler<'createApiKey'>)(request, context);
    });
    const started = clock.now().getTime();
    const post = () =>
      server.call('POST', '/v1/api-keys', {
        body: { name: `cut off ${kind}`, role: 'viewer' },
        headers: { 'Idempotency-Key': `cut-off-${kind}` },
      });
    const cutOff = post();
    await inHandler;

    expectProblem(await post(), 409, 'idempotency_key_in_use');
    clock.set(new Date(started + 5 * MINUTE - 1));
    const stillHeld = await post();
    expectProblem(stillHeld, 409, 'idempotency_key_in_use');
    expect(stillHeld.headers.get('retry-after')).toBe('1');

    clock.set(new Date(started + 5 * MINUTE));
    const retried = await post();
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBe('false');
    expect(calls).toBe(2);
    // And the retry's answer is what the key replays from now on.
    const replayed = await post();
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body.id).toBe(retried.body.id);

    // The request that was cut off ends after all: its answer goes to its client, not into the key's record.
    release();
    const late = await cutOff;
    expect(late.status).toBe(201);
    expect(late.body.id).not.toBe(retried.body.id);
    const afterLate = await post();
    expect(afterLate.headers.get('idempotent-replayed')).toBe('true');
    expect(afterLate.body.id).toBe(retried.body.id);
  });
});

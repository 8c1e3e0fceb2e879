// The rate limit's budget comes back when its 60-second window ends (the in-memory store; one SQLite server).
// The store reads the time from Date.now(), so this test moves a fake Date (only Date: timers stay real): one second
// before the window can have ended the key is still refused, with Retry-After counting down; once it has ended, the
// key has a whole budget again. Redis keeps its own time (the key's TTL), which a test cannot move.
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { type Answer, startTestServer, type TestServer } from '../support/server.ts';

const LIMIT = 600;
const WINDOW_MS = 60_000;

const remaining = (answer: Answer) => Number(/;r=(\d+);/.exec(answer.headers.get('ratelimit') ?? '')?.[1]);

describe('the rate limit window', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    vi.useRealTimers();
    await server?.close();
  });

  test('a spent budget is whole again when the window ends, and not before', async () => {
    const { secret } = await server.createKey('viewer');
    const beforeFirst = Date.now();
    for (let start = 0; start < LIMIT; start += 50) {
      const batch = await Promise.all(
        Array.from({ length: 50 }, () => server.call('GET', '/v1/workspace', { key: secret })),
      );
      expect(batch.map((answer) => answer.status)).toEqual(Array(50).fill(200));
    }
    const afterLast = Date.now();
    expect((await server.call('GET', '/v1/workspace', { key: secret })).status).toBe(429);

    vi.useFakeTimers({ toFake: ['Date'] });
    // The window began with the first request, so it ends no earlier than 60 s after `beforeFirst`.
    vi.setSystemTime(beforeFirst + WINDOW_MS - 1000);
    const stillRefused = await server.call('GET', '/v1/workspace', { key: secret });
    expect({ status: stillRefused.status, code: stillRefused.body.code }).toEqual({
      status: 429,
      code: 'rate_limited',
    });
    const retryAfter = Number(stillRefused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil((afterLast - beforeFirst) / 1000) + 1);

    // ... and no later than 60 s after the 600th.
    vi.setSystemTime(afterLast + WINDOW_MS);
    const again = await server.call('GET', '/v1/workspace', { key: secret });
    expect(again.status).toBe(200);
    expect(remaining(again)).toBe(LIMIT - 1);
    vi.useRealTimers();
  });
});

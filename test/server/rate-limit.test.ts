// The rate limit of the real server: 600 requests per 60-second window per API key.
// - in memory (one process) and in Redis (every process shares one budget per key);
// - every authenticated answer says `RateLimit-Policy: "default";q=600;w=60` and `RateLimit: "default";r=…;t=…`,
//   r counting down; the 601st request is 429 rate_limited with Retry-After (whole seconds, ≥ 1) and r=0;
// - another key of the same workspace has its own budget;
// - /healthz, /readyz and /v1/openapi.json carry no RateLimit and are never limited.
// Requests go in concurrent batches to keep this fast; the window is 60 s, far longer than a test takes.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  type Answer,
  databaseKinds,
  REDIS_URL,
  redisAvailable,
  startTestServer,
  type TestServer,
} from '../support/server.ts';

const LIMIT = 600;
const POLICY = '"default";q=600;w=60';
const RATE_LIMIT = /^"default";r=(\d+);t=(\d+)$/;
const BATCH = 50;

/** `count` requests, `BATCH` at a time; `target(i)` says which server and key the i-th goes to. */
async function burst(
  count: number,
  target: (i: number) => { server: TestServer; key: string; path?: string },
): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (let start = 0; start < count; start += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, count - start) }, (_, j) => {
      const { server, key, path } = target(start + j);
      return server.call('GET', path ?? '/v1/workspace', { key });
    });
    answers.push(...(await Promise.all(batch)));
  }
  return answers;
}

function remaining(answer: Answer): { r: number; t: number } {
  const match = RATE_LIMIT.exec(answer.headers.get('ratelimit') ?? '');
  expect(match, `RateLimit header of a ${answer.status}: ${answer.headers.get('ratelimit')}`).not.toBeNull();
  return { r: Number(match![1]), t: Number(match![2]) };
}

/** 600 answers of one budget: all 200, each with the policy, r taking every value from 599 down to 0 once. */
function expectWholeBudget(answers: Answer[]): void {
  expect(answers.map((a) => a.status)).toEqual(Array(LIMIT).fill(200));
  for (const answer of answers) expect(answer.headers.get('ratelimit-policy')).toBe(POLICY);
  const left = answers.map((a) => remaining(a));
  expect(left.map((l) => l.r).sort((a, b) => b - a)).toEqual(Array.from({ length: LIMIT }, (_, i) => LIMIT - 1 - i));
  for (const { t } of left) {
    expect(t).toBeGreaterThanOrEqual(1);
    expect(t).toBeLessThanOrEqual(60);
  }
}

function expectLimited(answer: Answer): void {
  expect({ status: answer.status, code: answer.body?.code }).toEqual({ status: 429, code: 'rate_limited' });
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(answer.body.request_id).toBe(answer.headers.get('x-request-id'));
  const retryAfter = answer.headers.get('retry-after') ?? '';
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(60);
  expect(answer.headers.get('ratelimit-policy')).toBe(POLICY);
  const { r, t } = remaining(answer);
  expect(r).toBe(0);
  expect(t).toBe(Number(retryAfter));
}

const PUBLIC_PATHS = ['/healthz', '/readyz', '/v1/openapi.json'];

describe.each(databaseKinds)('the rate limit in memory, on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ database: kind });
  });
  afterAll(async () => {
    await server?.close();
  });

  test('600 requests pass with r counting down; the 601st is 429 with Retry-After; another key has its own budget', async () => {
    const first = await server.createKey('viewer');
    const second = await server.createKey('viewer');
    expectWholeBudget(await burst(LIMIT, () => ({ server, key: first.secret })));

    const over = await burst(3, () => ({ server, key: first.secret }));
    for (const answer of over) expectLimited(answer);
    // Refused whatever the operation, and a POST does not run.
    const refusedPost = await server.call('POST', '/v1/api-keys', {
      key: first.secret,
      body: { name: 'never', role: 'viewer' },
    });
    expectLimited(refusedPost);

    const other = await server.call('GET', '/v1/workspace', { key: second.secret });
    expect(other.status).toBe(200);
    expect(remaining(other).r).toBe(LIMIT - 1);
  });

  test('the budget is per key, not per workspace: the owner key is unaffected by another key running out', async () => {
    const spender = await server.createKey('viewer');
    await burst(LIMIT + 1, () => ({ server, key: spender.secret }));
    const owner = await server.call('GET', '/v1/workspace');
    expect(owner.status).toBe(200);
    expect(remaining(owner).r).toBeGreaterThan(LIMIT - 10);
  });

  test('a request refused for its key (401) carries no RateLimit', async () => {
    const unauthenticated = await server.call('GET', '/v1/workspace', { key: 'cs_live_nope' });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('ratelimit')).toBeNull();
    expect(unauthenticated.headers.get('ratelimit-policy')).toBeNull();
  });

  test('/healthz, /readyz and /v1/openapi.json carry no RateLimit and are never limited', async () => {
    const spent = await server.createKey('viewer');
    await burst(LIMIT + 1, () => ({ server, key: spent.secret }));
    expectLimited(await server.call('GET', '/v1/workspace', { key: spent.secret }));
    // More than a budget's worth of public requests (mostly the cheap /healthz), with and without the spent key.
    const answers = await burst(LIMIT + 30, (i) => ({
      server,
      key: i % 2 ? spent.secret : '',
      path: i < 30 ? PUBLIC_PATHS[i % PUBLIC_PATHS.length] : '/healthz',
    }));
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.headers.get('ratelimit')).toBeNull();
      expect(answer.headers.get('ratelimit-policy')).toBeNull();
    }
  });
});

describe.skipIf(!redisAvailable)('the rate limit in Redis', () => {
  const prefix = `test:rl:${process.pid}:${Math.random().toString(36).slice(2)}`;
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    a = await startTestServer({ redisUrl: REDIS_URL, rateLimitKeyPrefix: prefix });
    // A second process of the same deployment: same database, same Redis, same key prefix.
    b = await startTestServer({
      redisUrl: REDIS_URL,
      rateLimitKeyPrefix: prefix,
      databaseUrl: a.database.url,
      workspace: false,
    });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  test('both servers are ready with Redis as their rate-limit store', async () => {
    for (const server of [a, b]) {
      const ready = await server.call('GET', '/readyz', { key: null });
      expect(ready.status).toBe(200);
      expect(ready.body.checks.map((c: { name: string }) => c.name)).toContain('rate_limit_store');
    }
  });

  test('one server: 600 pass with r counting down, the 601st is 429, another key has its own budget', async () => {
    const first = await a.createKey('viewer');
    const second = await a.createKey('viewer');
    expectWholeBudget(await burst(LIMIT, () => ({ server: a, key: first.secret })));
    expectLimited(await a.call('GET', '/v1/workspace', { key: first.secret }));
    const other = await a.call('GET', '/v1/workspace', { key: second.secret });
    expect(other.status).toBe(200);
    expect(remaining(other).r).toBe(LIMIT - 1);
  });

  test('two servers with the same Redis and prefix share one budget: 300 on each, then 429 on either', async () => {
    const { secret } = await a.createKey('viewer');
    const answers = await burst(LIMIT, (i) => ({ server: i % 2 ? b : a, key: secret }));
    expectWholeBudget(answers);
    expectLimited(await a.call('GET', '/v1/workspace', { key: secret }));
    expectLimited(await b.call('GET', '/v1/workspace', { key: secret }));
  });

  test('a server with another prefix has budgets of its own', async () => {
    const { secret } = await a.createKey('viewer');
    await burst(LIMIT + 1, () => ({ server: a, key: secret }));
    const elsewhere = await startTestServer({
      redisUrl: REDIS_URL,
      rateLimitKeyPrefix: `${prefix}:other`,
      databaseUrl: a.database.url,
      workspace: false,
    });
    try {
      const answer = await elsewhere.call('GET', '/v1/workspace', { key: secret });
      expect(answer.status).toBe(200);
      expect(remaining(answer).r).toBe(LIMIT - 1);
    } finally {
      await elsewhere.close();
    }
  });

  test('public operations are not limited with Redis either', async () => {
    const answers = await burst(LIMIT + 30, (i) => ({
      server: i % 2 ? b : a,
      key: '',
      path: i < 30 ? PUBLIC_PATHS[i % PUBLIC_PATHS.length] : '/healthz',
    }));
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.headers.get('ratelimit')).toBeNull();
    }
  });
});

describe('the rate limit with Redis unreachable', () => {
  test('the server starts, /readyz is 503 naming the store, and the process still limits on its own', {
    timeout: 60_000,
  }, async () => {
    // Port 1 on loopback: nothing listens, every connection attempt is refused.
    const server = await startTestServer({ redisUrl: 'redis://127.0.0.1:1' });
    try {
      const ready = await server.call('GET', '/readyz', { key: null });
      expect(ready.status).toBe(503);
      expect(ready.body.code).toBe('service_unavailable');
      expect(ready.body.checks).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ name: 'database', status: 'ok' }),
          expect.objectContaining({ name: 'rate_limit_store', status: 'failing' }),
        ]),
      );
      const { secret } = await server.createKey('viewer');
      expectWholeBudget(await burst(LIMIT, () => ({ server, key: secret })));
      expectLimited(await server.call('GET', '/v1/workspace', { key: secret }));
    } finally {
      await server.close();
    }
  });
});

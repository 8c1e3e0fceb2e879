// A Redis outage while the server runs, and its recovery, with a redis-server of this test's own on a free loopback
// port (skipped when `redis-server` is not on the PATH; CI has it):
// - while Redis is down, /readyz is 503 naming the rate-limit store, and requests are still answered (this process
//   counts them on its own);
// - when Redis is back, /readyz is 200 again and requests are counted in Redis again: the budget all processes share;
// - a real-time editing session open when Redis goes away goes on: what the editor types meanwhile is saved.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { freePort } from '../support/prism.ts';
import { appendParagraph, connectEditor } from '../support/realtime.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const redisServerInstalled = spawnSync('redis-server', ['--version']).status === 0;

/** Polls `check` every 50 ms until it is true, at most `timeoutMs`. */
async function until(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

/** A redis-server on the port, without persistence (a restart starts empty); resolves when it accepts connections. */
async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  await until(() => accepts(port), `redis-server on port ${port}`);
  return child;
}

async function stopRedis(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

describe.skipIf(!redisServerInstalled)('a Redis outage while the server runs', () => {
  const prefix = `test:outage:${process.pid}:${Math.random().toString(36).slice(2)}`;
  let port: number;
  let redis: ChildProcess | undefined;
  let server: TestServer;

  beforeAll(async () => {
    port = await freePort();
    redis = await startRedis(port);
    server = await startTestServer({ redisUrl: `redis://127.0.0.1:${port}`, rateLimitKeyPrefix: prefix });
  });
  afterAll(async () => {
    await server?.close();
    await stopRedis(redis);
  });

  const readiness = async () => {
    const answer = await server.call('GET', '/readyz', { key: null });
    const store = (answer.body.checks as Array<{ name: string; status: string }>).find(
      (check) => check.name === 'rate_limit_store',
    );
    return { status: answer.status, store: store?.status };
  };
  const remaining = (header: string | null) => Number(/;r=(\d+);/.exec(header ?? '')?.[1]);

  test('the server stays up while Redis is down, and counts in Redis again once it is back', {
    timeout: 90_000,
  }, async () => {
    const { secret, id } = await server.createKey('viewer');
    expect(await readiness()).toEqual({ status: 200, store: 'ok' });
    const first = await server.call('GET', '/v1/workspace', { key: secret });
    expect(first.status).toBe(200);
    expect(remaining(first.headers.get('ratelimit'))).toBe(599);

    await stopRedis(redis);
    await until(async () => (await readiness()).status === 503, '/readyz to report the outage');
    expect(await readiness()).toEqual({ status: 503, store: 'failing' });
    for (let i = 0; i < 3; i++) {
      const during = await server.call('GET', '/v1/workspace', { key: secret });
      expect(during.status).toBe(200);
      expect(during.headers.get('ratelimit')).toMatch(/^"default";r=\d+;t=\d+$/);
    }

    // Back, and empty: what it counts from now on starts from a whole budget.
    redis = await startRedis(port);
    await until(async () => (await readiness()).status === 200, '/readyz to report the recovery');
    expect(await readiness()).toEqual({ status: 200, store: 'ok' });
    const after = await server.call('GET', '/v1/workspace', { key: secret });
    expect(after.status).toBe(200);
    expect(remaining(after.headers.get('ratelimit'))).toBe(599);
    const client = new Redis(`redis://127.0.0.1:${port}`);
    try {
      expect(await client.get(`${prefix}:${id}`)).toBe('1');
    } finally {
      client.disconnect();
    }
  });

  test('a real-time editing session open when Redis goes away goes on, and what is typed meanwhile is saved', {
    timeout: 90_000,
  }, async () => {
    if (!redis || redis.exitCode !== null || redis.signalCode !== null) redis = await startRedis(port);
    await until(async () => (await readiness()).status === 200, 'Redis to be reachable');
    const created = await server.call('POST', '/v1/documents', { body: { title: 'Outage', content: 'Before.' } });
    expect(created.status).toBe(201);
    const editor = connectEditor(server.url, created.body.id, created.body.edit_token.token);
    try {
      await editor.ready;
      await stopRedis(redis);
      await until(async () => (await readiness()).status === 503, '/readyz to report the outage');
      appendParagraph(editor.doc, 'Typed while Redis was away.');
      await until(async () => {
        const read = await server.call('GET', `/v1/documents/${created.body.id}`);
        return read.status === 200 && String(read.body.content).includes('Typed while Redis was away.');
      }, 'the typed line to be saved');
    } finally {
      editor.close();
    }
  });
});

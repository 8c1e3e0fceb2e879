// `npm start` as a newcomer meets it: src/main.ts in a child process on a fresh SQLite file prints a demo key and a
// curl command that work, seeds only once, stops cleanly on SIGTERM, and refuses a bad configuration clearly.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { get, type IncomingMessage } from 'node:http';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { COMMAND_LINE_FLAGS } from '../../src/platform/collector.ts';
import { openStorage } from '../../src/storage/database.ts';
import { freePort, projectRoot } from '../support/prism.ts';
import { databaseKinds, freshDatabase } from '../support/server.ts';

interface Started {
  child: ChildProcess;
  output: { stdout: string; stderr: string };
  exited: Promise<number | null>;
}

const children: ChildProcess[] = [];

function start(env: Record<string, string>): Started {
  const child = spawn(process.execPath, [...COMMAND_LINE_FLAGS, 'src/main.ts'], {
    cwd: projectRoot,
    // Only what a shell would pass: no NODE_ENV=test from vitest, no REDIS_URL or other settings of the test run.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const output = { stdout: '', stderr: '' };
  child.stdout!.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output, exited };
}

// Generous bounds: a loaded 2-core CI machine can take many seconds to start a Node process.
const TEST_TIMEOUT_MS = 150_000;

/** Waits, bounded, until `done` holds; fails with the process's output otherwise. */
async function waitFor<T>(
  started: Started,
  what: string,
  done: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await done();
    if (value) return value;
    if (started.child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(
    `${what} did not happen (exit code ${started.child.exitCode}):\n${started.output.stdout}\n${started.output.stderr}`,
  );
}

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url);
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

/** `count` GET requests one after another, each on a new connection; their statuses. */
async function getEach(url: string, secret: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    const response = await new Promise<IncomingMessage>((resolve, reject) =>
      get(url, { agent: false, headers: { Authorization: `Bearer ${secret}` } }, resolve).once('error', reject),
    );
    response.resume();
    await once(response, 'end');
    statuses.push(response.statusCode!);
  }
  return statuses;
}

async function stop(started: Started): Promise<number | null> {
  started.child.kill('SIGTERM');
  const timer = setTimeout(() => started.child.kill('SIGKILL'), 15_000);
  const code = await started.exited;
  clearTimeout(timer);
  return code;
}

async function workspaceCount(databaseUrl: string): Promise<number> {
  const storage = openStorage(databaseUrl);
  try {
    const { n } = await storage.db
      .selectFrom('workspaces')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(n);
  } finally {
    await storage.close();
  }
}

const CURL = /curl -s (http:\/\/\S+)\/v1\/workspace -H 'Authorization: Bearer (cs_live_[0-9A-Za-z]{40})'/;

describe('npm start (src/main.ts)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'content-service-main-'));
  });
  afterEach(() => {
    for (const child of children.splice(0))
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  test(
    'prints a demo key and a curl command that work, seeds only once, and exits 0 on SIGTERM',
    async () => {
      const databaseUrl = `sqlite:${join(dir, 'demo.db')}`;
      const port = String(await freePort());
      const first = start({ PORT: port, DATABASE_URL: databaseUrl });
      const [, baseUrl, secret] = await waitFor(
        first,
        'the demo key',
        () => CURL.exec(first.output.stdout) ?? undefined,
      );
      expect(first.output.stdout).toMatch(/Created the demo workspace ws_\w+ \(eu\) with an owner API key/);
      expect(baseUrl).toBe(`http://localhost:${port}`);

      // What the printed curl command does.
      const response = await fetch(`${baseUrl}/v1/workspace`, { headers: { Authorization: `Bearer ${secret}` } });
      expect(response.status).toBe(200);
      // The demo's owner key acts on behalf of its owner member.
      expect(await response.json()).toMatchObject({
        object: 'workspace',
        name: 'Demo workspace',
        region: 'eu',
        caller: { role: 'owner', user_id: expect.stringMatching(/^usr_/) },
      });
      // The printed chat completion answers at once on the sandbox model, with no provider key.
      const chatBody = /-d '(\{"model": "sandbox-writer".*\})'/.exec(first.output.stdout)?.[1];
      expect(chatBody, 'the printed chat completion').toBeDefined();
      const chat = await fetch(`${baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json' },
        body: chatBody,
      });
      expect(chat.status).toBe(200);
      expect(await chat.json()).toMatchObject({
        object: 'chat.completion',
        model: 'sandbox-writer',
        choices: [
          {
            message: {
              content:
                "Introducing our spring sale on coffee roasts!\n\nWe're excited to share it with you. Find every detail at [link], from [date].\n\nQuestions? Reply to this message: we'd love to hear what you think.",
            },
          },
        ],
      });
      expect(await stop(first)).toBe(0);
      expect(first.output.stderr).toBe('');

      // The second start finds the workspace and prints no new key; the first key still works.
      const second = start({ PORT: port, DATABASE_URL: databaseUrl });
      await waitFor(second, 'listening', () => answers(`http://127.0.0.1:${port}/healthz`));
      const again = await fetch(`http://127.0.0.1:${port}/v1/workspace`, {
        headers: { Authorization: `Bearer ${secret}` },
      });
      expect(again.status).toBe(200);
      expect(await stop(second)).toBe(0);
      expect(second.output.stdout).not.toContain('demo workspace');
      expect(second.output.stdout).not.toContain('cs_live_');
      expect(await workspaceCount(databaseUrl)).toBe(1);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'with NODE_ENV=production no demo workspace is created',
    async () => {
      const databaseUrl = `sqlite:${join(dir, 'production.db')}`;
      const port = String(await freePort());
      const started = start({ PORT: port, DATABASE_URL: databaseUrl, NODE_ENV: 'production' });
      await waitFor(started, 'listening', () => answers(`http://127.0.0.1:${port}/readyz`));
      expect(await stop(started)).toBe(0);
      expect(started.output.stdout).not.toContain('demo workspace');
      expect(started.output.stdout).not.toContain('cs_live_');
      expect(await workspaceCount(databaseUrl)).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'keeps what it compiled in the compile cache once ready, and starts as well where no cache can be written',
    async () => {
      const cache = join(dir, 'compile-cache');
      const port = String(await freePort());
      const databaseUrl = `sqlite:${join(dir, 'compile-cache.db')}`;
      const cached = start({ PORT: port, DATABASE_URL: databaseUrl, SEED_DEMO: 'false', NODE_COMPILE_CACHE: cache });
      await waitFor(cached, 'ready', () => answers(`http://127.0.0.1:${port}/readyz`));
      // Written once ready, not only at the exit a killed process never reaches.
      await waitFor(cached, 'the compile cache', () => readdirSync(cache, { recursive: true }).length > 100);
      expect(await stop(cached)).toBe(0);

      const file = join(dir, 'not-a-directory');
      writeFileSync(file, '');
      const uncached = start({ PORT: port, DATABASE_URL: databaseUrl, SEED_DEMO: 'false', NODE_COMPILE_CACHE: file });
      await waitFor(uncached, 'ready', () => answers(`http://127.0.0.1:${port}/readyz`));
      expect(await stop(uncached)).toBe(0);
      expect(uncached.output.stderr).toBe('');
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a port in use exits 1 with one line, before the database is opened',
    async () => {
      const holder = createServer().listen(0, '127.0.0.1');
      await once(holder, 'listening');
      const port = (holder.address() as AddressInfo).port;
      try {
        const databaseFile = join(dir, 'busy-port.db');
        const started = start({ PORT: String(port), DATABASE_URL: `sqlite:${databaseFile}` });
        const code = await Promise.race([
          started.exited,
          new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 60_000)),
        ]);
        expect(code).toBe(1);
        expect(started.output.stderr).toBe(`configuration: port ${port} is already in use\n`);
        expect(started.output.stdout).toBe('');
        expect(existsSync(databaseFile)).toBe(false);
      } finally {
        holder.close();
      }
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'with REUSE_PORT, several servers share one port: each serves some of the connections, one that stops leaves the others serving, and a server that does not share it is refused the port',
    async () => {
      const port = String(await freePort());
      const databaseUrl = `sqlite:${join(dir, 'shared-port.db')}`;
      const env = { PORT: port, DATABASE_URL: databaseUrl, REUSE_PORT: 'true', LOG_LEVEL: 'info' };
      const first = start(env);
      const [, , secret] = await waitFor(first, 'the demo key', () => CURL.exec(first.output.stdout) ?? undefined);
      await waitFor(first, 'ready', () => answers(`http://127.0.0.1:${port}/readyz`));
      const second = start({ ...env, SEED_DEMO: 'false' });
      await waitFor(second, 'ready', () => /"msg":"ready in/.test(second.output.stdout));

      // Each request on a connection of its own: the kernel picks a server per connection.
      const statuses = await getEach(`http://127.0.0.1:${port}/v1/workspace`, secret!, 40);
      expect(statuses.every((status) => status === 200)).toBe(true);
      const served = (started: Started) => started.output.stdout.match(/"path":"\/v1\/workspace"/g)?.length ?? 0;
      await waitFor(first, 'the access lines', () => served(first) + served(second) === 40);
      expect(served(first)).toBeGreaterThan(0);
      expect(served(second)).toBeGreaterThan(0);

      const unshared = start({ ...env, REUSE_PORT: 'false', SEED_DEMO: 'false' });
      expect(await unshared.exited).toBe(1);
      expect(unshared.output.stderr).toBe(`configuration: port ${port} is already in use\n`);

      expect(await stop(first)).toBe(0);
      const after = await getEach(`http://127.0.0.1:${port}/v1/workspace`, secret!, 10);
      expect(after.every((status) => status === 200)).toBe(true);
      expect(await stop(second)).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );

  test.each(databaseKinds)(
    'two servers started at once on a new %s database make one demo workspace, and one of them prints its key',
    async (kind) => {
      const database = await freshDatabase(kind);
      try {
        const env = { DATABASE_URL: database.url, LOG_LEVEL: 'debug' };
        const both = [
          start({ ...env, PORT: String(await freePort()) }),
          start({ ...env, PORT: String(await freePort()) }),
        ];
        // Each says what it did: the key of the workspace it made, or that it found one.
        for (const started of both)
          await waitFor(started, 'the seed', () => /cs_live_|no demo workspace made/.test(started.output.stdout));
        expect(both.filter((started) => started.output.stdout.includes('cs_live_')).length).toBe(1);
        for (const started of both) expect(await stop(started)).toBe(0);
        expect(await workspaceCount(database.url)).toBe(1);
      } finally {
        await database.drop();
      }
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'an unreachable database exits 1 with one line',
    async () => {
      // A port that was free a moment ago: nothing listens there.
      const closed = await freePort();
      const started = start({
        PORT: String(await freePort()),
        DATABASE_URL: `postgres://postgres@127.0.0.1:${closed}/test`,
        LOG_LEVEL: 'warn',
      });
      const code = await Promise.race([
        started.exited,
        new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 60_000)),
      ]);
      expect(code).toBe(1);
      expect(started.output.stderr).toBe(
        `database: cannot reach the database at postgres://postgres@127.0.0.1:${closed}/test: connect ECONNREFUSED 127.0.0.1:${closed}\n`,
      );
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'listens first: /healthz answers and /readyz is 503 while the start waits, a request sent meanwhile is served after, and the start prints what it did',
    async () => {
      // A Redis that accepts connections and never answers: the start waits for it (bounded), a wait the test can see.
      const sockets: Socket[] = [];
      const silentRedis = createServer((socket) => void sockets.push(socket)).listen(0, '127.0.0.1');
      await once(silentRedis, 'listening');
      const redisUrl = `redis://127.0.0.1:${(silentRedis.address() as AddressInfo).port}`;
      const port = String(await freePort());
      const base = `http://127.0.0.1:${port}`;
      const started = start({
        PORT: port,
        DATABASE_URL: `sqlite:${join(dir, 'listen-first.db')}`,
        REDIS_URL: redisUrl,
        SEED_DEMO: 'false',
      });
      try {
        const starting = await waitFor(started, 'the /readyz of a starting server', async () => {
          const response = await fetch(`${base}/readyz`).catch(() => undefined);
          return response ? { status: response.status, body: await response.json() } : undefined;
        });
        expect(starting.status).toBe(503);
        expect(starting.body).toMatchObject({
          code: 'service_unavailable',
          checks: [{ name: 'startup', status: 'failing' }],
        });
        const health = await fetch(`${base}/healthz`);
        expect(health.status).toBe(200);
        expect(await health.json()).toEqual({ status: 'ok' });
        // Held while the server starts, then answered by the API (here: no key, 401).
        const held = fetch(`${base}/v1/models`);
        silentRedis.close();
        for (const socket of sockets) socket.destroy();
        const answer = await held;
        expect(answer.status).toBe(401);
        await waitFor(started, 'the ready line', () => /"msg":"ready in \d+ ms"/.test(started.output.stdout));
        const messages = started.output.stdout
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as { msg: string; url?: string; applied?: string[] });
        const listening = messages.find((m) => m.msg.startsWith('listening at '));
        expect(listening?.url).toBe(base);
        const migrated = messages.find((m) => m.msg.startsWith('database migrated: '));
        expect(migrated?.applied?.length).toBeGreaterThan(0);
        expect(migrated?.url).toBe(`sqlite:${join(dir, 'listen-first.db')}`);
        const names = messages.map((m) => m.msg.replace(/\d+/g, 'N'));
        expect(names.indexOf('ready in N ms')).toBeGreaterThan(names.indexOf(migrated!.msg.replace(/\d+/g, 'N')));
        expect(await stop(started)).toBe(0);
      } finally {
        silentRedis.close();
      }
    },
    TEST_TIMEOUT_MS,
  );

  test(
    'a bad configuration exits 1 with a clear message',
    async () => {
      const started = start({ REGION: 'mars', DATABASE_URL: `sqlite:${join(dir, 'never.db')}` });
      const code = await Promise.race([
        started.exited,
        new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 60_000)),
      ]);
      expect(code).toBe(1);
      expect(started.output.stderr.trim()).toBe('configuration: REGION must be eu or us, got mars');
      expect(started.output.stdout).toBe('');
    },
    TEST_TIMEOUT_MS,
  );
});

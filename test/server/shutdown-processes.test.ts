// SIGTERM to a real server process (`src/main.ts`, as `npm start` runs it) on a SQLite file, while work is in flight:
// - drain: a webhook attempt whose receiver has not answered yet and a request whose body is still arriving both
//   finish after the signal and are recorded (the attempt, the request-log row); new connections are refused
//   meanwhile; the process exits 0 only when the request is done;
// - force-close: a request that is still running at SHUTDOWN_TIMEOUT_MS has its connection closed, and the process
//   exits 0;
// - streams longer than SHUTDOWN_TIMEOUT_MS end with an `event: error` (service_unavailable), not a reset; each call's
//   usage is recorded and its spend reservation released before the database closes; each stored thread exists from
//   the first chunk, which names it, and is removed when its stream ends without an answer.
// A request is "in flight" once the server answered its `Expect: 100-continue`: it has read the headers and waits for
// the body, which the test sends when it decides.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import { features } from '../../src/features/index.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { COMMAND_LINE_FLAGS } from '../../src/platform/collector.ts';
import { migrate, openStorage } from '../../src/storage/database.ts';
import { type FakeProvider, startFakeOpenAi } from '../support/fake-providers.ts';
import { freePort } from '../support/prism.ts';
import { holdingReceiver } from '../support/receiver.ts';
import { freshDatabase, type TestDatabase } from '../support/server.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => (socket.destroy(), resolve('connected')));
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
  });
}

/** Polls `check` every 50 ms until it is true, at most `timeoutMs`. */
async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface ServerProcess {
  child: ChildProcess;
  port: number;
  url: string;
  output: () => string;
  exited: Promise<number | null>;
}

async function startProcess(env: Record<string, string>): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [...COMMAND_LINE_FLAGS, MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      SEED_DEMO: 'false',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const server: ServerProcess = { child, port, url: `http://127.0.0.1:${port}`, output: () => output, exited };
  await until(
    async () => {
      if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}:\n${output}`);
      try {
        const response = await fetch(`${server.url}/readyz`);
        await response.arrayBuffer();
        return response.status === 200;
      } catch {
        return false;
      }
    },
    'the server to be ready',
    60_000,
  );
  return server;
}

/**
 * POST /v1/api-keys over a raw connection, with `Expect: 100-continue`: resolves `inFlight` when the server asked
 * for the body; `finish()` sends it. `answer` is the raw answer, or 'closed' when the connection ended without one.
 */
async function slowRequest(port: number, secret: string) {
  const body = JSON.stringify({ name: 'sent during the drain', role: 'viewer' });
  const socket: Socket = connect({ host: '127.0.0.1', port });
  await once(socket, 'connect');
  let received = '';
  let continued!: () => void;
  const inFlight = new Promise<void>((resolve) => (continued = resolve));
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString();
    if (received.startsWith('HTTP/1.1 100')) continued();
  });
  const answer = new Promise<string>((resolve) =>
    socket.once('close', () => resolve(received.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '') || 'closed')),
  );
  socket.on('error', () => {});
  socket.write(
    [
      'POST /v1/api-keys HTTP/1.1',
      `Host: 127.0.0.1:${port}`,
      `Authorization: Bearer ${secret}`,
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Expect: 100-continue',
      '',
      '',
    ].join('\r\n'),
  );
  return { inFlight, answer, finish: () => socket.write(body) };
}

describe('SIGTERM to a server process with work in flight', () => {
  let database: TestDatabase;
  let server: ServerProcess | undefined;

  async function prepare(): Promise<string> {
    database = await freshDatabase('sqlite');
    const storage = openStorage(database.url);
    try {
      await migrate(storage.db, features);
      return (
        await createWorkspace(storage.db, { name: 'Shutdown', region: 'eu', ownerEmail: 'owner@shutdown.example' })
      ).secret;
    } finally {
      await storage.close();
    }
  }

  afterEach(async () => {
    if (server && server.child.exitCode === null) server.child.kill('SIGKILL');
    server = undefined;
    await database?.drop();
  });

  test('drains: a request and a webhook attempt in flight finish, and what they did is written, before exit 0', {
    timeout: 90_000,
  }, async () => {
    const secret = await prepare();
    const receiver = await holdingReceiver();
    try {
      // A timeout far longer than the test: only the drain can end this shutdown.
      server = await startProcess({
        DATABASE_URL: database.url,
        WEBHOOKS_ALLOW_LOOPBACK: 'true',
        SHUTDOWN_TIMEOUT_MS: '600000',
      });
      const call = (method: string, path: string, body: unknown) =>
        fetch(server!.url + path, {
          method,
          headers: { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json' },
          body: JSON.stringify(body),
        });
      const endpoint = await call('POST', '/v1/webhooks/endpoints', {
        url: `${receiver.url}/hook`,
        event_types: ['workspace.member.added'],
      });
      expect(endpoint.status).toBe(201);
      const endpointId = ((await endpoint.json()) as { id: string }).id;
      expect((await call('POST', '/v1/members', { email: 'added@shutdown.example', role: 'viewer' })).status).toBe(201);
      await receiver.arrival;
      const request = await slowRequest(server.port, secret);
      await request.inFlight;

      server.child.kill('SIGTERM');
      await until(
        async () => (await tryConnect(server!.port)) === 'ECONNREFUSED',
        'the server to stop accepting connections',
      );
      expect(server.child.exitCode).toBeNull();

      const storage = openStorage(database.url);
      try {
        const delivery = () =>
          storage.db
            .selectFrom('webhook_deliveries')
            .select(['status', 'attempt_count'])
            .where('endpoint_id', '=', endpointId)
            .execute();
        // The attempt in flight is sent to its end and recorded during the drain.
        receiver.release();
        await until(async () => (await delivery())[0]?.status === 'delivered', 'the attempt to be recorded');
        expect(await delivery()).toEqual([{ status: 'delivered', attempt_count: 1 }]);
        // The request whose body is still coming holds the process.
        expect(server.child.exitCode).toBeNull();

        request.finish();
        const answer = await request.answer;
        expect(answer).toMatch(/^HTTP\/1\.1 201 /);
        // (`answer` resolved when the server closed the connection after answering: a draining server keeps none alive.)
        const requestId = /\r\nx-request-id: (\S+)\r\n/i.exec(answer)?.[1];
        expect(requestId).toBeDefined();
        expect(await server.exited, server.output()).toBe(0);
        // Its request-log row was written before the exit (rows are otherwise written every 200 ms).
        const logRow = await storage.db
          .selectFrom('request_log_entries')
          .select(['status', 'operation_id'])
          .where('id', '=', requestId!)
          .executeTakeFirst();
        expect(logRow).toEqual({ status: 201, operation_id: 'createApiKey' });
      } finally {
        await storage.close();
      }
    } finally {
      await receiver.close();
    }
  });

  test('force-closes: a request still running at SHUTDOWN_TIMEOUT_MS loses its connection, and the process exits 0', {
    timeout: 90_000,
  }, async () => {
    const secret = await prepare();
    server = await startProcess({ DATABASE_URL: database.url, SHUTDOWN_TIMEOUT_MS: '500' });
    const request = await slowRequest(server.port, secret);
    await request.inFlight;
    server.child.kill('SIGTERM');
    expect(await request.answer).toBe('closed');
    expect(await server.exited, server.output()).toBe(0);
    expect(server.output()).toContain('requests still running at the shutdown timeout');
  });

  test('ends streams still open at SHUTDOWN_TIMEOUT_MS with an event: error, then settles their calls before the database closes', {
    timeout: 90_000,
  }, async () => {
    const secret = await prepare();
    const upstream: FakeProvider = await startFakeOpenAi({ reply: () => ({ endless: true, chunkDelayMs: 20 }) });
    try {
      server = await startProcess({
        DATABASE_URL: database.url,
        SHUTDOWN_TIMEOUT_MS: '500',
        OPENAI_API_KEY: 'sk-test',
        OPENAI_BASE_URL: upstream.url,
        PROVIDER_MAX_RETRIES: '0',
      });
      const workspace = (await (
        await fetch(`${server.url}/v1/workspace`, { headers: { Authorization: `Bearer ${secret}` } })
      ).json()) as { id: string };
      const limit = await fetch(`${server.url}/v1/spend-limits`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ scope: { type: 'workspace', id: workspace.id }, amount_usd: 100, period: 'day' }),
      });
      expect(limit.status, await limit.text()).toBe(201);
      const streams = await Promise.all(
        Array.from({ length: 3 }, async (_, i) => {
          const response = await fetch(`${server!.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({
              model: 'gpt-4o-mini',
              stream: true,
              store: true,
              messages: [{ role: 'user', content: `Talk for a long time, ${i}.` }],
            }),
          });
          expect(response.status).toBe(200);
          const reader = response.body!.getReader();
          const decoder = new TextDecoder();
          let text = '';
          while (!text.includes('\n\n')) text += decoder.decode((await reader.read()).value);
          const threadId = JSON.parse(/^data: (.*)$/m.exec(text)![1]!).thread_id as string;
          const rest = (async () => {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) return text;
              text += decoder.decode(value);
            }
          })();
          return { threadId, rest };
        }),
      );
      // Named by the first chunk, each thread exists while its stream still runs.
      for (const stream of streams) {
        const thread = await fetch(`${server.url}/v1/chat/threads/${stream.threadId}`, {
          headers: { Authorization: `Bearer ${secret}` },
        });
        expect(thread.status, await thread.text()).toBe(200);
      }
      server.child.kill('SIGTERM');
      for (const stream of streams) {
        const text = await stream.rest;
        expect(text).not.toContain('[DONE]');
        const last = text.trim().split('\n\n').at(-1)!;
        expect(last.split('\n')[0]).toBe('event: error');
        expect(JSON.parse(last.split('\n')[1]!.slice('data: '.length))).toMatchObject({
          status: 503,
          code: 'service_unavailable',
          error: { type: 'server_error', code: 'service_unavailable' },
        });
      }
      expect(await server.exited, server.output()).toBe(0);
      expect(server.output()).not.toContain('driver has already been destroyed');

      const storage = openStorage(database.url);
      try {
        const threads = await storage.db
          .selectFrom('chat_threads')
          .select('id')
          .where(
            'id',
            'in',
            streams.map((stream) => stream.threadId),
          )
          .execute();
        // Named while their streams ran, the threads are gone with the answers they never got: nothing is saved of
        // a stream that did not end (a process killed outright would leave them empty).
        expect(threads).toHaveLength(0);
        const usage = await storage.db
          .selectFrom('usage_records')
          .select('model')
          .where('feature', '=', 'chat')
          .execute();
        expect(usage).toHaveLength(3);
        expect(await storage.db.selectFrom('spend_reservations').selectAll().execute()).toEqual([]);
      } finally {
        await storage.close();
      }
    } finally {
      await upstream.close();
    }
  });
});

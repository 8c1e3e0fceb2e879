// Webhook delivery across real processes (`src/main.ts` as `npm start` runs it, `src/worker.ts` as `npm run worker`):
// - two servers and one worker on one PostgreSQL database share the work of three endpoints, one of them failing
//   often: every endpoint gets every event, in order, and no attempt is sent twice;
// - kill -9 loses nothing: a delivery whose process died mid-attempt is leased again when its lease runs out and the
//   endpoint's queue goes on in order, on SQLite and PostgreSQL;
// - a server with WEBHOOKS_WORKER=false sends nothing; `npm run worker` beside it does, and stops on SIGTERM with 0.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { features } from '../../src/features/index.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { COMMAND_LINE_FLAGS } from '../../src/platform/collector.ts';
import { migrate, openStorage, type Storage } from '../../src/storage/database.ts';
import { freePort } from '../support/prism.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { type DatabaseKind, databaseKinds, freshDatabase, postgresUrl, type TestDatabase } from '../support/server.ts';
import type { Json } from '../support/spec.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const WORKER = fileURLToPath(new URL('../../src/worker.ts', import.meta.url));
/** A delivery whose worker died is leased again LEASE_MS (10 s) after its last renewal; the waits after a kill allow
 *  that and a restart, less than the 30 s a lease without renewal had to last. */
const AFTER_KILL_MS = 25_000;

// Every child of this file, so that a failing test leaves none running.
const children = new Set<ChildProcess>();
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

interface NodeProcess {
  child: ChildProcess;
  output: () => string;
}

interface ServerProcess extends NodeProcess {
  url: string;
}

function spawnNode(entry: string, env: Record<string, string>): NodeProcess {
  const child = spawn(process.execPath, [...(entry === MAIN ? COMMAND_LINE_FLAGS : []), entry], {
    env: { PATH: process.env.PATH ?? '', SEED_DEMO: 'false', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

/** A server process, once /readyz answers 200 (at most 30 s). */
async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const port = await freePort();
  const server = {
    ...spawnNode(MAIN, { HOST: '127.0.0.1', PORT: String(port), ...env }),
    url: `http://127.0.0.1:${port}`,
  };
  for (let i = 0; i < 300; i++) {
    if (server.child.exitCode !== null)
      throw new Error(`the server exited with ${server.child.exitCode}:\n${server.output()}`);
    try {
      const response = await fetch(`${server.url}/readyz`);
      await response.arrayBuffer();
      if (response.status === 200) return server;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`the server did not become ready:\n${server.output()}`);
}

function startWorkerProcess(env: Record<string, string>): NodeProcess {
  return spawnNode(WORKER, env);
}

/**
 * Sends SIGTERM and waits for the exit, at most `ms`; the exit code, 'timeout' (then the process is killed), or
 * 'exited before SIGTERM' (a worker that stops by itself is a bug, not a clean stop).
 */
async function terminate(running: NodeProcess, ms = 20_000): Promise<number | string | null> {
  if (running.child.exitCode !== null || running.child.signalCode !== null) return 'exited before SIGTERM';
  const exited = once(running.child, 'exit').then(([code]) => code as number | null);
  running.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    exited,
    new Promise<string>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms))),
  ]);
  clearTimeout(timer);
  if (outcome === 'timeout') running.child.kill('SIGKILL');
  return outcome;
}

async function killHard(running: NodeProcess): Promise<void> {
  const exited = once(running.child, 'exit');
  running.child.kill('SIGKILL');
  await exited;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `probe` every 100 ms until it returns something other than undefined; fails after `ms`. */
async function until<T>(
  what: () => string,
  ms: number,
  probe: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms: ${what()}`);
    await sleep(100);
  }
}

async function call(baseUrl: string, method: string, path: string, key: string, body?: unknown) {
  const response = await fetch(baseUrl + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** Every item of a listing, following next_cursor. */
async function listAll(baseUrl: string, path: string, key: string): Promise<Json[]> {
  const items: Json[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 50; page++) {
    const separator = path.includes('?') ? '&' : '?';
    const answer = await call(baseUrl, 'GET', `${path}${separator}limit=100${cursor ? `&cursor=${cursor}` : ''}`, key);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    items.push(...answer.body.data);
    cursor = answer.body.next_cursor;
    if (!cursor) return items;
  }
  throw new Error(`more than 50 pages at ${path}`);
}

async function addMember(baseUrl: string, key: string, n: number): Promise<void> {
  const answer = await call(baseUrl, 'POST', '/v1/members', key, {
    email: `member-${n}@processes.example`,
    role: 'viewer',
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
}

async function createEndpoint(baseUrl: string, key: string, receiverUrl: string): Promise<string> {
  const answer = await call(baseUrl, 'POST', '/v1/webhooks/endpoints', key, {
    url: `${receiverUrl}/hook`,
    event_types: ['workspace.member.added'],
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body.id;
}

interface Setup {
  database: TestDatabase;
  ownerKey: string;
  /** Kept open only when the test needs the database itself. */
  storage?: Storage;
}

/** A fresh database with a workspace and its owner key, made before any process starts. */
async function setUp(kind: DatabaseKind, keepStorage = false): Promise<Setup> {
  const database = await freshDatabase(kind);
  const storage = openStorage(database.url);
  try {
    await migrate(storage.db, features);
    const { secret } = await createWorkspace(storage.db, {
      name: 'Webhook processes',
      region: 'eu',
      ownerEmail: 'owner@processes.example',
    });
    if (keepStorage) return { database, ownerKey: secret, storage };
    return { database, ownerKey: secret };
  } finally {
    if (!keepStorage) await storage.close();
  }
}

async function tearDown(
  setup: Setup | undefined,
  processes: NodeProcess[],
  receivers: { close(): Promise<void> }[],
): Promise<void> {
  for (const running of processes)
    if (running.child.exitCode === null && running.child.signalCode === null) await killHard(running);
  for (const receiver of receivers) await receiver.close().catch(() => {});
  await setup?.storage?.close();
  await setup?.database.drop();
}

/** The event sequences of the requests, in arrival order. */
function sequences(receiver: Receiver): number[] {
  return receiver.requests.map((request) => request.body.sequence as number);
}

function oneToN(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i + 1);
}

/** A deterministic generator of numbers in [0, 1) (mulberry32): the same failures at every run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface TracedRequest {
  eventId: string;
  sequence: number;
  status: number;
  /** The pid of the process that opened the connection, among the processes watched. */
  sender: number | undefined;
}

interface TracingReceiver {
  url: string;
  requests: TracedRequest[];
  close(): Promise<void>;
}

/**
 * The pid, among `pids`, that holds the client end of a loopback TCP connection from `clientPort` to `serverPort`:
 * the socket's inode from /proc/net/tcp, then the process whose descriptors include that socket. Linux only.
 */
function connectionOwner(clientPort: number, serverPort: number, pids: number[]): number | undefined {
  const hex = (port: number) => port.toString(16).toUpperCase().padStart(4, '0');
  const line = readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .map((row) => row.trim().split(/\s+/))
    .find((fields) => fields[1]?.endsWith(`:${hex(clientPort)}`) && fields[2]?.endsWith(`:${hex(serverPort)}`));
  const inode = line?.[9];
  if (!inode) return undefined;
  for (const pid of pids) {
    let descriptors: string[];
    try {
      descriptors = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of descriptors) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`) return pid;
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}

/**
 * A receiver that records, for each request, which process sent it (the owner of the connection, looked up when the
 * connection is accepted, while it certainly exists), and answers each request with the status `status()` gives.
 */
async function startTracingReceiver(status: () => number, pids: () => number[]): Promise<TracingReceiver> {
  const requests: TracedRequest[] = [];
  const owners = new WeakMap<Socket, number | undefined>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const answer = status();
      requests.push({ eventId: body.id, sequence: body.sequence, status: answer, sender: owners.get(req.socket) });
      res.writeHead(answer, { 'Content-Type': 'text/plain' }).end();
    });
  });
  server.on('connection', (socket: Socket) =>
    owners.set(socket, connectionOwner(socket.remotePort!, socket.localPort!, pids())),
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

describe.skipIf(!postgresUrl)('two servers and one worker on one PostgreSQL database', () => {
  test('share the work: every endpoint gets every event in order, and no attempt is sent twice', {
    timeout: 120_000,
  }, async () => {
    const EVENTS = 60;
    const setup = await setUp('postgres', true);
    const processes: NodeProcess[] = [];
    const receivers: TracingReceiver[] = [];
    let fastForward: NodeJS.Timeout | undefined;
    try {
      const env = { DATABASE_URL: setup.database.url, WEBHOOKS_ALLOW_LOOPBACK: 'true' };
      const [a, b] = await Promise.all([startServerProcess(env), startServerProcess(env)]);
      processes.push(a!, b!);
      processes.push(startWorkerProcess(env));
      const pids = () => processes.map((running) => running.child.pid!);

      const flaky = seeded(20_261_120);
      receivers.push(
        await startTracingReceiver(() => 200, pids),
        await startTracingReceiver(() => 204, pids),
        // About 30 % of its requests fail: retries, and the queue behind a failing head, are shared work too.
        await startTracingReceiver(() => (flaky() < 0.3 ? 500 : 200), pids),
      );
      const endpointIds: string[] = [];
      for (const receiver of receivers) endpointIds.push(await createEndpoint(a!.url, setup.ownerKey, receiver.url));

      // The clock of the retries: a failed head is due 10 s later (schedule.ts); the test makes it due at once, as
      // a ManualClock advanced by the wait would, so 60 events with ~25 failures end in seconds. Only heads have a
      // next_attempt_at, and only unleased ones are touched, so neither the order nor a lease is affected.
      const makeRetriesDue = async () => {
        const now = new Date().toISOString();
        await setup
          .storage!.db.updateTable('webhook_deliveries')
          .set({ next_attempt_at: now })
          .where('status', '=', 'pending')
          .where('next_attempt_at', '>', now)
          .where((eb) => eb.or([eb('leased_until', 'is', null), eb('leased_until', '<=', now)]))
          .execute();
      };
      const tick = () => {
        fastForward = setTimeout(() => void makeRetriesDue().finally(() => fastForward && tick()), 100);
      };
      tick();

      // Events through both servers at once, ten at a time.
      for (let start = 0; start < EVENTS; start += 10) {
        await Promise.all(
          Array.from({ length: 10 }, (_, i) => addMember((start + i) % 2 ? b!.url : a!.url, setup.ownerKey, start + i)),
        );
      }
      const events = await listAll(a!.url, '/v1/events', setup.ownerKey);
      expect(events.map((event) => event.sequence).sort((x, y) => x - y)).toEqual(oneToN(EVENTS));
      const eventIdBySequence = new Map(events.map((event) => [event.sequence as number, event.id as string]));

      const succeeded = (receiver: TracingReceiver) => receiver.requests.filter((request) => request.status < 300);
      await until(
        () =>
          `deliveries left: ${receivers.map((r) => succeeded(r).length).join(', ')} of ${EVENTS} each\n${processes.map((running) => running.output()).join('\n')}`,
        60_000,
        async () => {
          if (receivers.some((receiver) => succeeded(receiver).length < EVENTS)) return undefined;
          const pending = await call(b!.url, 'GET', '/v1/webhooks/deliveries?status=pending&limit=1', setup.ownerKey);
          expect(pending.status).toBe(200);
          return pending.body.data.length === 0 ? true : undefined;
        },
      );
      clearTimeout(fastForward);
      fastForward = undefined;

      const failures = receivers[2]!.requests.filter((request) => request.status === 500).length;
      expect(failures, 'the flaky receiver failed some requests').toBeGreaterThanOrEqual(10);
      let attemptsRecorded = 0;
      for (const [index, receiver] of receivers.entries()) {
        // (a) Order: the successful requests are the events in sequence order, each once.
        expect(succeeded(receiver).map((request) => request.sequence)).toEqual(oneToN(EVENTS));
        expect(succeeded(receiver).map((request) => request.eventId)).toEqual(
          oneToN(EVENTS).map((s) => eventIdBySequence.get(s)),
        );
        // (b) No request, retries included, goes back to an earlier event.
        const arrival = receiver.requests.map((request) => request.sequence);
        expect(arrival).toEqual([...arrival].sort((x, y) => x - y));
        // (c) What the receiver saw is exactly what was recorded: one request per attempt, with the same answers.
        const deliveries = await listAll(
          a!.url,
          `/v1/webhooks/deliveries?endpoint_id=${endpointIds[index]}`,
          setup.ownerKey,
        );
        expect(deliveries).toHaveLength(EVENTS);
        for (const [n, summary] of deliveries.entries()) {
          const detail = await call(
            n % 2 ? b!.url : a!.url,
            'GET',
            `/v1/webhooks/deliveries/${summary.id}`,
            setup.ownerKey,
          );
          expect(detail.status).toBe(200);
          expect(detail.body.status).toBe('delivered');
          const seen = receiver.requests
            .filter((request) => request.eventId === detail.body.event_id)
            .map((request) => request.status);
          expect(seen).toHaveLength(detail.body.attempt_count);
          expect(
            detail.body.attempts.map(
              (attempt: components['schemas']['WebhookDeliveryAttempt']) => attempt.response_status_code,
            ),
          ).toEqual(seen);
          attemptsRecorded += detail.body.attempt_count;
        }
      }
      expect(attemptsRecorded).toBe(receivers.reduce((total, receiver) => total + receiver.requests.length, 0));
      expect(attemptsRecorded).toBe(3 * EVENTS + failures);

      // (d) Shared: every request came from one of the three processes, and at least two of them sent some.
      const senders = receivers.flatMap((receiver) => receiver.requests.map((request) => request.sender));
      expect(senders.filter((sender) => sender === undefined)).toEqual([]);
      expect(new Set(senders).size).toBeGreaterThanOrEqual(2);

      const codes = await Promise.all(processes.map((running) => terminate(running)));
      expect(codes, processes.map((running) => running.output()).join('\n')).toEqual([0, 0, 0]);
    } finally {
      clearTimeout(fastForward);
      fastForward = undefined;
      await tearDown(setup, processes, receivers);
    }
  });
});

// The cases wait for a lease to run out and do little meanwhile: they run at the same time.
describe.concurrent('kill -9 of the process that is sending', () => {
  test.for(databaseKinds)(
    '%s: a living worker keeps the lease of an attempt longer than LEASE_MS: it is sent once',
    { timeout: 120_000 },
    async (kind, { expect }) => {
      const setup = await setUp(kind);
      const processes: NodeProcess[] = [];
      const receiver = await startReceiver();
      try {
        const env = { DATABASE_URL: setup.database.url, WEBHOOKS_ALLOW_LOOPBACK: 'true' };
        receiver.respond = () => ({ status: 200, delayMs: 13_000 });
        const server = await startServerProcess(env);
        processes.push(server, startWorkerProcess(env));
        const endpointId = await createEndpoint(server.url, setup.ownerKey, receiver.url);
        await addMember(server.url, setup.ownerKey, 1);
        const delivered = await until(
          () => server.output(),
          30_000,
          async () => {
            const all = await listAll(server.url, `/v1/webhooks/deliveries?endpoint_id=${endpointId}`, setup.ownerKey);
            return all.length === 1 && all[0]!.status === 'delivered' ? all : undefined;
          },
        );
        expect(delivered.map((delivery) => delivery.attempt_count)).toEqual([1]);
        expect(sequences(receiver)).toEqual([1]);
      } finally {
        await tearDown(setup, processes, [receiver]);
      }
    },
  );

  test.for(databaseKinds)(
    '%s: the attempt in flight is sent again after its lease, then the queue goes on in order',
    { timeout: 120_000 },
    async (kind, { expect }) => {
      const setup = await setUp(kind);
      const processes: NodeProcess[] = [];
      const receiver = await startReceiver();
      try {
        const env = { DATABASE_URL: setup.database.url, WEBHOOKS_ALLOW_LOOPBACK: 'true' };
        receiver.respond = () => ({ status: 200, hang: true });
        const first = await startServerProcess(env);
        processes.push(first);
        const endpointId = await createEndpoint(first.url, setup.ownerKey, receiver.url);
        for (let n = 0; n < 5; n++) await addMember(first.url, setup.ownerKey, n);
        await receiver.waitFor(1, 10_000);
        await killHard(first);
        expect(sequences(receiver)).toEqual([1]);

        receiver.respond = () => ({ status: 200 });
        const second = await startServerProcess(env);
        processes.push(second);
        await receiver.waitFor(6, AFTER_KILL_MS);
        const deliveries = await until(
          () => second.output(),
          10_000,
          async () => {
            const all = await listAll(second.url, `/v1/webhooks/deliveries?endpoint_id=${endpointId}`, setup.ownerKey);
            return all.every((delivery) => delivery.status === 'delivered') ? all : undefined;
          },
        );
        // The first event twice (the attempt the kill cut short, and its re-send), then the others once, in order.
        expect(sequences(receiver)).toEqual([1, 1, 2, 3, 4, 5]);
        expect(receiver.requests[0]!.body.id).toBe(receiver.requests[1]!.body.id);
        expect(deliveries).toHaveLength(5);
        // The attempt cut short left no record: the re-send is the first attempt recorded.
        expect(deliveries.map((delivery) => delivery.attempt_count)).toEqual([1, 1, 1, 1, 1]);
        expect(await terminate(second)).toBe(0);
      } finally {
        await tearDown(setup, processes, [receiver]);
      }
    },
  );

  test.for(databaseKinds)(
    '%s: killed with many deliveries pending, all of them arrive after a restart, in order',
    { timeout: 120_000 },
    async (kind, { expect }) => {
      const EVENTS = 30;
      const setup = await setUp(kind);
      const processes: NodeProcess[] = [];
      const receiver = await startReceiver();
      try {
        const env = { DATABASE_URL: setup.database.url, WEBHOOKS_ALLOW_LOOPBACK: 'true' };
        receiver.respond = () => ({ status: 200, delayMs: 50 });
        const first = await startServerProcess(env);
        processes.push(first);
        const endpointId = await createEndpoint(first.url, setup.ownerKey, receiver.url);
        await Promise.all(Array.from({ length: EVENTS }, (_, n) => addMember(first.url, setup.ownerKey, n)));
        await receiver.waitFor(5, 10_000);
        await killHard(first);
        const beforeKill = receiver.requests.length;
        expect(beforeKill, 'the kill came before the end of the queue').toBeLessThan(EVENTS);

        const second = await startServerProcess(env);
        processes.push(second);
        await until(
          () => `${new Set(sequences(receiver)).size} of ${EVENTS} events arrived\n${second.output()}`,
          AFTER_KILL_MS,
          () => (new Set(sequences(receiver)).size === EVENTS ? true : undefined),
        );
        const deliveries = await until(
          () => second.output(),
          10_000,
          async () => {
            const all = await listAll(second.url, `/v1/webhooks/deliveries?endpoint_id=${endpointId}`, setup.ownerKey);
            return all.every((delivery) => delivery.status === 'delivered') ? all : undefined;
          },
        );
        expect(deliveries).toHaveLength(EVENTS);
        const arrival = sequences(receiver);
        expect(arrival).toEqual([...arrival].sort((x, y) => x - y));
        expect([...new Set(arrival)]).toEqual(oneToN(EVENTS));
        // At-least-once, and no more than that: only the attempt the kill cut short can arrive twice.
        expect(arrival.length - EVENTS).toBeLessThanOrEqual(1);
        expect(deliveries.map((delivery) => delivery.attempt_count)).toEqual(Array(EVENTS).fill(1));
        expect(await terminate(second)).toBe(0);
      } finally {
        await tearDown(setup, processes, [receiver]);
      }
    },
  );
});

describe.each(databaseKinds)('npm run worker as the only worker, on %s', (kind) => {
  test('a server with WEBHOOKS_WORKER=false sends nothing; the worker process does, and stops on SIGTERM with 0', {
    timeout: 60_000,
  }, async () => {
    const setup = await setUp(kind);
    const processes: NodeProcess[] = [];
    const receiver = await startReceiver();
    try {
      const env = { DATABASE_URL: setup.database.url, WEBHOOKS_ALLOW_LOOPBACK: 'true' };
      const server = await startServerProcess({ ...env, WEBHOOKS_WORKER: 'false' });
      processes.push(server);
      const endpointId = await createEndpoint(server.url, setup.ownerKey, receiver.url);
      await addMember(server.url, setup.ownerKey, 1);
      await sleep(1000);
      expect(receiver.requests).toHaveLength(0);
      const waiting = await listAll(server.url, `/v1/webhooks/deliveries?endpoint_id=${endpointId}`, setup.ownerKey);
      expect(waiting.map((delivery) => [delivery.status, delivery.attempt_count])).toEqual([['pending', 0]]);

      const worker = startWorkerProcess(env);
      processes.push(worker);
      await receiver.waitFor(1, 15_000);
      // Once running, it sends what the server records next: woken by pg_notify on PostgreSQL, by its poll on SQLite.
      await addMember(server.url, setup.ownerKey, 2);
      await receiver.waitFor(2, 10_000);
      expect(sequences(receiver)).toEqual([1, 2]);
      const delivered = await until(
        () => worker.output(),
        10_000,
        async () => {
          const all = await listAll(server.url, `/v1/webhooks/deliveries?endpoint_id=${endpointId}`, setup.ownerKey);
          return all.every((delivery) => delivery.status === 'delivered') ? all : undefined;
        },
      );
      expect(delivered).toHaveLength(2);

      expect(await terminate(worker), worker.output()).toBe(0);
      expect(await terminate(server), server.output()).toBe(0);
    } finally {
      await tearDown(setup, processes, [receiver]);
    }
  });
});

// `npm run bench:faults`: the chaos benchmark. Not part of `npm test`. Three servers (`src/main.ts`,
// WEBHOOKS_WORKER=false) and one worker (`src/worker.ts`) on a fresh PostgreSQL database and Redis, as the README's
// production layout runs them, under a mixed load; faults are injected one after the other while the load runs, each
// followed by its recovery:
//   1. kill -9 of the server the typist's editor is connected to (then started again);
//   2. kill -9 of the worker (then started again);
//   3. every database connection of the service's database ended (pg_terminate_backend from an admin connection);
//   4. SIGTERM of a server while streams longer than its SHUTDOWN_TIMEOUT_MS run on it (then started again).
//
// The load, paced at BENCH_RATE operations a second over the servers in rotation (a server the benchmark killed or
// stopped is out of the rotation until it is ready again, as behind a load balancer that has noticed; what was in
// flight on it fails): project creation (201), sandbox chat completions with `store: true` (a thread), GET
// /v1/workspace, and runs of a one-step workflow (202, a `generate` step on `sandbox-writer`); beside it BENCH_STREAMS
// streamed completions at a time on `gpt-4o-mini` through a fake OpenAI upstream in this process
// (test/support/fake-providers.ts, a chunk every 20 ms), also with `store: true`. One editor (the typist) appends a
// paragraph of one word every BENCH_WORD_INTERVAL_MS to a document through the first server; a second editor (the
// watcher) follows it through the second. A webhook endpoint subscribed to `*` points at a receiver in this process
// (test/support/receiver.ts) that checks every signature.
//
// Measured per fault, over the time from its injection to the next one (the first row is the load before any
// fault; what comes after the last fault counts for the last):
//   - requests that failed, by kind: 503, other statuses ≥ 500, network errors (a refused or reset connection, a
//     timeout), and other refusals (4xx);
//   - acknowledged writes lost: every project (201), stored thread (200 with `thread_id`, and each `[DONE]`-ended
//     stream's thread) and workflow run (202) acknowledged in the window, read back at the end (must be 0); threads
//     announced by the first chunk of a stream that did not end with `[DONE]` are read back too, counted apart (a
//     stream that ends with an error removes its thread; one cut by a killed process leaves it, empty);
//   - events lost or duplicated: every event of GET /v1/events (all pages) against the receiver's, after waiting
//     (bounded) for delivery to finish; attributed by the event's `created`;
//   - words lost: the words the watcher had seen just before the injection, missing from GET /v1/documents/{id}
//     (through a server without an editor of the document) once the service is whole again (must be 0); and at the
//     end, every word the watcher ever saw against the document read after both editors closed;
//   - processes that exited without being told to (must be 0), with the last lines of their output;
//   - workflow runs not ended after a bounded wait at the end;
//   - streams that ended without `[DONE]` and without an `event: error`: a bare reset (expected of a kill -9, not of a
//     SIGTERM);
//   - the time from the injection until the service is whole again: what was killed is started again and ready (a
//     server answers /readyz 200; the worker has logged that its workers run), every server answers /readyz 200, and
//     a POST /v1/projects succeeds through each.
//
// Settings: BENCH_ROUNDS (1; each round a fresh database and processes), BENCH_WARMUP (s of load before the first
// fault, 5), BENCH_SETTLE (s of load after the service is whole again, before the next fault, 5), BENCH_RATE (load
// operations a second, 10), BENCH_STREAMS (streams at a time, 2), BENCH_LONG_STREAMS (endless streams opened on the
// server before its SIGTERM, 4), BENCH_SHUTDOWN_TIMEOUT_MS (the servers' SHUTDOWN_TIMEOUT_MS, 3000),
// BENCH_WORD_INTERVAL_MS (50), BENCH_TIMEOUT (s, the bound of every wait: a restart, delivery, runs ending; 60),
// BENCH_FAULTS (server,worker,database,sigterm), BENCH_LOG_LEVEL (the servers' LOG_LEVEL, warn),
// BENCH_POSTGRES_URL, BENCH_REDIS_URL (redis://127.0.0.1:6379). Every process's output goes to
// bench/results/faults-<time>/, beside the table (faults-<time>.md).
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { verifyWebhook } from '../generated/webhooks.ts';
import { COMMAND_LINE_FLAGS } from '../src/platform/collector.ts';
import { type FakeProvider, startFakeOpenAi } from '../test/support/fake-providers.ts';
import { appendParagraph, connectEditor, type Editor } from '../test/support/realtime.ts';
import { type Receiver, startReceiver } from '../test/support/receiver.ts';
import { freshPostgresDatabase, POSTGRES_URL } from './postgres.ts';
import { children, cleanUp, cleanups, freePort, positive, root, seedWorkspace } from './support.ts';

const ROUNDS = Math.round(positive('BENCH_ROUNDS', 1));
const WARMUP_S = positive('BENCH_WARMUP', 5, true);
const SETTLE_S = positive('BENCH_SETTLE', 5, true);
const RATE = positive('BENCH_RATE', 10);
const STREAMS = Math.round(positive('BENCH_STREAMS', 2, true));
const LONG_STREAMS = Math.round(positive('BENCH_LONG_STREAMS', 4));
const SHUTDOWN_TIMEOUT_MS = Math.round(positive('BENCH_SHUTDOWN_TIMEOUT_MS', 3000));
const WORD_INTERVAL_MS = positive('BENCH_WORD_INTERVAL_MS', 50);
const TIMEOUT_MS = positive('BENCH_TIMEOUT', 60) * 1000;
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL || 'warn';
const REDIS_URL = process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379';
/** The servers' METRICS_TOKEN: their pool gauges are read once the load has stopped. */
const METRICS_TOKEN = 'chaos-benchmark-metrics-token';
const FAULT_KINDS = ['server', 'worker', 'database', 'sigterm'] as const;
type FaultKind = (typeof FAULT_KINDS)[number];
const FAULTS = (process.env.BENCH_FAULTS ?? FAULT_KINDS.join(','))
  .split(',')
  .map((fault) => fault.trim())
  .filter(Boolean)
  .map((fault) => {
    if (!(FAULT_KINDS as readonly string[]).includes(fault))
      throw new Error(`BENCH_FAULTS: unknown fault ${fault} (known: ${FAULT_KINDS.join(', ')})`);
    return fault as FaultKind;
  });
const FAULT_NAMES: Record<FaultKind, string> = {
  server: "kill -9 of the typist's server",
  worker: 'kill -9 of the worker',
  database: 'every database connection ended',
  sigterm: 'SIGTERM of a server with streams longer than its timeout',
};
/** The line a worker logs once its workers run. */
const WORKER_STARTED = 'background workers running';
/** Load operations in flight at most; an operation due beyond it is skipped (and counted). */
const MAX_IN_FLIGHT = 64;
/** The bound of one ordinary request (a stream has none: it ends or fails). */
const REQUEST_TIMEOUT_MS = 30_000;
/** Keys the load rotates over, so that none nears 600 requests a minute. */
const KEYS = 16;
/** Words of a load stream: about a second at the fake's 20 ms a chunk. */
const STREAM_TEXT = Array.from({ length: 50 }, (_, i) => `roast${i}`).join(' ');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------------- processes

interface Proc {
  name: string;
  kind: 'server' | 'worker';
  script: string;
  env: Record<string, string>;
  port: number;
  url: string;
  child?: ChildProcess;
  /** Set by the benchmark before it kills or stops the process: its exit is then expected. */
  told: boolean;
  /** In the load's rotation (a server that is ready and not being stopped). */
  routable: boolean;
  /** The end of the current incarnation's output, for the report of an unplanned exit. */
  output: string;
  /** The worker's current incarnation has logged that its workers run. */
  started: boolean;
  log: WriteStream;
  starts: number;
  exited?: Promise<void>;
}

interface UnplannedExit {
  at: number;
  name: string;
  code: number | null;
  signal: string | null;
  tail: string;
}

interface ToldExit {
  at: number;
  name: string;
  code: number | null;
  signal: string | null;
}

// ---------------------------------------------------------------------------------------------------- records

type Outcome = 'ok' | '503' | '5xx' | 'network' | '4xx';

interface RequestRecord {
  at: number;
  outcome: Outcome;
  what: string;
}

interface Ack {
  at: number;
  kind: 'project' | 'thread' | 'run' | 'stream thread' | 'announced thread';
  id: string;
  server: string;
}

interface StreamRecord {
  at: number;
  server: string;
  /** `timeout`: this benchmark gave up on it (REQUEST_TIMEOUT_MS), which says nothing of how the server ends streams. */
  end: 'done' | 'error event' | 'bare' | 'timeout';
  long: boolean;
  detail: string;
}

interface Phase {
  name: string;
  start: number;
  /** Injection to whole again, ms; undefined for the load before the faults. */
  wholeMs?: number;
  /** Words the watcher had seen at the injection, missing from the document read once whole. */
  wordsLost?: number;
  wordsSeen?: number;
  notes: string[];
}

interface RoundResult {
  round: number;
  loadBefore: number;
  phases: Phase[];
  requests: RequestRecord[];
  acks: Ack[];
  lostAcks: Ack[];
  streams: StreamRecord[];
  unplanned: UnplannedExit[];
  told: ToldExit[];
  events: { id: string; created: number; type: string }[];
  receipts: Map<string, number>;
  badSignatures: number;
  runsNotEnded: Ack[];
  runsFailed: number;
  finalWordsSeen: number;
  finalWordsLost: string[];
  skipped: number;
  /** Per server, its database pool once the load has stopped: a connection still in use there was not given back. */
  pools: string[];
  failures: string[];
  logDir: string;
}

// ---------------------------------------------------------------------------------------------------- one round

async function round(index: number, logDir: string): Promise<RoundResult> {
  const loadBefore = loadavg()[0]!;
  const database = await freshPostgresDatabase('cs_bench_faults');
  if (!database) throw new Error(`PostgreSQL at ${POSTGRES_URL} does not answer: this benchmark needs it`);
  cleanups.push(() => database.drop());
  const databaseName = new URL(database.url).pathname.slice(1);
  const secrets = await seedWorkspace(database.url, KEYS, 'admin');
  let nextKey = 0;
  const key = () => secrets[nextKey++ % secrets.length]!;

  const fake: FakeProvider = await startFakeOpenAi({
    reply: (body: { messages?: Array<{ content?: unknown }> }) =>
      String(body.messages?.at(-1)?.content ?? '').includes('endless')
        ? { endless: true, chunkDelayMs: 20 }
        : { text: STREAM_TEXT, chunkDelayMs: 20 },
  });
  cleanups.push(() => fake.close());

  const result: RoundResult = {
    round: index,
    loadBefore,
    phases: [],
    requests: [],
    acks: [],
    lostAcks: [],
    streams: [],
    unplanned: [],
    told: [],
    events: [],
    receipts: new Map(),
    badSignatures: 0,
    runsNotEnded: [],
    runsFailed: 0,
    finalWordsSeen: 0,
    finalWordsLost: [],
    skipped: 0,
    pools: [],
    failures: [],
    logDir,
  };
  const failure = (line: string) => {
    if (result.failures.length < 60) result.failures.push(line);
  };

  // ------------------------------------------------------------------------------------------------ processes
  const common = {
    DATABASE_URL: database.url,
    REDIS_URL,
    WEBHOOKS_ALLOW_LOOPBACK: 'true',
    SEED_DEMO: 'false',
    HOST: '127.0.0.1',
    OPENAI_API_KEY: 'sk-test',
    OPENAI_BASE_URL: fake.url,
  };
  const procs: Proc[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    procs.push({
      name: `server ${i + 1}`,
      kind: 'server',
      script: 'src/main.ts',
      env: {
        ...common,
        PORT: String(port),
        PUBLIC_BASE_URL: url,
        WEBHOOKS_WORKER: 'false',
        SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
        METRICS_TOKEN,
        LOG_LEVEL,
      },
      port,
      url,
      told: false,
      routable: false,
      output: '',
      started: false,
      log: createWriteStream(join(logDir, `round${index}-server${i + 1}.log`)),
      starts: 0,
    });
  }
  // The worker's start is read from its `background workers running` line, an info line.
  const worker: Proc = {
    name: 'worker',
    kind: 'worker',
    script: 'src/worker.ts',
    env: { ...common, LOG_LEVEL: 'info' },
    port: 0,
    url: '',
    told: false,
    routable: false,
    output: '',
    started: false,
    log: createWriteStream(join(logDir, `round${index}-worker.log`)),
    starts: 0,
  };
  procs.push(worker);
  const servers = procs.filter((proc) => proc.kind === 'server');
  cleanups.push(async () => {
    for (const proc of procs) proc.log.end();
  });

  const spawnProc = (proc: Proc) => {
    proc.starts += 1;
    proc.told = false;
    proc.output = '';
    proc.started = false;
    proc.log.write(`\n===== start ${proc.starts} at ${new Date().toISOString()}\n`);
    const child = spawn(process.execPath, [...(proc.kind === 'server' ? COMMAND_LINE_FLAGS : []), proc.script], {
      cwd: root,
      env: { ...process.env, ...proc.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    proc.child = child;
    const onData = (chunk: Buffer) => {
      proc.log.write(chunk);
      // Searched at every chunk in the end of the output, so that a line split between two chunks is found too.
      proc.output = (proc.output + chunk.toString()).slice(-20_000);
      if (!proc.started && proc.output.includes(WORKER_STARTED)) proc.started = true;
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    proc.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        children.delete(child);
        proc.routable = false;
        proc.log.write(`===== exit ${code ?? signal} at ${new Date().toISOString()}\n`);
        if (proc.told) result.told.push({ at: Date.now(), name: proc.name, code, signal });
        else {
          result.unplanned.push({ at: Date.now(), name: proc.name, code, signal, tail: proc.output.slice(-3000) });
          process.stderr.write(`  UNPLANNED EXIT of ${proc.name} (${code ?? signal})\n${proc.output.slice(-3000)}\n`);
        }
        resolve();
      }),
    );
  };

  const alive = (proc: Proc) => proc.child !== undefined && proc.child.exitCode === null && !proc.child.signalCode;

  /** Polls until the process answers as ready (bounded); a server then joins the rotation. */
  const whenReady = async (proc: Proc) => {
    const deadline = Date.now() + TIMEOUT_MS + 60_000;
    for (;;) {
      if (!alive(proc)) throw new Error(`${proc.name} exited before it was ready:\n${proc.output.slice(-3000)}`);
      if (proc.kind === 'worker') {
        if (proc.started) return;
      } else if ((await readyz(proc)) === 200) {
        proc.routable = true;
        return;
      }
      if (Date.now() > deadline) throw new Error(`${proc.name} was not ready in time:\n${proc.output.slice(-3000)}`);
      await sleep(100);
    }
  };

  const readyz = async (proc: Proc): Promise<number> => {
    try {
      const response = await fetch(`${proc.url}/readyz`, { signal: AbortSignal.timeout(5000) });
      await response.arrayBuffer();
      return response.status;
    } catch {
      return 0;
    }
  };

  const startAndWait = async (proc: Proc) => {
    spawnProc(proc);
    await whenReady(proc);
  };

  process.stderr.write(`  round ${index}: starting 3 servers and a worker on ${databaseName}\n`);
  await Promise.all(servers.map(startAndWait));
  await startAndWait(worker);

  // ------------------------------------------------------------------------------------------------ requests
  const phaseAt = (at: number) => {
    let name = result.phases[0]?.name ?? 'setup';
    for (const phase of result.phases) if (at >= phase.start) name = phase.name;
    return name;
  };

  let turn = 0;
  const pickServer = (): Proc | undefined => {
    const live = servers.filter((server) => server.routable);
    return live.length ? live[turn++ % live.length] : undefined;
  };

  interface Answer {
    status: number;
    // biome-ignore lint/suspicious/noExplicitAny: answers of several operations, read field by field
    body: any;
  }

  /** One request, recorded by outcome; undefined on a network error. */
  const request = async (
    server: Proc,
    method: string,
    path: string,
    body?: unknown,
    record = true,
  ): Promise<Answer | undefined> => {
    const what = `${method} ${path} on ${server.name}`;
    try {
      const response = await fetch(server.url + path, {
        method,
        headers: {
          Authorization: `Bearer ${key()}`,
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = text;
      }
      const status = response.status;
      if (record) {
        const outcome: Outcome =
          status < 400 ? 'ok' : status === 503 ? '503' : status >= 500 ? '5xx' : ('4xx' as const);
        result.requests.push({ at: Date.now(), outcome, what });
        if (outcome !== 'ok')
          failure(
            `${new Date().toISOString()} [${phaseAt(Date.now())}] ${what}: ${status} ${text.slice(0, 300)}` +
              (response.headers.get('retry-after') ? ` (Retry-After ${response.headers.get('retry-after')})` : ''),
          );
      }
      return { status, body: parsed };
    } catch (error) {
      if (record) {
        result.requests.push({ at: Date.now(), outcome: 'network', what });
        failure(`${new Date().toISOString()} [${phaseAt(Date.now())}] ${what}: ${describe(error)}`);
      }
      return undefined;
    }
  };

  // ------------------------------------------------------------------------------------------------ setup
  const first = servers[0]!;
  const endpointSecrets: string[] = [];
  const receiver: Receiver = await startReceiver();
  cleanups.push(() => receiver.close());
  receiver.respond = (received) => {
    try {
      const event = verifyWebhook(received.rawBody, received.headers, endpointSecrets);
      result.receipts.set(event.id, (result.receipts.get(event.id) ?? 0) + 1);
    } catch (error) {
      result.badSignatures += 1;
      failure(`receiver: a delivery failed verification: ${describe(error)}`);
    }
    return { status: 204 };
  };
  const setupCall = async (server: Proc, method: string, path: string, body: unknown, status: number) => {
    const answer = await request(server, method, path, body, false);
    if (answer?.status !== status)
      throw new Error(`${method} ${path}: ${answer?.status ?? 'network error'} ${JSON.stringify(answer?.body)}`);
    return answer.body;
  };
  const endpoint = await setupCall(
    first,
    'POST',
    '/v1/webhooks/endpoints',
    {
      url: `${receiver.url}/hook`,
      event_types: ['*'],
      description: 'Chaos benchmark receiver',
    },
    201,
  );
  endpointSecrets.push(endpoint.secret);
  const workflow = await setupCall(
    first,
    'POST',
    '/v1/workflows',
    {
      name: 'Chaos benchmark',
      steps: [{ id: 'draft', type: 'generate', model: 'sandbox-writer', prompt: 'Announce the spring roast.' }],
    },
    201,
  );
  const document = await setupCall(
    first,
    'POST',
    '/v1/documents',
    {
      title: 'Typed during faults',
      content: 'The typist writes below.',
    },
    201,
  );

  // ------------------------------------------------------------------------------------------------ editors
  // The typist on the first server, the watcher on the second; the third has no editor of the document, so that a
  // read through it is the saved state, not a live copy.
  const typistServer = servers[0]!;
  const watcherServer = servers[1]!;
  const readerServer = servers[2]!;
  const editors: { typist?: Editor; watcher?: Editor } = {};
  let typed = 0;
  const openEditor = async (server: Proc): Promise<Editor> => {
    const token = await setupCall(server, 'POST', `/v1/documents/${document.id}/edit-token`, {}, 201);
    const editor = connectEditor(server.url, document.id, token.token);
    const scope = await Promise.race([editor.ready, sleep(TIMEOUT_MS).then(() => 'timeout')]);
    if (scope !== 'read-write') {
      editor.close();
      throw new Error(`an editor on ${server.name} was not synced: ${scope}`);
    }
    return editor;
  };
  editors.typist = await openEditor(typistServer);
  editors.watcher = await openEditor(watcherServer);
  let editorsOpen = true;
  let typistConnected = true;
  void editors.typist.closed.then(() => (typistConnected = false));
  const typingTimer = setInterval(() => {
    if (!typistConnected || !editors.typist) return;
    appendParagraph(editors.typist.doc, `typed${typed++}`);
  }, WORD_INTERVAL_MS);
  cleanups.push(async () => {
    clearInterval(typingTimer);
    editors.typist?.close();
    editors.watcher?.close();
  });
  const reconnectEditors = async () => {
    if (!editorsOpen) return;
    if (!typistConnected && typistServer.routable) {
      editors.typist?.close();
      editors.typist = await openEditor(typistServer);
      typistConnected = true;
      void editors.typist.closed.then(() => (typistConnected = false));
    }
  };
  const wordsIn = (text: string) => new Set(text.match(/\btyped\d+\b/g) ?? []);
  let watcherSeen = new Set<string>();
  const watcherWords = () => {
    const words = wordsIn(editors.watcher?.text() ?? '');
    for (const word of words) watcherSeen.add(word);
    return words;
  };
  const documentWords = async (server: Proc) => {
    const answer = await request(server, 'GET', `/v1/documents/${document.id}`, undefined, false);
    return answer?.status === 200 ? wordsIn(String(answer.body.content)) : undefined;
  };
  /**
   * The words of `seen` missing from the document read through `server`, polled until none is (bounded); undefined
   * when no read succeeded.
   */
  const missingWords = async (seen: Set<string>, server: Proc, boundMs: number): Promise<string[] | undefined> => {
    const deadline = Date.now() + boundMs;
    let missing: string[] | undefined;
    for (;;) {
      const words = await documentWords(server);
      if (words) missing = [...seen].filter((word) => !words.has(word));
      if (missing?.length === 0 || Date.now() > deadline) return missing;
      await sleep(250);
    }
  };

  // ------------------------------------------------------------------------------------------------ the load
  let loading = true;
  let inFlight = 0;
  let op = 0;
  const operation = async () => {
    const n = op++;
    const server = pickServer();
    if (!server) return;
    const kind = n % 4;
    if (kind === 0) {
      const answer = await request(server, 'POST', '/v1/projects', { name: `Chaos ${index}-${n}` });
      if (answer?.status === 201)
        result.acks.push({ at: Date.now(), kind: 'project', id: answer.body.id, server: server.name });
    } else if (kind === 1) {
      const answer = await request(server, 'POST', '/v1/chat/completions', {
        model: 'sandbox-writer',
        store: true,
        messages: [{ role: 'user', content: `Write a line about roast number ${n}.` }],
      });
      if (answer?.status === 200 && answer.body.thread_id)
        result.acks.push({ at: Date.now(), kind: 'thread', id: answer.body.thread_id, server: server.name });
    } else if (kind === 2) {
      await request(server, 'GET', '/v1/workspace');
    } else {
      const answer = await request(server, 'POST', `/v1/workflows/${workflow.id}/runs`, { inputs: {} });
      if (answer?.status === 202)
        result.acks.push({ at: Date.now(), kind: 'run', id: answer.body.id, server: server.name });
    }
  };
  const pacer = (async () => {
    const started = Date.now();
    for (let n = 0; loading; n++) {
      const wait = started + (n * 1000) / RATE - Date.now();
      if (wait > 0) await sleep(wait);
      if (!loading) break;
      if (inFlight >= MAX_IN_FLIGHT) {
        result.skipped += 1;
        continue;
      }
      inFlight += 1;
      void operation().finally(() => (inFlight -= 1));
    }
  })();

  /** One streamed completion through `server`, read to its end and classified. */
  const stream = async (server: Proc, long: boolean): Promise<void> => {
    const what = `stream on ${server.name}`;
    let response: Response;
    try {
      response = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key()}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          model: 'gpt-4o-mini',
          stream: true,
          store: true,
          messages: [{ role: 'user', content: long ? 'An endless answer, please.' : 'A short answer, please.' }],
        }),
        // Long streams end at the server's shutdown deadline; this bound only keeps a hung one from holding the run.
        signal: AbortSignal.timeout(long ? SHUTDOWN_TIMEOUT_MS + TIMEOUT_MS : REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      result.requests.push({ at: Date.now(), outcome: 'network', what });
      failure(`${new Date().toISOString()} [${phaseAt(Date.now())}] ${what}: ${describe(error)}`);
      return;
    }
    if (response.status !== 200) {
      const text = await response.text().catch(() => '');
      const status = response.status;
      result.requests.push({
        at: Date.now(),
        outcome: status === 503 ? '503' : status >= 500 ? '5xx' : '4xx',
        what,
      });
      failure(`${new Date().toISOString()} [${phaseAt(Date.now())}] ${what}: ${status} ${text.slice(0, 300)}`);
      return;
    }
    let buffer = '';
    let done = false;
    let errorEvent = '';
    let errorStatus = 0;
    let threadId: string | undefined;
    let detail = '';
    let timedOut = false;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf('\n\n');
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (/^event: error$/m.test(frame)) {
            errorEvent = frame.slice(0, 300);
            try {
              errorStatus = Number(JSON.parse(data ?? '').status) || 0;
            } catch {
              // a problem without a readable status
            }
          }
          if (data === '[DONE]') done = true;
          else if (data && threadId === undefined && !errorEvent) {
            try {
              threadId = JSON.parse(data).thread_id ?? undefined;
            } catch {
              // not a chunk
            }
          }
        }
      }
    } catch (error) {
      detail = describe(error);
      timedOut = (error as Error).name === 'TimeoutError';
    }
    const at = Date.now();
    const endKind = done ? 'done' : errorEvent ? 'error event' : timedOut ? 'timeout' : 'bare';
    result.streams.push({ at, server: server.name, end: endKind, long, detail: detail || errorEvent });
    // A stream that ended any other way than [DONE] failed as a request, however it ended.
    const outcome: Outcome = done
      ? 'ok'
      : !errorEvent
        ? 'network'
        : errorStatus === 503
          ? '503'
          : errorStatus >= 500 || errorStatus === 0
            ? '5xx'
            : '4xx';
    result.requests.push({ at, outcome, what });
    if (!done)
      failure(
        `${new Date(at).toISOString()} [${phaseAt(at)}] ${what}${long ? ' (long)' : ''}: ended ${endKind === 'bare' ? `without [DONE] or an error event (${detail || 'end of body'})` : `with ${errorEvent.replace(/\n/g, ' ')}`}`,
      );
    if (threadId)
      result.acks.push({ at, kind: done ? 'stream thread' : 'announced thread', id: threadId, server: server.name });
  };
  const streamers = Array.from({ length: STREAMS }, async () => {
    while (loading) {
      const server = pickServer();
      if (!server) {
        await sleep(100);
        continue;
      }
      await stream(server, false);
    }
  });

  // ------------------------------------------------------------------------------------------------ faults
  /** From an injection: every server ready and a write through each, the worker ready; ms, or NaN if not in time. */
  const whole = async (since: number): Promise<number> => {
    const deadline = since + TIMEOUT_MS;
    while (Date.now() < deadline) {
      for (const proc of procs) if (!alive(proc)) spawnProc(proc);
      const statuses = await Promise.all(servers.map(readyz));
      const workerUp = worker.started;
      if (statuses.every((status) => status === 200) && workerUp) {
        let written = 0;
        for (const server of servers) {
          server.routable = true;
          const answer = await request(server, 'POST', '/v1/projects', { name: `Whole ${index}-${op++}` }, false);
          if (answer?.status === 201) {
            written += 1;
            result.acks.push({ at: Date.now(), kind: 'project', id: answer.body.id, server: server.name });
          }
        }
        if (written === servers.length) return Date.now() - since;
      }
      await sleep(100);
    }
    return Number.NaN;
  };

  const beginPhase = (name: string): Phase => {
    const phase: Phase = { name, start: Date.now(), notes: [] };
    result.phases.push(phase);
    return phase;
  };

  beginPhase('none (load only)');
  process.stderr.write(`  round ${index}: load running, ${WARMUP_S} s before the first fault\n`);
  await sleep(WARMUP_S * 1000);

  for (const fault of FAULTS) {
    watcherWords();
    const seenAtInjection = new Set(watcherSeen);
    const phase = beginPhase(FAULT_NAMES[fault]);
    phase.wordsSeen = seenAtInjection.size;
    process.stderr.write(`  round ${index}: ${FAULT_NAMES[fault]}\n`);
    if (fault === 'server') {
      typistServer.routable = false;
      typistServer.told = true;
      typistServer.child!.kill('SIGKILL');
      await typistServer.exited;
      spawnProc(typistServer);
    } else if (fault === 'worker') {
      worker.told = true;
      worker.child!.kill('SIGKILL');
      await worker.exited;
      spawnProc(worker);
    } else if (fault === 'database') {
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      try {
        const ended = await admin.query(
          'select pg_terminate_backend(pid) as ended from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
          [databaseName],
        );
        phase.notes.push(`${ended.rowCount} connections ended`);
      } finally {
        await admin.end();
      }
    } else {
      // The reader's server: no editor is on it, so the streams are what the deadline ends.
      const target = readerServer;
      const endless = () => fake.requests.filter((asked) => JSON.stringify(asked.body).includes('endless')).length;
      const askedBefore = endless();
      const opened: Promise<void>[] = [];
      const before = result.streams.length;
      for (let i = 0; i < LONG_STREAMS; i++) opened.push(stream(target, true));
      // Each long stream has asked the upstream for its answer, so each is running on the server.
      const deadline = Date.now() + TIMEOUT_MS;
      while (endless() < askedBefore + LONG_STREAMS && Date.now() < deadline) await sleep(50);
      await sleep(500);
      target.routable = false;
      target.told = true;
      const signalled = Date.now();
      target.child!.kill('SIGTERM');
      await Promise.race([target.exited, sleep(SHUTDOWN_TIMEOUT_MS + TIMEOUT_MS)]);
      const exit = result.told.at(-1);
      phase.notes.push(
        `exited ${exit?.name === target.name ? `with ${exit.code ?? exit.signal}` : 'not in time'} ${((Date.now() - signalled) / 1000).toFixed(1)} s after SIGTERM`,
      );
      await Promise.all(opened);
      const long = result.streams.slice(before).filter((record) => record.long);
      phase.notes.push(
        `long streams: ${long.filter((s) => s.end === 'error event').length} ended with an error event, ` +
          `${long.filter((s) => s.end === 'done').length} with [DONE], ${long.filter((s) => s.end === 'bare').length} bare`,
      );
      if (alive(target)) {
        target.child!.kill('SIGKILL');
        await target.exited;
      }
      spawnProc(target);
    }
    phase.wholeMs = await whole(phase.start);
    await reconnectEditors().catch((error: unknown) => phase.notes.push(`typist not reconnected: ${describe(error)}`));
    const missing = await missingWords(seenAtInjection, readerServer, 10_000);
    phase.wordsLost = missing?.length;
    if (!missing) phase.notes.push(`the document could not be read through ${readerServer.name} within 10 s`);
    else if (missing.length)
      phase.notes.push(`words missing: ${missing.slice(0, 20).join(' ')}${missing.length > 20 ? ' …' : ''}`);
    process.stderr.write(
      `    whole again after ${(phase.wholeMs / 1000).toFixed(1)} s; ${missing?.length ?? 'unread'} of ${seenAtInjection.size} words seen missing\n`,
    );
    await sleep(SETTLE_S * 1000);
  }

  // ------------------------------------------------------------------------------------------------ the end
  loading = false;
  await pacer;
  await Promise.all(streamers);
  const stopped = Date.now();
  while (inFlight > 0 && Date.now() - stopped < REQUEST_TIMEOUT_MS + 5000) await sleep(50);
  clearInterval(typingTimer);
  await sleep(500);
  for (const server of servers) {
    try {
      const response = await fetch(`${server.url}/metrics`, {
        headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await response.text();
      const gauge = (state: string) =>
        new RegExp(`^content_service_db_pool_connections\\{state="${state}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? '?';
      result.pools.push(
        `${server.name}: ${gauge('in_use')} in use, ${gauge('idle')} idle, ${gauge('waiting')} waiting`,
      );
    } catch (error) {
      result.pools.push(`${server.name}: unreadable (${describe(error)})`);
    }
  }
  watcherWords();
  editorsOpen = false;
  editors.typist?.close();
  editors.watcher?.close();
  result.finalWordsSeen = watcherSeen.size;
  // Past the save bound of the processes that held the document.
  await sleep(2000);
  const live = () => servers.filter((server) => server.routable);
  // Through the server that had no editor of the document: what it reads is what was saved.
  const finalReader = readerServer.routable ? readerServer : (live()[0] ?? readerServer);
  const finalMissing = await missingWords(watcherSeen, finalReader, 30_000);
  if (!finalMissing) throw new Error('the document could not be read at the end');
  result.finalWordsLost = finalMissing;
  watcherSeen = new Set();

  // Runs: a bounded wait for every acknowledged run to end.
  process.stderr.write(`  round ${index}: waiting for runs and deliveries\n`);
  const runs = result.acks.filter((ack) => ack.kind === 'run');
  const ended = new Map<string, string>();
  const runsDeadline = Date.now() + TIMEOUT_MS;
  while (Date.now() < runsDeadline) {
    const open = runs.filter((run) => !ended.has(run.id));
    if (open.length === 0) break;
    const list = await pages(live()[0]!, `/v1/workflows/${workflow.id}/runs`, key);
    for (const run of list) if (['success', 'failure', 'cancelled'].includes(run.status)) ended.set(run.id, run.status);
    if (runs.every((run) => ended.has(run.id))) break;
    await sleep(1000);
  }
  result.runsNotEnded = runs.filter((run) => !ended.has(run.id));
  result.runsFailed = runs.filter((run) => ended.get(run.id) === 'failure').length;

  // Events: every listed event received, bounded.
  const eventsDeadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const listed = await pages(live()[0]!, '/v1/events', key);
    result.events = listed.map((event) => ({ id: event.id, created: Date.parse(event.created), type: event.type }));
    if (result.events.every((event) => result.receipts.has(event.id)) || Date.now() > eventsDeadline) break;
    await sleep(1000);
  }
  // A last moment for a duplicate still on its way.
  await sleep(1000);

  // Acknowledged writes read back.
  const readBack = async (ack: Ack): Promise<void> => {
    const path =
      ack.kind === 'project'
        ? `/v1/projects/${ack.id}`
        : ack.kind === 'run'
          ? `/v1/workflows/${workflow.id}/runs/${ack.id}`
          : `/v1/chat/threads/${ack.id}`;
    for (let attempt = 0; attempt < 5; attempt++) {
      const answer = await request(live()[attempt % live().length]!, 'GET', path, undefined, false);
      if (answer?.status === 200) return;
      if (answer?.status === 404) break;
      await sleep(200);
    }
    result.lostAcks.push(ack);
  };
  const queue = [...result.acks];
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let ack = queue.shift(); ack; ack = queue.shift()) await readBack(ack);
    }),
  );

  // Every process stopped as told; an exit other than 0 is noted.
  for (const proc of procs) {
    if (!alive(proc)) continue;
    proc.told = true;
    proc.routable = false;
    proc.child!.kill('SIGTERM');
    await Promise.race([proc.exited, sleep(SHUTDOWN_TIMEOUT_MS + 20_000)]);
  }
  return result;
}

/** Every item of a paged collection (`limit` 100, following `next_cursor`), bounded to 200 pages. */
// biome-ignore lint/suspicious/noExplicitAny: items of several collections, read field by field
async function pages(server: Proc, path: string, key: () => string): Promise<any[]> {
  // biome-ignore lint/suspicious/noExplicitAny: as above
  const items: any[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 200; page++) {
    const url = `${server.url}${path}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const response = await fetch(url, {
      headers: { Authorization: `Bearer ${key()}` },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`);
    const body = (await response.json()) as { data: unknown[]; next_cursor: string | null };
    items.push(...body.data);
    cursor = body.next_cursor;
    if (!cursor) break;
  }
  return items;
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return `${error.name}: ${error.message}${cause ? ` (${cause.code ?? ''} ${cause.message ?? ''})` : ''}`;
}

// ---------------------------------------------------------------------------------------------------- report

function rows(result: RoundResult): string[][] {
  const { phases } = result;
  const phaseIndex = (at: number) => {
    let found = -1;
    for (const [i, phase] of phases.entries()) if (at >= phase.start) found = i;
    return Math.max(found, 0);
  };
  const per = <T extends { at: number }>(items: T[], i: number) => items.filter((item) => phaseIndex(item.at) === i);
  return phases.map((phase, i) => {
    const requests = per(result.requests, i);
    const count = (outcome: Outcome) => requests.filter((r) => r.outcome === outcome).length;
    const events = result.events.filter((event) => phaseIndex(event.created) === i);
    const lost = events.filter((event) => !result.receipts.has(event.id)).length;
    const duplicated = events.reduce((sum, event) => sum + Math.max(0, (result.receipts.get(event.id) ?? 0) - 1), 0);
    const acks = per(result.acks, i).filter((ack) => ack.kind !== 'announced thread');
    const lostAcks = per(result.lostAcks, i);
    const announced = per(result.acks, i).filter((ack) => ack.kind === 'announced thread');
    const streams = per(result.streams, i);
    return [
      phase.name,
      String(requests.length),
      String(count('5xx')),
      String(count('503')),
      String(count('network')),
      String(count('4xx')),
      `${lostAcks.filter((ack) => ack.kind !== 'announced thread').length} of ${acks.length}`,
      `${lostAcks.filter((ack) => ack.kind === 'announced thread').length} of ${announced.length}`,
      `${lost} / ${duplicated} of ${events.length}`,
      phase.wordsSeen === undefined
        ? '–'
        : phase.wordsLost === undefined
          ? 'unread'
          : `${phase.wordsLost} of ${phase.wordsSeen}`,
      String(per(result.unplanned, i).length),
      String(per(result.runsNotEnded, i).length),
      `${streams.filter((s) => s.end === 'bare').length} of ${streams.length}`,
      phase.wholeMs === undefined
        ? '–'
        : Number.isNaN(phase.wholeMs)
          ? 'not in time'
          : (phase.wholeMs / 1000).toFixed(1),
    ];
  });
}

function table(results: RoundResult[]): string {
  const header = [
    ...(results.length > 1 ? ['round'] : []),
    'fault',
    'requests',
    '≥ 500 (not 503)',
    '503',
    'network errors',
    '4xx',
    'acknowledged writes lost',
    'announced stream threads missing',
    'events lost / duplicated',
    'words lost',
    'unplanned exits',
    'runs not ended',
    'bare stream resets',
    'whole again (s)',
  ];
  const body = results.flatMap((result) =>
    rows(result).map((row) => [...(results.length > 1 ? [String(result.round)] : []), ...row]),
  );
  const numericFrom = results.length > 1 ? 2 : 1;
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map((_, i) => (i >= numericFrom ? '--:' : '---')).join('|')}|`,
    ...body.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------------- main

async function main(): Promise<void> {
  const startedAt = new Date();
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const resultsDir = join(root, 'bench', 'results');
  const logDir = join(resultsDir, `faults-${stamp}`);
  mkdirSync(logDir, { recursive: true });
  process.once('SIGINT', () => void cleanUp().finally(() => process.exit(130)));
  const loadBefore = loadavg()[0]!;
  process.stderr.write(
    `chaos benchmark: 3 servers and a worker on PostgreSQL and Redis, faults ${FAULTS.join(', ')}, ` +
      `${cpus().length} CPUs, load average ${loadBefore.toFixed(2)}\n`,
  );
  const results: RoundResult[] = [];
  try {
    for (let r = 1; r <= ROUNDS; r++) {
      results.push(await round(r, logDir));
      await cleanUp();
    }
  } finally {
    await cleanUp();
  }

  const details: string[] = [];
  for (const result of results) {
    const prefix = results.length > 1 ? `round ${result.round}: ` : '';
    const totalAcks = result.acks.filter((ack) => ack.kind !== 'announced thread');
    const byKind = (kind: Ack['kind']) => totalAcks.filter((ack) => ack.kind === kind).length;
    const streams = result.streams;
    details.push(
      `${prefix}load average ${result.loadBefore.toFixed(2)} before; ${result.requests.length} requests, ` +
        `${totalAcks.length} acknowledged writes (${byKind('project')} projects, ${byKind('thread')} threads, ` +
        `${byKind('run')} workflow runs, ${byKind('stream thread')} threads of streams ended with [DONE]); ` +
        `${result.events.length} events, ${result.badSignatures} deliveries with a bad signature; ` +
        `${streams.length} streams: ${streams.filter((s) => s.end === 'done').length} [DONE], ` +
        `${streams.filter((s) => s.end === 'error event').length} error event, ${streams.filter((s) => s.end === 'bare').length} bare, ` +
        `${streams.filter((s) => s.end === 'timeout').length} given up by this benchmark after ${REQUEST_TIMEOUT_MS / 1000} s; ` +
        `${result.runsFailed} workflow runs ended failure; ${result.skipped} load operations skipped (over ${MAX_IN_FLIGHT} in flight).`,
    );
    details.push(`${prefix}database pools once the load had stopped: ${result.pools.join('; ')}.`);
    details.push(
      `${prefix}at the end, ${result.finalWordsLost.length} of the ${result.finalWordsSeen} words the watcher saw were missing from the document.`,
    );
    for (const phase of result.phases)
      if (phase.notes.length) details.push(`${prefix}${phase.name}: ${phase.notes.join('; ')}.`);
    for (const exit of result.told)
      if (exit.code !== 0 && exit.signal !== 'SIGKILL')
        details.push(`${prefix}${exit.name} exited with ${exit.code ?? exit.signal} when told to stop.`);
    for (const exit of result.unplanned)
      details.push(
        `${prefix}UNPLANNED EXIT of ${exit.name} (${exit.code ?? exit.signal}); its last output:\n\n\`\`\`\n${exit.tail}\n\`\`\``,
      );
    for (const ack of result.lostAcks)
      details.push(
        `${prefix}not found at the end: ${ack.kind} ${ack.id} (acknowledged by ${ack.server} at ${new Date(ack.at).toISOString()})`,
      );
    for (const run of result.runsNotEnded.slice(0, 10)) details.push(`${prefix}run not ended: ${run.id}`);
    for (const bare of result.streams.filter((record) => record.end === 'bare'))
      details.push(
        `${prefix}bare end of a stream on ${bare.server}${bare.long ? ' (long)' : ''} at ${new Date(bare.at).toISOString()}: ${bare.detail || 'end of body'}`,
      );
  }
  const failures = results.flatMap((result) => result.failures);
  const markdown = [
    `# Chaos benchmark, ${startedAt.toISOString()}`,
    '',
    `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, load average ${loadBefore.toFixed(2)} before and ${loadavg()[0]!.toFixed(2)} after. ` +
      `${RATE} operations/s, ${STREAMS} streams at a time, a word every ${WORD_INTERVAL_MS} ms; SHUTDOWN_TIMEOUT_MS ${SHUTDOWN_TIMEOUT_MS}, ` +
      `${LONG_STREAMS} endless streams on the server given SIGTERM; ${WARMUP_S} s of load before the faults, ${SETTLE_S} s after each recovery.`,
    '',
    table(results),
    '',
    ...details.map((line) => `- ${line}`),
    '',
    ...(failures.length ? ['Failed requests (the first of each round):', '', '```', ...failures, '```', ''] : []),
    `Process output: ${logDir.slice(root.length + 1)}/`,
    '',
  ].join('\n');
  process.stdout.write(`\n${markdown}`);
  const file = join(resultsDir, `faults-${stamp}.md`);
  writeFileSync(file, markdown);
  process.stdout.write(`Written to ${file.slice(root.length + 1)}\n`);
}

// The Redis the benchmark needs must answer before anything starts.
async function redisAnswers(): Promise<boolean> {
  const { hostname, port } = new URL(REDIS_URL);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) || 6379, timeout: 1000 });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

if (!(await redisAnswers())) {
  process.stderr.write(`Redis at ${REDIS_URL} does not answer: this benchmark needs it\n`);
  process.exit(1);
}
main().then(
  () => process.exit(0),
  async (error: unknown) => {
    process.stderr.write(`benchmark failed: ${(error as Error).stack ?? String(error)}\n`);
    await cleanUp();
    process.exit(1);
  },
);

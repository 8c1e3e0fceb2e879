// `npm run bench:start`: how long the server takes to start, and what the first calls after a start cost. Not part of
// `npm test`. Each round, in fresh processes:
//
// - a bare Node HTTP server (`node -e`, answering every request 200): the floor of a process that listens;
// - the Portkey gateway (`@portkey-ai/gateway`, where installed), a peer that listens and needs no database;
// - the server as `npm start` runs it (src/main.ts; SQLite; SEED_DEMO=false, LOG_LEVEL=warn, WEBHOOKS_ALLOW_LOOPBACK
//   for the fixtures' webhook URLs) on a new database file, then again on that database (migrated, one workspace);
//   the time from the spawn to its first answer (of any status) and to `GET /readyz` 200, its CPU time by then, and
//   its RSS once ready, idle;
//   before them, once more on a new database with an empty compile cache of its own (a machine's first start);
// - on the second start, every implemented operation called twice with the contract suite's success request
//   (bench/operations.ts): the first and the second request of each operation are timed, fixtures' requests included;
// - the server on a port in use, and on a PostgreSQL URL that nothing answers: from spawn to its exit in one line;
// - `node src/cli.ts help` and `npm run -s cli -- help` from spawn to exit, beside `node -e 0`.
//
// BENCH_ROUNDS (3) rounds; the report gives medians and the spread (min–max) over the rounds, and goes to
// bench/results/start-<time>.md. BENCH_SERVER_ENV adds variables to the server (`LOG_LEVEL=info`).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { OperationId } from '../generated/operations.ts';
import { COMMAND_LINE_FLAGS } from '../src/platform/collector.ts';
import { callOnce, median, operations, SESSION_OPERATIONS, signIn, timings } from './operations.ts';
import {
  children,
  cleanUp,
  cleanups,
  cpuMicros,
  freePort,
  ownerSignInLinks,
  PORTKEY_SERVER,
  portkeyArguments,
  positive,
  root,
  rssMegabytes,
  seedWorkspace,
  smtpSink,
  stopChild,
} from './support.ts';

const ROUNDS = positive('BENCH_ROUNDS', 3);
const NODE = join(root, 'node_modules/.bin/node');
/** How often a starting process is asked whether it answers. */
const POLL_MS = 10;
/** How long a start may take (a loaded machine takes minutes). */
const START_TIMEOUT_MS = 300_000;
/** How long a process that is ready is left idle before its memory is read. */
const IDLE_MS = 1000;
const serverEnv = Object.fromEntries(
  (process.env.BENCH_SERVER_ENV ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
);

interface Started {
  /** From the spawn to the first HTTP answer of any status. */
  listeningMs: number;
  /** From the spawn to the first 2xx of the ready path. */
  readyMs: number;
  /** The process's CPU time (user and system) by then: steadier than the time on a machine shared with other work. */
  readyCpuMs: number;
  pid: number;
  stop(): Promise<void>;
}

/** Spawns a process and times it until it answers `readyPath` with a 2xx (bounded). */
async function timeStart(
  command: string,
  args: string[],
  env: Record<string, string>,
  url: string,
  readyPath: string,
): Promise<Started> {
  const started = performance.now();
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  let listeningMs: number | undefined;
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}:\n${stderr}`);
    const response = await fetch(url + readyPath).catch(() => undefined);
    if (response) {
      await response.arrayBuffer();
      listeningMs ??= performance.now() - started;
      if (response.ok) break;
    }
    if (Date.now() > deadline)
      throw new Error(`${args.join(' ')} did not answer ${readyPath} within ${START_TIMEOUT_MS / 1000} s:\n${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  const readyMs = performance.now() - started;
  const readyCpuMs = (cpuMicros(child.pid!) ?? Number.NaN) / 1000;
  const stop = () => stopChild(child);
  return { listeningMs: listeningMs!, readyMs, readyCpuMs, pid: child.pid!, stop };
}

/**
 * Spawns a command and times it until it exits. It must exit 0, or with `failure` 1 and that one line on stderr (a
 * start that cannot go on).
 */
async function timeRun(
  command: string,
  args: string[],
  failure?: { env: Record<string, string>; line: RegExp },
): Promise<number> {
  const started = performance.now();
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, ...failure?.env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  const expected = failure ? code === 1 && failure.line.test(stderr) && stderr.split('\n').length === 2 : code === 0;
  if (!expected) throw new Error(`${command} ${args.join(' ')} exited with ${code}:\n${stderr}`);
  return performance.now() - started;
}

const idleRss = async (pid: number) => {
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  return rssMegabytes(pid) ?? Number.NaN;
};

/** The measures of one round, by row name. */
type Round = Map<string, number>;

interface CallTimes {
  first: number;
  second: number;
}

async function round(calls: Map<OperationId, CallTimes[]>, failures: string[]): Promise<Round> {
  const measured: Round = new Map();

  // The floor: a Node process that listens and answers.
  {
    const port = await freePort();
    const bare = await timeStart(
      NODE,
      ['-e', `require('node:http').createServer((q, s) => s.end('ok')).listen(${port}, '127.0.0.1')`],
      {},
      `http://127.0.0.1:${port}`,
      '/readyz',
    );
    measured.set('bare Node: ready', bare.readyMs);
    measured.set('bare Node: idle RSS (MB)', await idleRss(bare.pid));
    await bare.stop();
  }

  if (existsSync(join(root, PORTKEY_SERVER))) {
    const port = await freePort();
    const portkey = await timeStart(
      NODE,
      portkeyArguments(port),
      { NODE_ENV: 'production' },
      `http://127.0.0.1:${port}`,
      '/',
    );
    measured.set('Portkey gateway: ready', portkey.readyMs);
    measured.set('Portkey gateway: idle RSS (MB)', await idleRss(portkey.pid));
    await portkey.stop();
  }

  const dir = mkdtempSync(join(tmpdir(), 'bench-start-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const databaseUrl = `sqlite:${join(dir, 'bench.db')}`;
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'warn',
    WEBHOOKS_ALLOW_LOOPBACK: 'true',
    PUBLIC_BASE_URL: baseUrl,
    SEED_DEMO: 'false',
    // The sign-in links' emails go to the sink (smtpSink): createSignInLink answers 202 only where mail is set up.
    SMTP_URL: await smtpSink(),
    ...serverEnv,
  };

  // The first start on a machine: nothing in Node's compile cache yet (an empty one of its own), on a new database.
  {
    const cold = await timeStart(
      NODE,
      [...COMMAND_LINE_FLAGS, 'src/main.ts'],
      { ...env, DATABASE_URL: `sqlite:${join(dir, 'cold.db')}`, NODE_COMPILE_CACHE: join(dir, 'compile-cache') },
      baseUrl,
      '/readyz',
    );
    measured.set('server, new database, empty compile cache: ready', cold.readyMs);
    measured.set('server, new database, empty compile cache: CPU until ready', cold.readyCpuMs);
    await cold.stop();
  }

  const fresh = await timeStart(NODE, [...COMMAND_LINE_FLAGS, 'src/main.ts'], env, baseUrl, '/readyz');
  measured.set('server, new database: first answer', fresh.listeningMs);
  measured.set('server, new database: ready', fresh.readyMs);
  measured.set('server, new database: CPU until ready', fresh.readyCpuMs);
  measured.set('server: idle RSS (MB)', await idleRss(fresh.pid));
  await fresh.stop();

  const [apiKey] = await seedWorkspace(databaseUrl, 1, 'owner');
  const existing = await timeStart(NODE, [...COMMAND_LINE_FLAGS, 'src/main.ts'], env, baseUrl, '/readyz');
  measured.set('server, existing database: first answer', existing.listeningMs);
  measured.set('server, existing database: ready', existing.readyMs);
  measured.set('server, existing database: CPU until ready', existing.readyCpuMs);
  // Sessions of the owner, signed in before the calls are timed: one for reading the current session, and one for
  // each call that ends one (signing out, revoking).
  const links = await ownerSignInLinks(databaseUrl, baseUrl, 5);
  const [current, ...ending] = await Promise.all(links.map((link) => signIn(baseUrl, link)));
  const sessionOf = (id: OperationId) =>
    !SESSION_OPERATIONS.has(id) ? undefined : id === 'getCurrentSession' ? current : ending.shift();
  timings.serverUrl = baseUrl;
  timings.byOperation = new Map();
  try {
    for (const id of operations) {
      for (let i = 0; i < 2; i++) {
        const status = await callOnce(id, { baseUrl, apiKey: apiKey! }, sessionOf(id)).catch((error: unknown) =>
          String(error),
        );
        if (typeof status !== 'number' || status >= 400) failures.push(`${id}: ${status}`);
      }
    }
  } finally {
    timings.serverUrl = '';
    await existing.stop();
  }
  for (const [id, times] of timings.byOperation) {
    if (times.length < 2) continue;
    calls.set(id, [...(calls.get(id) ?? []), { first: times[0]!, second: times[1]! }]);
  }

  // Starts that cannot go on: each must stop in one line at once.
  {
    const holder = createServer().listen(0, '127.0.0.1');
    await once(holder, 'listening');
    const busy = String((holder.address() as AddressInfo).port);
    measured.set(
      'server, port in use: exit',
      await timeRun(NODE, [...COMMAND_LINE_FLAGS, 'src/main.ts'], {
        env: { ...env, PORT: busy },
        line: /^configuration: port \d+ is already in use$/m,
      }),
    );
    holder.close();
    const closed = String(await freePort());
    measured.set(
      'server, database unreachable: exit',
      await timeRun(NODE, [...COMMAND_LINE_FLAGS, 'src/main.ts'], {
        env: { ...env, DATABASE_URL: `postgres://postgres@127.0.0.1:${closed}/test` },
        line: /^database: cannot reach the database/m,
      }),
    );
  }
  measured.set('node -e 0', await timeRun(NODE, ['-e', '0']));
  measured.set('node src/cli.ts help', await timeRun(NODE, ['src/cli.ts', 'help']));
  measured.set('npm run -s cli -- help', await timeRun('npm', ['run', '-s', 'cli', '--', 'help']));
  return measured;
}

const ms = (value: number) => (Number.isFinite(value) ? `${Math.round(value).toLocaleString('en')}` : '–');

async function main(): Promise<void> {
  const header = `start of the server, ${ROUNDS} rounds; ${cpus().length} cores, load average ${loadavg()[0]!.toFixed(1)}${
    Object.keys(serverEnv).length > 0 ? `; server environment ${process.env.BENCH_SERVER_ENV}` : ''
  }`;
  process.stdout.write(`${header}\n`);
  const rounds: Round[] = [];
  const calls = new Map<OperationId, CallTimes[]>();
  const failures: string[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    rounds.push(await round(calls, failures));
    process.stdout.write(`round ${i + 1} done, load average ${loadavg()[0]!.toFixed(1)}\n`);
  }
  const lines = [header, '', '| what | median | min–max |', '|---|--:|--:|'];
  for (const name of rounds[0]!.keys()) {
    const values = rounds.map((r) => r.get(name)!).filter(Number.isFinite);
    const unit = name.includes('(MB)') ? '' : ' ms';
    lines.push(
      `| ${name}${unit ? ' (ms)' : ''} | ${ms(median(values))} | ${ms(Math.min(...values))}–${ms(Math.max(...values))} |`,
    );
  }

  // Per operation: the median over the rounds of its first and of its second call.
  const rows = [...calls].map(([id, times]) => ({
    id,
    first: median(times.map((t) => t.first)),
    second: median(times.map((t) => t.second)),
  }));
  const slow = rows.filter((row) => row.first >= 20 && row.first > 2 * row.second).sort((a, b) => b.first - a.first);
  lines.push(
    '',
    `${rows.length} operations, each called twice after the second start: first calls median ${median(rows.map((r) => r.first)).toFixed(1)} ms (max ${Math.max(...rows.map((r) => r.first)).toFixed(1)}), second calls median ${median(rows.map((r) => r.second)).toFixed(1)} ms (max ${Math.max(...rows.map((r) => r.second)).toFixed(1)}).`,
    `First calls over twice the second and over 20 ms: ${slow.length === 0 ? 'none' : slow.length}.`,
  );
  if (slow.length > 0) {
    lines.push('', '| operation | first call, median ms | second call, median ms |', '|---|--:|--:|');
    for (const row of slow) lines.push(`| ${row.id} | ${row.first.toFixed(1)} | ${row.second.toFixed(1)} |`);
  }
  if (failures.length > 0) {
    const counted = new Map<string, number>();
    for (const failure of failures) counted.set(failure, (counted.get(failure) ?? 0) + 1);
    const listed = [...counted].map(([failure, times]) => (times > 1 ? `${failure} (${times}×)` : failure));
    lines.push('', `Calls that did not succeed (${failures.length}, over the rounds): ${listed.join('; ')}`);
  }
  const report = `${lines.join('\n')}\n`;
  process.stdout.write(`\n${report}`);
  mkdirSync(join(root, 'bench/results'), { recursive: true });
  const file = join(root, 'bench/results', `start-${new Date().toISOString().replace(/[:.]/g, '-')}.md`);
  writeFileSync(file, report);
  process.stdout.write(`\nreport: ${file}\n`);
}

try {
  await main();
} finally {
  await cleanUp();
}

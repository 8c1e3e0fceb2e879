// `npm run bench`: load on loopback with autocannon against the real server (SQLite, and PostgreSQL when reachable),
// a bare Express 5 app that answers the same routes with the same bodies, the steps of the per-request cost budget
// between the two, and the Prism mock. Not part of `npm test`.
//
// The cost budget ("layers"): the same routes through Express with the platform's middleware added in turn
// (bench/layered.ts: + contract validator, + auth, + rate limit, + logging and request log), then the real server (+
// handlers and database). Each step's cost is the CPU time its process spends per request (from /proc: steadier than
// req/s when autocannon and the target share two cores); a layer's cost is its step's less the previous step's, so
// each layer's share of a request is visible in one run.
//
// Every target runs in its own child process, so autocannon (in this process) and the server do not share a core.
// The real server runs as `npm start` would in production (NODE_ENV=production, LOG_LEVEL=warn, memory rate-limit
// store). Its requests rotate over a pool of API keys so that the 600-per-minute limit of one key never answers
// instead of the server (every key stays far below it); any non-2xx answer is counted and shown. Every case runs
// BENCH_ROUNDS times, the targets taking turns within a round so that a slower minute of the machine falls on all of
// them; the report gives the median and the spread (min–max), and the load average before each round.
// The SQLite server's resident memory is read idle (after start and after the load) and at its peak under load.
//
// Settings: BENCH_DURATION (seconds per case, 5), BENCH_WARMUP (seconds of unmeasured load first, 1), BENCH_ROUNDS
// (3), BENCH_CONNECTIONS (20), BENCH_KEYS (size of the key pool, 1000), BENCH_POSTGRES_URL
// (postgres://postgres@127.0.0.1:5432/test; a fresh database is created next to it and dropped after),
// BENCH_TARGETS (comma-separated subset of sqlite,postgres,bare,layers,prism), BENCH_BASELINE (a checkout of another
// commit, with its node_modules: its SQLite server and cost budget run beside this one's, for a before and after in
// one run).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHistogram } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { COMMAND_LINE_FLAGS } from '../src/platform/collector.ts';
import { freshPostgresDatabase, POSTGRES_URL } from './postgres.ts';
import {
  cleanUp,
  cleanups,
  cpuMicros,
  freePort,
  positive,
  root,
  rssMegabytes,
  seedWorkspace,
  startProcess,
} from './support.ts';

const DURATION = positive('BENCH_DURATION', 5);
const WARMUP = positive('BENCH_WARMUP', 1, true);
const ROUNDS = positive('BENCH_ROUNDS', 3);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 20);
const KEYS = positive('BENCH_KEYS', 1000);
if (KEYS <= 100)
  throw new Error('BENCH_KEYS must be over 100: the 100-item page of keys must be full and have a next page');
/** BENCH_BASELINE: another checkout (with its node_modules) whose server and cost budget run beside this one's. */
const BASELINE = process.env.BENCH_BASELINE || undefined;
const BASELINE_PREFIX = 'baseline: ';
const TARGETS = new Set(
  (process.env.BENCH_TARGETS ?? 'sqlite,postgres,bare,layers,prism').split(',').map((t) => t.trim()),
);
const P99_TARGET_MS = 10;
/** The issue's floors: the full server's req/s as a share of bare Express, per route and database. */
const FLOORS: Record<string, Record<string, number>> = {
  'server (SQLite)': { 'GET /v1/workspace': 0.5, 'GET /v1/api-keys?limit=20': 0.4 },
  'server (PostgreSQL)': { 'GET /v1/workspace': 0.35, 'GET /v1/api-keys?limit=20': 0.35 },
};
/** The request path's targets of server CPU per request (µs), on SQLite. */
const CPU_TARGETS: Record<string, number> = { 'GET /v1/workspace': 150, 'GET /v1/api-keys?limit=20': 400 };
const IDLE_RSS_TARGET_MB = 150;

const ROUTES = [
  { name: 'GET /v1/workspace', path: '/v1/workspace', body: 'workspace' },
  { name: 'GET /v1/api-keys?limit=20', path: '/v1/api-keys?limit=20', body: 'apiKeys' },
  { name: 'GET /v1/api-keys?limit=100', path: '/v1/api-keys?limit=100', body: 'apiKeys100' },
] as const;
type Route = (typeof ROUTES)[number];

/** The cost budget's steps between bare Express and the full server, each with the layers of bench/layered.ts. */
const LAYER_STEPS = [
  { name: '+ validator', layers: 'validator' },
  { name: '+ auth', layers: 'validator,auth' },
  { name: '+ rate limit', layers: 'validator,auth,ratelimit' },
  { name: '+ logging', layers: 'validator,auth,ratelimit,logging' },
] as const;

interface Measurement {
  target: string;
  route: string;
  round: number;
  requests_per_second: number;
  latency_ms: { p50: number; p90: number; p99: number; max: number; mean: number };
  requests: number;
  non_2xx: number;
  /** Answers by status code, to tell a 429 from a 500 when non_2xx is not 0. */
  status_codes: Record<string, number>;
  errors: number;
  timeouts: number;
  load_average_before: number;
  /**
   * The target process's CPU time per answered request, in µs (user and system, from /proc): what a request costs
   * the server, steadier than req/s on a machine where autocannon and other work take turns with it.
   */
  cpu_us_per_request?: number;
  /** The target's peak resident memory during the case, in MB (the real servers only). */
  rss_peak_mb?: number;
}

interface Target {
  name: string;
  url: string;
  /** Bearer secrets to rotate over; the mock takes any. */
  secrets: string[];
  pid: number;
  stop(): Promise<void>;
}

// ------------------------------------------------------------------------------------------------------ targets

async function realServer(name: string, databaseUrl: string, secrets: string[], checkout = root): Promise<Target> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const stop = await startProcess(
    name,
    process.execPath,
    [...COMMAND_LINE_FLAGS, join(checkout, 'src/main.ts')],
    {
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_BASE_URL: url,
      DATABASE_URL: databaseUrl,
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      REDIS_URL: '',
    },
    url,
    '/readyz',
  );
  return { name, url, secrets, pid: stop.pid, stop };
}

async function bareExpress(bodiesFile: string): Promise<Target> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const stop = await startProcess(
    'bare express',
    process.execPath,
    ['bench/bare.ts'],
    { PORT: String(port), BARE_BODIES: bodiesFile, NODE_ENV: 'production' },
    url,
    '/v1/workspace',
  );
  return { name: 'bare express', url, secrets: ['unused'], pid: stop.pid, stop };
}

async function layeredExpress(
  step: (typeof LAYER_STEPS)[number],
  bodiesFile: string,
  databaseUrl: string,
  secrets: string[],
  checkout = root,
  prefix = '',
): Promise<Target> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = {
    PORT: String(port),
    BARE_BODIES: bodiesFile,
    DATABASE_URL: databaseUrl,
    LAYERS: step.layers,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    REDIS_URL: '',
  };
  const stop = await startProcess(
    prefix + step.name,
    process.execPath,
    [join(checkout, 'bench/layered.ts')],
    env,
    url,
    '/v1/workspace',
    { authorization: `Bearer ${secrets[0]}` },
  );
  return { name: prefix + step.name, url, secrets, pid: stop.pid, stop };
}

async function prismMock(): Promise<Target> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const prism = join(root, 'node_modules', '@stoplight', 'prism-cli', 'dist', 'index.js');
  const stop = await startProcess(
    'prism mock',
    process.execPath,
    [prism, 'mock', join(root, 'generated', 'openapi.json'), '--host', '127.0.0.1', '--port', String(port)],
    {},
    url,
    '/healthz',
  );
  return { name: 'prism mock', url, secrets: ['cs_live_benchmark'], pid: stop.pid, stop };
}

// ---------------------------------------------------------------------------------------------------- measuring

/** One autocannon run; latencies are taken from every response at microsecond resolution (autocannon's own are whole ms). */
function load(
  target: Target,
  path: string,
  seconds: number,
): Promise<{ result: autocannon.Result; latency: ReturnType<typeof createHistogram> }> {
  const latency = createHistogram();
  let next = 0;
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: target.url,
        connections: CONNECTIONS,
        duration: seconds,
        requests: [
          {
            method: 'GET',
            path,
            setupRequest: (request) => ({
              ...request,
              headers: {
                ...request.headers,
                authorization: `Bearer ${target.secrets[next++ % target.secrets.length]}`,
              },
            }),
          },
        ],
      },
      (error, result) => (error ? reject(error) : resolve({ result, latency })),
    );
    // autocannon emits (client, status, bytes, milliseconds); its type declaration omits the client.
    instance.on('response', (...args: unknown[]) =>
      latency.record(Math.max(1, Math.round((args[3] as number) * 1000))),
    );
  });
}

async function measure(target: Target, route: Route, round: number, watchMemory: boolean): Promise<Measurement> {
  if (WARMUP > 0) await load(target, route.path, WARMUP);
  const loadAverage = loadavg()[0]!;
  let rssPeak = 0;
  const sampler = watchMemory
    ? setInterval(() => (rssPeak = Math.max(rssPeak, rssMegabytes(target.pid) ?? 0)), 250)
    : undefined;
  const cpuBefore = cpuMicros(target.pid);
  const { result, latency } = await load(target, route.path, DURATION);
  const cpuAfter = cpuMicros(target.pid);
  clearInterval(sampler);
  const ms = (micros: number) => Math.round(micros) / 1000;
  const measurement: Measurement = {
    target: target.name,
    route: route.name,
    round,
    requests_per_second: Math.round(result.requests.total / result.duration),
    latency_ms: {
      p50: ms(latency.percentile(50)),
      p90: ms(latency.percentile(90)),
      p99: ms(latency.percentile(99)),
      max: ms(latency.max),
      mean: ms(latency.mean),
    },
    requests: result.requests.total,
    non_2xx: result.non2xx,
    status_codes: Object.fromEntries(
      Object.entries(result.statusCodeStats ?? {}).map(([code, stats]) => [code, stats.count ?? 0]),
    ),
    errors: result.errors,
    timeouts: result.timeouts,
    load_average_before: Math.round(loadAverage * 100) / 100,
    ...(cpuBefore !== undefined && cpuAfter !== undefined && result.requests.total > 0
      ? { cpu_us_per_request: Math.round((cpuAfter - cpuBefore) / result.requests.total) }
      : {}),
    ...(watchMemory ? { rss_peak_mb: rssPeak } : {}),
  };
  process.stderr.write(
    `  ${`round ${round}`.padEnd(8)} ${target.name.padEnd(20)} ${route.name.padEnd(27)} ${String(measurement.requests_per_second).padStart(6)} req/s  p99 ${measurement.latency_ms.p99} ms  ${measurement.cpu_us_per_request ?? '?'} µs CPU/request\n`,
  );
  return measurement;
}

type Bodies = Record<Route['body'], unknown>;

async function capture(target: Target): Promise<Bodies> {
  const get = async (path: string) => {
    const response = await fetch(target.url + path, { headers: { Authorization: `Bearer ${target.secrets[0]}` } });
    if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
    return response.json() as Promise<Record<string, unknown>>;
  };
  const bodies = Object.fromEntries(
    await Promise.all(ROUTES.map(async (route) => [route.body, await get(route.path)] as const)),
  ) as Bodies;
  for (const [body, size] of [
    ['apiKeys', 20],
    ['apiKeys100', 100],
  ] as const) {
    const page = bodies[body] as { data: unknown[]; next_cursor: unknown };
    if (page.data.length !== size || !page.next_cursor) throw new Error(`the key list page of ${size} is not full`);
  }
  return bodies;
}

// ------------------------------------------------------------------------------------------------------- report

interface Summary {
  target: string;
  route: string;
  rps: number;
  rpsMin: number;
  rpsMax: number;
  p50: number;
  p99: number;
  /** Median CPU µs per request of the target process, and its spread over the rounds. */
  cpu: number | undefined;
  cpuMin: number | undefined;
  cpuMax: number | undefined;
  failures: number;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

function summarize(measurements: Measurement[]): Summary[] {
  const groups = new Map<string, Measurement[]>();
  for (const m of measurements)
    groups.set(`${m.target}\0${m.route}`, [...(groups.get(`${m.target}\0${m.route}`) ?? []), m]);
  return [...groups.values()].map((group) => {
    const rps = group.map((m) => m.requests_per_second);
    return {
      target: group[0]!.target,
      route: group[0]!.route,
      rps: Math.round(median(rps)),
      rpsMin: Math.min(...rps),
      rpsMax: Math.max(...rps),
      p50: median(group.map((m) => m.latency_ms.p50)),
      p99: median(group.map((m) => m.latency_ms.p99)),
      cpu: group.every((m) => m.cpu_us_per_request !== undefined)
        ? Math.round(median(group.map((m) => m.cpu_us_per_request!)))
        : undefined,
      cpuMin: group.every((m) => m.cpu_us_per_request !== undefined)
        ? Math.min(...group.map((m) => m.cpu_us_per_request!))
        : undefined,
      cpuMax: group.every((m) => m.cpu_us_per_request !== undefined)
        ? Math.max(...group.map((m) => m.cpu_us_per_request!))
        : undefined,
      failures: group.reduce((sum, m) => sum + m.non_2xx + m.errors, 0),
    };
  });
}

function markdown(header: string[], rows: string[][], numeric: (column: number) => boolean): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (numeric(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`;
  return [
    line(header),
    `|${widths.map((w, i) => (numeric(i) ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`,
    ...rows.map(line),
  ].join('\n');
}

function targetsTable(summaries: Summary[]): string {
  const bare = new Map(summaries.filter((s) => s.target === 'bare express').map((s) => [s.route, s.rps]));
  const rows = summaries
    .filter((s) => !s.target.replace(BASELINE_PREFIX, '').startsWith('+'))
    .map((s) => {
      const floor = bare.get(s.route);
      const share = floor ? s.rps / floor : undefined;
      const goal = FLOORS[s.target]?.[s.route];
      const target =
        goal === undefined || share === undefined ? '–' : `${share >= goal ? 'yes' : 'NO'} (≥ ${goal * 100}%)`;
      return [
        s.target,
        s.route,
        `${s.rps} (${s.rpsMin}–${s.rpsMax})`,
        s.p50.toFixed(2),
        s.p99.toFixed(2),
        share === undefined ? '–' : `${(share * 100).toFixed(0)}%`,
        s.cpu === undefined ? '–' : `${s.cpu} (${s.cpuMin}–${s.cpuMax})`,
        target,
        FLOORS[s.target] ? (s.p99 <= P99_TARGET_MS ? 'yes' : 'NO') : '–',
        s.target === 'server (SQLite)' && CPU_TARGETS[s.route] !== undefined && s.cpu !== undefined
          ? `${s.cpu <= CPU_TARGETS[s.route]! ? 'yes' : 'NO'} (≤ ${CPU_TARGETS[s.route]} µs)`
          : '–',
        String(s.failures),
      ];
    });
  return markdown(
    [
      'target',
      'route',
      'req/s median (min–max)',
      'p50 ms',
      'p99 ms',
      'vs bare',
      'CPU µs/request (min–max)',
      'share target',
      `p99 ≤ ${P99_TARGET_MS} ms`,
      'CPU target',
      'non-2xx/errors',
    ],
    rows,
    (i) => i >= 2 && i <= 6,
  );
}

/**
 * The cost budget: per route, each step's req/s and its process's CPU time per request; a layer's cost is its step's
 * CPU per request less the previous step's, and its share is that of the CPU the full server adds to bare Express.
 */
function layersTable(summaries: Summary[], prefix = ''): string {
  const rows: string[][] = [];
  for (const route of ROUTES) {
    const steps = [
      'bare express',
      ...[...LAYER_STEPS.map((s) => s.name), 'server (SQLite)'].map((name) => prefix + name),
    ]
      .map((name) => summaries.find((s) => s.target === name && s.route === route.name))
      .filter((s): s is Summary => s !== undefined && s.cpu !== undefined);
    if (steps.length < 2) continue;
    const added = steps.at(-1)!.cpu! - steps[0]!.cpu!;
    steps.forEach((step, i) => {
      const cost = i === 0 ? step.cpu! : step.cpu! - steps[i - 1]!.cpu!;
      const layer =
        i === 0
          ? 'bare express'
          : step.target === `${prefix}server (SQLite)`
            ? '+ handlers and database (the server)'
            : step.target.slice(prefix.length);
      rows.push([
        route.name,
        layer,
        `${step.rps} (${step.rpsMin}–${step.rpsMax})`,
        step.p99.toFixed(2),
        `${step.cpu} (${step.cpuMin}–${step.cpuMax})`,
        i === 0 ? String(cost) : `${cost >= 0 ? '+' : ''}${cost}`,
        i === 0 ? '–' : `${((cost / added) * 100).toFixed(0)}%`,
      ]);
    });
  }
  return markdown(
    [
      'route',
      'step',
      'req/s median (min–max)',
      'p99 ms',
      'CPU µs/request median (min–max)',
      'layer µs',
      'share of the added CPU',
    ],
    rows,
    (i) => i >= 2,
  );
}

// --------------------------------------------------------------------------------------------------------- main

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'content-service-bench-'));
  const measurements: Measurement[] = [];
  const memory: { idle_after_start_mb?: number; idle_after_load_mb?: number; peak_under_load_mb?: number } = {};
  cleanups.push(async () => rmSync(work, { recursive: true, force: true }));
  process.stderr.write(
    `content-service benchmark: ${CONNECTIONS} connections, ${WARMUP} s warm-up + ${DURATION} s per case, ${ROUNDS} rounds, ${KEYS} keys, ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)}\n`,
  );
  const loadAverages: number[] = [];
  try {
    // The SQLite server always runs: its answers are the bare app's bodies, and its database the layers'.
    const sqliteUrl = `sqlite:${join(work, 'bench.db')}`;
    const sqliteSecrets = await seedWorkspace(sqliteUrl, KEYS, 'admin');
    const targets: Target[] = [];
    const sqlite = await realServer('server (SQLite)', sqliteUrl, sqliteSecrets);
    cleanups.push(() => sqlite.stop());
    // Settled: a few seconds after start, with its background work (webhook and job workers) polling.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    memory.idle_after_start_mb = rssMegabytes(sqlite.pid);
    const bodies = await capture(sqlite);
    const bodiesFile = join(work, 'bodies.json');
    writeFileSync(bodiesFile, JSON.stringify(bodies));
    if (TARGETS.has('sqlite')) targets.push(sqlite);

    if (TARGETS.has('postgres')) {
      const database = await freshPostgresDatabase('cs_bench');
      if (!database) process.stderr.write(`  PostgreSQL at ${POSTGRES_URL} does not answer: skipped\n`);
      else {
        cleanups.push(() => database.drop());
        const server = await realServer(
          'server (PostgreSQL)',
          database.url,
          await seedWorkspace(database.url, KEYS, 'admin'),
        );
        cleanups.push(() => server.stop());
        await capture(server);
        targets.push(server);
      }
    }
    if (TARGETS.has('bare')) {
      const bare = await bareExpress(bodiesFile);
      cleanups.push(() => bare.stop());
      targets.push(bare);
    }
    if (TARGETS.has('layers')) {
      for (const step of LAYER_STEPS) {
        const layered = await layeredExpress(step, bodiesFile, sqliteUrl, sqliteSecrets);
        cleanups.push(() => layered.stop());
        targets.push(layered);
      }
    }
    if (BASELINE) {
      // The same SQLite server and cost budget from another checkout, on a database of its own, in the same rounds.
      const baselineUrl = `sqlite:${join(work, 'baseline.db')}`;
      const baselineSecrets = await seedWorkspace(baselineUrl, KEYS, 'admin');
      const server = await realServer(`${BASELINE_PREFIX}server (SQLite)`, baselineUrl, baselineSecrets, BASELINE);
      cleanups.push(() => server.stop());
      if (TARGETS.has('sqlite')) targets.push(server);
      if (TARGETS.has('layers')) {
        for (const step of LAYER_STEPS) {
          const layered = await layeredExpress(
            step,
            bodiesFile,
            baselineUrl,
            baselineSecrets,
            BASELINE,
            BASELINE_PREFIX,
          );
          cleanups.push(() => layered.stop());
          targets.push(layered);
        }
      }
    }
    if (TARGETS.has('prism')) {
      const prism = await prismMock();
      cleanups.push(() => prism.stop());
      targets.push(prism);
    }

    for (let round = 1; round <= ROUNDS; round++) {
      loadAverages.push(Math.round(loadavg()[0]! * 100) / 100);
      for (const target of targets)
        for (const route of ROUTES) measurements.push(await measure(target, route, round, target === sqlite));
    }
    await new Promise((resolve) => setTimeout(resolve, 3000));
    memory.idle_after_load_mb = rssMegabytes(sqlite.pid);
    const peaks = measurements.flatMap((m) => (m.rss_peak_mb ? [m.rss_peak_mb] : []));
    if (peaks.length > 0) memory.peak_under_load_mb = Math.max(...peaks);
  } finally {
    await cleanUp();
  }

  const order = [
    'server (SQLite)',
    'server (PostgreSQL)',
    'bare express',
    ...LAYER_STEPS.map((s) => s.name),
    `${BASELINE_PREFIX}server (SQLite)`,
    ...LAYER_STEPS.map((s) => BASELINE_PREFIX + s.name),
    'prism mock',
  ];
  measurements.sort((a, b) => order.indexOf(a.target) - order.indexOf(b.target) || a.round - b.round);
  const summaries = summarize(measurements);
  process.stdout.write(`\n${targetsTable(summaries)}\n\n`);
  process.stdout.write(
    `vs bare: req/s as a share of the bare Express app on the same route. Medians of ${ROUNDS} rounds; latency is client-side, per response; CPU is the target process's own (PostgreSQL's is not in it).\n`,
  );
  process.stdout.write(`Load average (1 min) before each round: ${loadAverages.join(', ')}.\n\n`);
  if (TARGETS.has('layers') && TARGETS.has('bare')) {
    process.stdout.write(
      `The cost budget: the same route through each layer added in turn.\n\n${layersTable(summaries)}\n\n`,
    );
    if (BASELINE)
      process.stdout.write(
        `The cost budget of the baseline (${BASELINE}), in the same rounds.\n\n${layersTable(summaries, BASELINE_PREFIX)}\n\n`,
      );
  }
  process.stdout.write(
    `Memory of the SQLite server (RSS): ${memory.idle_after_start_mb ?? '?'} MB idle after start, ${memory.peak_under_load_mb ?? '?'} MB at the peak under load, ${memory.idle_after_load_mb ?? '?'} MB idle after; target idle < ${IDLE_RSS_TARGET_MB} MB.\n`,
  );

  const resultsDir = join(root, 'bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  const report = {
    generated_at: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model ?? null,
    settings: {
      duration_s: DURATION,
      warmup_s: WARMUP,
      rounds: ROUNDS,
      connections: CONNECTIONS,
      keys: KEYS,
      p99_target_ms: P99_TARGET_MS,
    },
    load_average_before_rounds: loadAverages,
    memory_mb: memory,
    summary: summaries,
    results: measurements,
  };
  writeFileSync(join(resultsDir, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write('Written to bench/results/latest.json\n');
}

const interrupt = () => {
  void cleanUp().finally(() => process.exit(130));
};
process.once('SIGINT', interrupt);
process.once('SIGTERM', interrupt);

main().catch(async (error: unknown) => {
  await cleanUp();
  process.stderr.write(`benchmark failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});

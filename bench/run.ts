// `npm run bench`: load on loopback with autocannon against the real server (SQLite, and PostgreSQL when reachable),
// a bare Express 5 app that answers the same routes with the same bodies, and the Prism mock. Not part of `npm test`.
//
// Every target runs in its own child process, so autocannon (in this process) and the server do not share a core.
// The real server runs as `npm start` would in production (NODE_ENV=production, LOG_LEVEL=warn, memory rate-limit
// store). Its requests rotate over a pool of API keys so that the 600-per-minute limit of one key never answers
// instead of the server (every key stays far below it); any non-2xx answer is counted and shown.
//
// Settings: BENCH_DURATION (seconds per case, 10), BENCH_WARMUP (seconds of unmeasured load first, 2),
// BENCH_CONNECTIONS (20), BENCH_KEYS (size of the key pool, 1000), BENCH_POSTGRES_URL
// (postgres://postgres@127.0.0.1:5432/test; a fresh database is created next to it and dropped after),
// BENCH_TARGETS (comma-separated subset of sqlite,postgres,bare,prism).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHistogram } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { freshPostgresDatabase, POSTGRES_URL } from './postgres.ts';
import { cleanUp, cleanups, freePort, positive, root, seedWorkspace, startProcess } from './support.ts';

const DURATION = positive('BENCH_DURATION', 10);
const WARMUP = positive('BENCH_WARMUP', 2, true);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 20);
const KEYS = positive('BENCH_KEYS', 1000);
const TARGETS = new Set((process.env.BENCH_TARGETS ?? 'sqlite,postgres,bare,prism').split(',').map((t) => t.trim()));
const P99_TARGET_MS = 10;

const ROUTES = [
  { name: 'GET /v1/workspace', path: '/v1/workspace' },
  { name: 'GET /v1/api-keys?limit=20', path: '/v1/api-keys?limit=20' },
] as const;

interface Measurement {
  target: string;
  route: string;
  requests_per_second: number;
  latency_ms: { p50: number; p90: number; p99: number; max: number; mean: number };
  requests: number;
  non_2xx: number;
  /** Answers by status code, to tell a 429 from a 500 when non_2xx is not 0. */
  status_codes: Record<string, number>;
  errors: number;
  timeouts: number;
  load_average_before: number;
}

interface Target {
  name: string;
  url: string;
  /** Bearer secrets to rotate over; the mock takes any. */
  secrets: string[];
  stop(): Promise<void>;
}

// ------------------------------------------------------------------------------------------------------ targets

async function realServer(name: string, databaseUrl: string): Promise<Target> {
  const secrets = await seedWorkspace(databaseUrl, KEYS, 'admin');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const stop = await startProcess(name, process.execPath, ['src/main.ts'], {
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_BASE_URL: url,
    DATABASE_URL: databaseUrl,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    REDIS_URL: '',
  }, url, '/readyz');
  return { name, url, secrets, stop };
}

async function bareExpress(bodiesFile: string): Promise<Target> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const stop = await startProcess('bare express', process.execPath, ['bench/bare.ts'], { PORT: String(port), BARE_BODIES: bodiesFile, NODE_ENV: 'production' }, url, '/v1/workspace');
  return { name: 'bare express', url, secrets: ['unused'], stop };
}

async function prismMock(): Promise<Target> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const prism = join(root, 'node_modules', '@stoplight', 'prism-cli', 'dist', 'index.js');
  const stop = await startProcess('prism mock', process.execPath, [prism, 'mock', join(root, 'generated', 'openapi.json'), '--host', '127.0.0.1', '--port', String(port)], {}, url, '/healthz');
  return { name: 'prism mock', url, secrets: ['cs_live_benchmark'], stop };
}

// ---------------------------------------------------------------------------------------------------- measuring

/** One autocannon run; latencies are taken from every response at microsecond resolution (autocannon's own are whole ms). */
function load(target: Target, path: string, seconds: number): Promise<{ result: autocannon.Result; latency: ReturnType<typeof createHistogram> }> {
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
            setupRequest: (request) => ({ ...request, headers: { ...request.headers, authorization: `Bearer ${target.secrets[next++ % target.secrets.length]}` } }),
          },
        ],
      },
      (error, result) => (error ? reject(error) : resolve({ result, latency })),
    );
    // autocannon emits (client, status, bytes, milliseconds); its type declaration omits the client.
    instance.on('response', (...args: unknown[]) => latency.record(Math.max(1, Math.round((args[3] as number) * 1000))));
  });
}

async function measure(target: Target, route: (typeof ROUTES)[number]): Promise<Measurement> {
  if (WARMUP > 0) await load(target, route.path, WARMUP);
  const loadAverage = loadavg()[0]!;
  const { result, latency } = await load(target, route.path, DURATION);
  const ms = (micros: number) => Math.round(micros) / 1000;
  const measurement: Measurement = {
    target: target.name,
    route: route.name,
    requests_per_second: Math.round(result.requests.total / result.duration),
    latency_ms: { p50: ms(latency.percentile(50)), p90: ms(latency.percentile(90)), p99: ms(latency.percentile(99)), max: ms(latency.max), mean: ms(latency.mean) },
    requests: result.requests.total,
    non_2xx: result.non2xx,
    status_codes: Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, stats]) => [code, stats.count ?? 0])),
    errors: result.errors,
    timeouts: result.timeouts,
    load_average_before: Math.round(loadAverage * 100) / 100,
  };
  process.stderr.write(`  ${target.name.padEnd(20)} ${route.name.padEnd(26)} ${String(measurement.requests_per_second).padStart(6)} req/s  p99 ${measurement.latency_ms.p99} ms\n`);
  return measurement;
}

async function capture(target: Target): Promise<{ workspace: unknown; apiKeys: unknown }> {
  const get = async (path: string) => {
    const response = await fetch(target.url + path, { headers: { Authorization: `Bearer ${target.secrets[0]}` } });
    if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
    return response.json() as Promise<Record<string, unknown>>;
  };
  const workspace = await get(ROUTES[0].path);
  const apiKeys = await get(ROUTES[1].path);
  if ((apiKeys.data as unknown[]).length !== 20 || !apiKeys.next_cursor) throw new Error('the key list page is not full');
  return { workspace, apiKeys };
}

// ------------------------------------------------------------------------------------------------------- report

function table(measurements: Measurement[]): string {
  const bare = new Map(measurements.filter((m) => m.target === 'bare express').map((m) => [m.route, m.requests_per_second]));
  const rows = measurements.map((m) => {
    const floor = bare.get(m.route);
    return [
      m.target,
      m.route,
      String(m.requests_per_second),
      m.latency_ms.p50.toFixed(2),
      m.latency_ms.p99.toFixed(2),
      floor ? `${((m.requests_per_second / floor) * 100).toFixed(0)}%` : '–',
      m.latency_ms.p99 <= P99_TARGET_MS ? `yes (${m.latency_ms.p99.toFixed(1)} ≤ ${P99_TARGET_MS})` : `NO (${m.latency_ms.p99.toFixed(1)} > ${P99_TARGET_MS})`,
      String(m.non_2xx + m.errors),
    ];
  });
  const header = ['target', 'route', 'req/s', 'p50 ms', 'p99 ms', 'vs bare', `p99 ≤ ${P99_TARGET_MS} ms`, 'non-2xx/errors'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i >= 2 && i <= 5 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`;
  return [line(header), `|${widths.map((w, i) => (i >= 2 && i <= 5 ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`, ...rows.map(line)].join('\n');
}

// --------------------------------------------------------------------------------------------------------- main

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'content-service-bench-'));
  const measurements: Measurement[] = [];
  cleanups.push(async () => rmSync(work, { recursive: true, force: true }));
  process.stderr.write(
    `content-service benchmark: ${CONNECTIONS} connections, ${WARMUP} s warm-up + ${DURATION} s per case, ${KEYS} keys, ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)}\n`,
  );
  try {
    // The bare app needs the real server's bodies; SQLite always runs first for them.
    let bodies: { workspace: unknown; apiKeys: unknown } | undefined;
    const sqlite = await realServer('server (SQLite)', `sqlite:${join(work, 'bench.db')}`);
    try {
      bodies = await capture(sqlite);
      if (TARGETS.has('sqlite')) for (const route of ROUTES) measurements.push(await measure(sqlite, route));
    } finally {
      await sqlite.stop();
    }

    if (TARGETS.has('postgres')) {
      const database = await freshPostgresDatabase('cs_bench');
      if (!database) process.stderr.write(`  PostgreSQL at ${POSTGRES_URL} does not answer: skipped\n`);
      else {
        cleanups.push(() => database.drop());
        const server = await realServer('server (PostgreSQL)', database.url);
        try {
          await capture(server);
          for (const route of ROUTES) measurements.push(await measure(server, route));
        } finally {
          await server.stop();
        }
      }
    }

    if (TARGETS.has('bare')) {
      const bodiesFile = join(work, 'bodies.json');
      writeFileSync(bodiesFile, JSON.stringify(bodies));
      const bare = await bareExpress(bodiesFile);
      try {
        for (const route of ROUTES) measurements.push(await measure(bare, route));
      } finally {
        await bare.stop();
      }
    }

    if (TARGETS.has('prism')) {
      const prism = await prismMock();
      try {
        for (const route of ROUTES) measurements.push(await measure(prism, route));
      } finally {
        await prism.stop();
      }
    }
  } finally {
    await cleanUp();
  }

  const order = ['server (SQLite)', 'server (PostgreSQL)', 'bare express', 'prism mock'];
  measurements.sort((a, b) => order.indexOf(a.target) - order.indexOf(b.target));
  process.stdout.write(`\n${table(measurements)}\n\n`);
  process.stdout.write('vs bare: req/s as a share of the bare Express app on the same route. Latency is client-side, per response.\n');

  const resultsDir = join(root, 'bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  const report = {
    generated_at: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model ?? null,
    settings: { duration_s: DURATION, warmup_s: WARMUP, connections: CONNECTIONS, keys: KEYS, p99_target_ms: P99_TARGET_MS },
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

// `npm run bench:workflows`: workflow runs of a 5-step workflow on the sandbox model, on SQLite and on PostgreSQL
// (when reachable). Not part of `npm test`. Issue 14's target: under 20 ms of the engine's overhead per step at p50.
//
// The workflow: `draft` (generate on sandbox-writer) → `headline` and `tags` in parallel (transforms) → `joined`
// (a transform of both) → `final` (a transform): five steps, four of them waiting for another.
//
// The server runs as `npm start` does in production (NODE_ENV=production, LOG_LEVEL=warn, its own process) on a fresh
// database. BENCH_RUNS runs (200) are started through the API by BENCH_CLIENTS concurrent clients (8), and the bench
// waits until all have ended (polling the runs list every 100 ms). Each repetition (BENCH_REPEAT, 3) uses a new
// workflow on the same server. Reported, each as the median of the repetitions with the spread (min–max):
//   - runs/s: runs ÷ seconds from the first start request to the last run's end (read from the runs' finished_at);
//   - step overhead: for each step that waits for others, the time from its last dependency's `finished_at` to its
//     own `started_at` (the engine's hand-over from one step to the next: our writes, the engine's step records, the
//     scheduling), p50 and p99 over every such step of the repetition;
//   - pickup: from a run's `created_at` to its first step's `started_at` (the engine's queue: the worker polls it, 100
//     ms to 1 s apart when idle), p50 and p99;
//   - run latency: created_at → finished_at, p50 and p99.
// Baseline, in the same run: one sandbox completion through POST /v1/chat/completions (the work of the generate step
// alone, p50 over 100 calls), so that the step overhead can be read against the work a step does.
//
// Settings: BENCH_RUNS (200), BENCH_CLIENTS (8), BENCH_REPEAT (3), BENCH_DATABASES ("sqlite,postgres"),
// BENCH_POSTGRES_URL (postgres://postgres@127.0.0.1:5432/test; a fresh database is created next to it and dropped after).
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { COMMAND_LINE_FLAGS } from '../src/platform/collector.ts';
import { freshPostgresDatabase } from './postgres.ts';
import { cleanUp, cleanups, freePort, positive, seedWorkspace, startProcess } from './support.ts';

const RUNS = positive('BENCH_RUNS', 200);
const CLIENTS = positive('BENCH_CLIENTS', 8);
const REPEAT = positive('BENCH_REPEAT', 3);
const DATABASES = (process.env.BENCH_DATABASES ?? 'sqlite,postgres').split(',').map((name) => name.trim());

const DEFINITION = {
  name: 'Bench: five steps',
  inputs: { topic: { required: true } },
  steps: [
    { id: 'draft', type: 'generate', model: 'sandbox-writer', prompt: 'Announce {{ inputs.topic }} to our customers.' },
    { id: 'headline', type: 'transform', function: 'truncate', value: '{{ steps.draft.output.text }}', max_length: 60 },
    {
      id: 'tags',
      type: 'transform',
      depends_on: ['draft'],
      function: 'split',
      value: 'release,{{ inputs.topic }}',
      separator: ',',
    },
    {
      id: 'joined',
      type: 'transform',
      depends_on: ['headline', 'tags'],
      function: 'template',
      value: '{{ steps.headline.output }} {{ json(steps.tags.output) }}',
    },
    { id: 'final', type: 'transform', function: 'truncate', value: '{{ steps.joined.output }}', max_length: 200 },
  ],
  outputs: { text: '{{ steps.final.output }}' },
};

interface Step {
  id: string;
  started_at: string | null;
  finished_at: string | null;
}
interface Run {
  id: string;
  status: string;
  created_at: string;
  finished_at: string | null;
  steps: Step[];
}

const percentile = (values: number[], p: number) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};
const median = (values: number[]) => percentile(values, 50);
const ms = (value: number) => `${value.toFixed(1)} ms`;
const spread = (values: number[], format: (value: number) => string) =>
  `${format(median(values))} (${format(Math.min(...values))}–${format(Math.max(...values))})`;

/** The JSON of a successful answer, as the caller's type `T` (the benchmark reads a few fields of it). */
async function api<T = unknown>(base: string, key: string, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

/** Every run of the workflow, all pages. */
async function allRuns(base: string, key: string, workflowId: string): Promise<Run[]> {
  const runs: Run[] = [];
  for (let cursor: string | null = null; ; ) {
    const page: { data: Run[]; next_cursor: string | null } = await api(
      base,
      key,
      'GET',
      `/v1/workflows/${workflowId}/runs?limit=100${cursor ? `&cursor=${cursor}` : ''}`,
    );
    runs.push(...page.data);
    if (!page.next_cursor) return runs;
    cursor = page.next_cursor;
  }
}

interface Repetition {
  runsPerSecond: number;
  overhead: number[];
  pickup: number[];
  latency: number[];
}

async function repetition(base: string, keys: string[]): Promise<Repetition> {
  const workflow = await api<{ id: string }>(base, keys[0]!, 'POST', '/v1/workflows', DEFINITION);
  const dependencies = new Map<string, string[]>(
    DEFINITION.steps.map((step, index) => [
      step.id,
      'depends_on' in step && step.depends_on ? step.depends_on : index === 0 ? [] : [DEFINITION.steps[index - 1]!.id],
    ]),
  );
  const firstStart = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      for (let n = next++; n < RUNS; n = next++)
        await api(base, keys[(client + n) % keys.length]!, 'POST', `/v1/workflows/${workflow.id}/runs`, {
          inputs: { topic: `export ${n}` },
        });
    }),
  );
  let runs: Run[] = [];
  for (const deadline = Date.now() + 600_000; Date.now() < deadline; ) {
    const page = await api<{ run_counts: { active: number } }>(base, keys[0]!, 'GET', `/v1/workflows/${workflow.id}`);
    if (page.run_counts.active === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  runs = await allRuns(base, keys[0]!, workflow.id);
  const failed = runs.filter((run) => run.status !== 'success');
  if (runs.length !== RUNS || failed.length > 0)
    throw new Error(`${runs.length} runs, ${failed.length} not successful (${failed[0]?.status})`);
  const overhead: number[] = [];
  const pickup: number[] = [];
  const latency: number[] = [];
  let lastEnd = 0;
  for (const run of runs) {
    const steps = new Map(run.steps.map((step) => [step.id, step]));
    for (const step of run.steps) {
      const before = dependencies.get(step.id)!;
      if (before.length === 0) {
        pickup.push(Date.parse(step.started_at!) - Date.parse(run.created_at));
        continue;
      }
      const ready = Math.max(...before.map((id) => Date.parse(steps.get(id)!.finished_at!)));
      overhead.push(Date.parse(step.started_at!) - ready);
    }
    latency.push(Date.parse(run.finished_at!) - Date.parse(run.created_at));
    lastEnd = Math.max(lastEnd, Date.parse(run.finished_at!));
  }
  return { runsPerSecond: RUNS / ((lastEnd - firstStart) / 1000), overhead, pickup, latency };
}

async function baseline(base: string, key: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 100; i++) {
    const started = performance.now();
    await api(base, key, 'POST', '/v1/chat/completions', {
      model: 'sandbox-writer',
      messages: [{ role: 'user', content: `Announce export ${i} to our customers.` }],
    });
    times.push(performance.now() - started);
  }
  return median(times);
}

async function benchDatabase(kind: string): Promise<void> {
  let databaseUrl: string;
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'bench-workflows-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    databaseUrl = `sqlite:${join(dir, 'bench.db')}`;
  } else {
    const database = await freshPostgresDatabase('bench_workflows');
    if (!database) {
      console.log('postgres: not reachable, skipped');
      return;
    }
    cleanups.push(() => database.drop());
    databaseUrl = database.url;
  }
  // Keys enough that the start requests and the polls stay under 600 a minute each.
  const keys = await seedWorkspace(databaseUrl, 20, 'editor');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const stop = await startProcess(
    `server (${kind})`,
    process.execPath,
    [...COMMAND_LINE_FLAGS, 'src/main.ts'],
    {
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      REDIS_URL: '',
    },
    base,
    '/readyz',
  );
  cleanups.push(stop);
  const baselineMs = await baseline(base, keys[0]!);
  const repetitions: Repetition[] = [];
  for (let i = 0; i < REPEAT; i++) repetitions.push(await repetition(base, keys));
  await stop();
  const of = (pick: (r: Repetition) => number[], p: number) => repetitions.map((r) => percentile(pick(r), p));
  console.log(
    `\n${kind}: ${RUNS} runs × ${REPEAT}, ${CLIENTS} clients, load average ${loadavg()
      .map((v) => v.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    `  runs/s                              ${spread(
      repetitions.map((r) => r.runsPerSecond),
      (v) => v.toFixed(1),
    )}`,
  );
  console.log(
    `  step overhead p50 (target < 20 ms)  ${spread(
      of((r) => r.overhead, 50),
      ms,
    )}`,
  );
  console.log(
    `  step overhead p99                   ${spread(
      of((r) => r.overhead, 99),
      ms,
    )}`,
  );
  console.log(
    `  pickup p50 / p99                    ${spread(
      of((r) => r.pickup, 50),
      ms,
    )} / ${spread(
      of((r) => r.pickup, 99),
      ms,
    )}`,
  );
  console.log(
    `  run latency p50 / p99               ${spread(
      of((r) => r.latency, 50),
      ms,
    )} / ${spread(
      of((r) => r.latency, 99),
      ms,
    )}`,
  );
  console.log(`  baseline: one sandbox completion    ${ms(baselineMs)} (p50 over 100 calls)`);
}

try {
  console.log(
    `Workflow runs of a 5-step workflow on the sandbox model (load average before: ${loadavg()
      .map((v) => v.toFixed(2))
      .join(' ')})`,
  );
  for (const kind of DATABASES) await benchDatabase(kind);
} finally {
  await cleanUp();
}

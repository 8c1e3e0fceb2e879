// `npm run bench:first-calls`: how long the first call to each operation takes on a fresh server, the wait a user's
// first request pays for whatever is loaded or compiled on first use. Not part of `npm test`. Issue 29's target: no
// first call over 100 ms.
//
// Each round starts a fresh server as `npm start` does (its own process, SQLite, LOG_LEVEL=warn; not NODE_ENV=production,
// which refuses the fixtures' loopback webhook URLs: WEBHOOKS_ALLOW_LOOPBACK), waits for `GET /readyz`, then calls every implemented operation once with the contract suite's
// success request (test/support/contract-fixtures.ts: the fixtures create what an operation needs through the API).
// Every request this process sends is timed, fixtures' included, and the first request of each operation counts:
// from the request being sent to the response read whole (to the headers for a stream). BENCH_ROUNDS (3) rounds;
// the report gives each operation's median first call and the spread over the rounds. BENCH_NODE_ARGS adds Node
// options to the server (`--cpu-prof --cpu-prof-dir=DIR` profiles it).
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OperationId } from '../generated/operations.ts';
import { COMMAND_LINE_FLAGS } from '../src/platform/collector.ts';
import { callOnce, median, operations, timings } from './operations.ts';
import { cleanUp, cleanups, freePort, positive, root, seedWorkspace, startProcess } from './support.ts';

const ROUNDS = positive('BENCH_ROUNDS', 3);
const TARGET_MS = 100;

async function round(): Promise<{ firsts: Map<OperationId, number>; failed: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-first-calls-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const databaseUrl = `sqlite:${join(dir, 'bench.db')}`;
  const [apiKey] = await seedWorkspace(databaseUrl, 1, 'owner');
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
  };
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const stop = await startProcess(
    'server',
    join(root, 'node_modules/.bin/node'),
    [...COMMAND_LINE_FLAGS, ...nodeArgs, 'src/main.ts'],
    env,
    baseUrl,
    '/readyz',
  );
  timings.byOperation = new Map();
  timings.serverUrl = baseUrl;
  const failed: string[] = [];
  try {
    for (const id of operations) {
      const status = await callOnce(id, { baseUrl, apiKey: apiKey! }).catch((error: unknown) => String(error));
      if (typeof status !== 'number' || status >= 400) failed.push(`${id}: ${status}`);
    }
  } finally {
    await stop();
  }
  const firsts = new Map<OperationId, number>();
  for (const [id, times] of timings.byOperation) firsts.set(id, times[0]!);
  return { firsts, failed };
}

async function main(): Promise<void> {
  process.stdout.write(
    `first calls of ${operations.length} operations, ${ROUNDS} rounds; ${cpus().length} cores, load average ${loadavg()[0]!.toFixed(1)}\n`,
  );
  const rounds: Array<Map<OperationId, number>> = [];
  for (let i = 0; i < ROUNDS; i++) {
    const { firsts: measured, failed } = await round();
    rounds.push(measured);
    if (failed.length > 0)
      process.stdout.write(`round ${i + 1}: ${failed.length} calls did not succeed: ${failed.join('; ')}\n`);
  }
  const rows = operations
    .map((id) => {
      const values = rounds.map((measured) => measured.get(id)).filter((v): v is number => v !== undefined);
      return {
        id,
        median: values.length > 0 ? median(values) : NaN,
        min: Math.min(...values),
        max: Math.max(...values),
      };
    })
    .sort((a, b) => b.median - a.median);
  const over = rows.filter((row) => row.median > TARGET_MS);
  process.stdout.write(`\n| operation | first call, median ms | min–max |\n|---|--:|--:|\n`);
  for (const row of rows.slice(0, 15))
    process.stdout.write(`| ${row.id} | ${row.median.toFixed(1)} | ${row.min.toFixed(1)}–${row.max.toFixed(1)} |\n`);
  const all = rows.map((row) => row.median).filter(Number.isFinite);
  process.stdout.write(
    `\nall ${all.length} operations: median ${median(all).toFixed(1)} ms, max ${Math.max(...all).toFixed(1)} ms; over ${TARGET_MS} ms: ${over.length === 0 ? 'none' : over.map((row) => row.id).join(', ')}\n`,
  );
}

try {
  await main();
} finally {
  await cleanUp();
}

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
import { performance } from 'node:perf_hooks';
import { type OperationId, operationTable } from '../generated/operations.ts';
import { notImplemented } from '../src/handlers.ts';
import { embedHeaders, type ImplementedOperationId, successRequest } from '../test/support/contract-fixtures.ts';
import { cleanUp, cleanups, freePort, positive, root, seedWorkspace, startProcess } from './support.ts';

const ROUNDS = positive('BENCH_ROUNDS', 3);
const TARGET_MS = 100;

const operations = (Object.keys(operationTable) as OperationId[]).filter(
  (id): id is ImplementedOperationId => !(notImplemented as readonly string[]).includes(id),
);
const matchers = operations.map((id) => {
  const op = operationTable[id];
  const pattern = new RegExp(`^${op.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
  return { id, method: op.method.toUpperCase(), pattern };
});

function operationOf(method: string, pathname: string): OperationId | undefined {
  return matchers.find((m) => m.method === method && m.pattern.test(pathname))?.id;
}

/** The first request of each operation in this round, in milliseconds. */
let firsts = new Map<OperationId, number>();
let serverUrl = '';
const plainFetch = globalThis.fetch;
globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
  const request = new Request(input, init);
  const url = new URL(request.url);
  const started = performance.now();
  const response = await plainFetch(request);
  if (!request.url.startsWith(serverUrl)) return response;
  const id = operationOf(request.method, url.pathname);
  if (!id || firsts.has(id)) return response;
  const streamed = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  if (streamed) {
    firsts.set(id, performance.now() - started);
    return response;
  }
  const body = await response.arrayBuffer();
  firsts.set(id, performance.now() - started);
  return new Response(body.byteLength > 0 ? body : null, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
};

async function callOnce(id: ImplementedOperationId, target: { baseUrl: string; apiKey: string }): Promise<number> {
  const op = operationTable[id];
  const request = await successRequest(id, target);
  let path = op.path as string;
  for (const [name, value] of Object.entries(request.path)) path = path.replace(`{${name}}`, encodeURIComponent(value));
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(request.query)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) query.append(name, String(item));
  }
  const headers: Record<string, string> = {
    ...request.header,
    Accept: 'application/json, application/problem+json, text/event-stream, text/html, */*',
  };
  if (op.auth === 'bearer') headers.Authorization = `Bearer ${target.apiKey}`;
  if (op.auth === 'embedKey') Object.assign(headers, await embedHeaders(target));
  let body: string | undefined;
  if (request.body !== undefined) {
    headers['Content-Type'] = request.contentType ?? 'application/json';
    body = typeof request.body === 'string' ? request.body : JSON.stringify(request.body);
  }
  const response = await fetch(`${target.baseUrl}${path}${query.size > 0 ? `?${query}` : ''}`, {
    method: op.method.toUpperCase(),
    headers,
    body,
  });
  await response.arrayBuffer();
  return response.status;
}

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
    [...nodeArgs, 'src/main.ts'],
    env,
    baseUrl,
    '/readyz',
  );
  firsts = new Map();
  serverUrl = baseUrl;
  const failed: string[] = [];
  try {
    for (const id of operations) {
      const status = await callOnce(id, { baseUrl, apiKey: apiKey! }).catch((error: unknown) => String(error));
      if (typeof status !== 'number' || status >= 400) failed.push(`${id}: ${status}`);
    }
  } finally {
    await stop();
  }
  return { firsts, failed };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

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

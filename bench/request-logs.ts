// `npm run bench:request-logs`: how long `GET /v1/request-logs` takes on a workspace with a long request log, with
// each of its filters, on SQLite and on PostgreSQL (when it answers). Not part of `npm test`. Issue 29's target: an
// answer in under 100 ms, which the dashboard's Logs page waits for.
//
// Each database gets a workspace whose log holds BENCH_ROWS (200,000) rows over 30 days, written straight into the
// table, and another workspace with half as many interleaved with them: mostly chat completions answered 200, some
// documents, a few 4xx and 5xx, a rare `/v1/projects` call, from three keys. A server is started as `npm start` does
// (its own process, LOG_LEVEL=warn); each query is sent BENCH_REPEATS (5) times and the report gives its median and
// its slowest time, from the request being sent to the body read whole.
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type Insertable, sql } from 'kysely';
import { features } from '../src/features/index.ts';
import { createWorkspace, insertApiKey } from '../src/features/workspace/index.ts';
import { COMMAND_LINE_FLAGS } from '../src/platform/collector.ts';
import { newId } from '../src/platform/ids.ts';
import { migrate, openStorage } from '../src/storage/database.ts';
import type { RequestLogEntriesTable } from '../src/storage/schema.ts';
import { freshPostgresDatabase } from './postgres.ts';
import { cleanUp, cleanups, freePort, positive, root, startProcess } from './support.ts';

const ROWS = positive('BENCH_ROWS', 200_000);
const REPEATS = positive('BENCH_REPEATS', 5);
const TARGET_MS = 100;
const DAY = 86_400_000;

/** The request a row records: mostly chat, some documents, a few errors, a rare project call. */
function requestOf(
  i: number,
): Pick<Insertable<RequestLogEntriesTable>, 'method' | 'path' | 'operation_id' | 'status' | 'error_code'> {
  const pick = i % 1000;
  if (pick < 2)
    return { method: 'POST', path: '/v1/projects', operation_id: 'createProject', status: 201, error_code: null };
  if (pick < 3)
    return {
      method: 'POST',
      path: '/v1/chat/completions',
      operation_id: 'createChatCompletion',
      status: 502,
      error_code: 'upstream_error',
    };
  if (pick < 30)
    return {
      method: 'GET',
      path: `/v1/documents/doc_${i}`,
      operation_id: 'getDocument',
      status: 404,
      error_code: 'not_found',
    };
  if (pick < 60)
    return {
      method: 'POST',
      path: '/v1/chat/completions',
      operation_id: 'createChatCompletion',
      status: 422,
      error_code: 'validation_failed',
    };
  if (pick < 150)
    return {
      method: 'GET',
      path: `/v1/documents/doc_${i}`,
      operation_id: 'getDocument',
      status: 200,
      error_code: null,
    };
  return {
    method: 'POST',
    path: '/v1/chat/completions',
    operation_id: 'createChatCompletion',
    status: 200,
    error_code: null,
  };
}

/** A workspace with three keys and a request log of ROWS rows, and a neighbour with ROWS / 2; returns its owner key. */
async function seed(databaseUrl: string): Promise<{ secret: string; keyIds: string[] }> {
  const storage = openStorage(databaseUrl);
  try {
    await migrate(storage.db, features);
    const { workspace, secret } = await createWorkspace(storage.db, {
      name: 'Benchmark workspace',
      region: 'eu',
      ownerEmail: 'owner@bench.example',
      keyName: 'Benchmark owner',
    });
    const { workspace: neighbour } = await createWorkspace(storage.db, {
      name: 'Neighbour',
      region: 'eu',
      ownerEmail: 'owner@neighbour.example',
      keyName: 'Neighbour owner',
    });
    const keyIds: string[] = [];
    await storage.db.transaction().execute(async (trx) => {
      for (const name of ['prod-server', 'staging', 'ci']) {
        const created = await insertApiKey(trx, {
          workspaceId: workspace.id,
          name,
          role: 'editor',
          expiresAt: null,
          createdBy: null,
          now: new Date(),
        });
        keyIds.push(created.key.id);
      }
    });
    const total = ROWS + ROWS / 2;
    const start = Date.now() - 30 * DAY;
    let batch: Insertable<RequestLogEntriesTable>[] = [];
    const write = async () => {
      await storage.db.insertInto('request_log_entries').values(batch).execute();
      batch = [];
    };
    for (let i = 0; i < total; i++) {
      const at = new Date(start + Math.floor((i / total) * 30 * DAY));
      const ours = i % 3 !== 2;
      batch.push({
        id: newId('req', at),
        workspace_id: ours ? workspace.id : neighbour.id,
        api_key_id: ours ? keyIds[i % 3]! : 'key_neighbour',
        ...requestOf(i),
        duration_ms: 20 + (i % 400),
        ip: '203.0.113.7',
        user_agent: 'OpenAI/JS 6.1.0',
        created_at: at.toISOString(),
      });
      if (batch.length === 80) await write();
    }
    if (batch.length > 0) await write();
    // PostgreSQL's autovacuum analyzes a table that grew by a tenth; a log written over 30 days has its statistics, a
    // table filled a moment ago not yet (its planner would guess).
    if (databaseUrl.startsWith('postgres')) await sql`analyze request_log_entries`.execute(storage.db);
    return { secret, keyIds };
  } finally {
    await storage.close();
  }
}

async function time(url: string, key: string): Promise<{ ms: number; status: number; rows: number }> {
  const started = performance.now();
  const response = await fetch(url, { headers: { Authorization: `Bearer ${key}` } });
  const body = (await response.json()) as { data?: unknown[] };
  return { ms: performance.now() - started, status: response.status, rows: body.data?.length ?? 0 };
}

async function measure(
  kind: string,
  databaseUrl: string,
): Promise<Array<{ kind: string; query: string; median: number; max: number; rows: number }>> {
  const seeded = performance.now();
  const { secret, keyIds } = await seed(databaseUrl);
  process.stdout.write(
    `${kind}: ${ROWS * 1.5} rows written in ${((performance.now() - seeded) / 1000).toFixed(1)} s\n`,
  );
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'warn',
    PUBLIC_BASE_URL: baseUrl,
    SEED_DEMO: 'false',
  };
  const stop = await startProcess(
    'server',
    join(root, 'node_modules/.bin/node'),
    [...COMMAND_LINE_FLAGS, 'src/main.ts'],
    env,
    baseUrl,
    '/readyz',
  );
  try {
    const endpoint = `${baseUrl}/v1/request-logs`;
    const dayAgo = new Date(Date.now() - 2 * DAY).toISOString();
    const queries: Record<string, string> = {
      'first page (the dashboard)': `${endpoint}?limit=20`,
      'status=404': `${endpoint}?limit=20&status=404`,
      'status=5xx': `${endpoint}?limit=20&status=5xx`,
      'status=2xx (most rows)': `${endpoint}?limit=20&status=2xx`,
      'path_prefix=/v1/projects': `${endpoint}?limit=20&path_prefix=/v1/projects`,
      'path_prefix=/v1/documents': `${endpoint}?limit=20&path_prefix=/v1/documents`,
      'path_prefix=/v1/chat (most rows)': `${endpoint}?limit=20&path_prefix=/v1/chat`,
      'method=DELETE (no match)': `${endpoint}?limit=20&method=DELETE`,
      api_key_id: `${endpoint}?limit=20&api_key_id=${keyIds[1]}`,
      'created_before 2 days ago': `${endpoint}?limit=20&created_before=${encodeURIComponent(dayAgo)}`,
    };
    // The server's first answer of the operation pays for what it loads on first use: reported on its own.
    const first = await time(`${endpoint}?limit=20`, secret);
    const results = [
      { kind, query: 'first call on a fresh server', median: first.ms, max: first.ms, rows: first.rows },
    ];
    for (const [query, url] of Object.entries(queries)) {
      const runs = [];
      for (let i = 0; i < REPEATS; i++) runs.push(await time(url, secret));
      if (runs.some((run) => run.status !== 200))
        throw new Error(`${query}: answered ${runs.map((run) => run.status).join(', ')}`);
      const sorted = runs.map((run) => run.ms).sort((a, b) => a - b);
      results.push({
        kind,
        query,
        median: sorted[Math.floor(sorted.length / 2)]!,
        max: sorted[sorted.length - 1]!,
        rows: runs[0]!.rows,
      });
    }
    return results;
  } finally {
    await stop();
  }
}

async function main(): Promise<void> {
  process.stdout.write(
    `GET /v1/request-logs on a log of ${ROWS} rows (+${ROWS / 2} of another workspace), ${REPEATS} times each; ${cpus().length} cores, load average ${loadavg()[0]!.toFixed(1)}\n`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'bench-request-logs-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const results = await measure('sqlite', `sqlite:${join(dir, 'bench.db')}`);
  const postgres = await freshPostgresDatabase('bench_request_logs');
  if (postgres) {
    cleanups.push(() => postgres.drop());
    results.push(...(await measure('postgres', postgres.url)));
  } else {
    process.stdout.write('PostgreSQL does not answer: SQLite only\n');
  }
  process.stdout.write(`\n| database | query | rows | median ms | slowest ms |\n|---|---|--:|--:|--:|\n`);
  for (const row of results)
    process.stdout.write(
      `| ${row.kind} | ${row.query} | ${row.rows} | ${row.median.toFixed(1)} | ${row.max.toFixed(1)} |\n`,
    );
  const over = results.filter((row) => row.median > TARGET_MS);
  process.stdout.write(
    `\nover ${TARGET_MS} ms: ${over.length === 0 ? 'none' : over.map((row) => `${row.kind} ${row.query}`).join(', ')}\n`,
  );
}

try {
  await main();
} finally {
  await cleanUp();
}

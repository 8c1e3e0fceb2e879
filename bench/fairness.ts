// `npm run bench:fairness`: noisy neighbours. One workspace sends the worst input each free-text operation allows
// while a second workspace's requests are timed; the same requests are timed on the idle server in the same run.
// Not part of `npm test`. The target: the second workspace's p99 under attack at most 2× its idle p99, and none of
// its requests over 250 ms.
//
// The server runs as `npm start` does (its own process, SQLite, LOG_LEVEL=warn; WEBHOOKS_ALLOW_LOOPBACK so that
// images come from a loopback image server). The attacker (BENCH_ATTACKERS concurrent loops, 4 by default, over 20
// keys so that no key meets its rate limit) cycles through: embeddings of one unbroken CJK word (25,000 characters)
// and of many long Latin words; a chat completion and a response whose message is one 40,000-letter word; a body
// nested 6,000 levels deep; a chat completion with 10 images of 20 MB by URL; a document with one long word and a
// command on it; a knowledge-base source of long words. The victim sends, one after another, `GET /v1/workspace`
// and a small chat completion (sandbox-writer, 16 tokens). Each of BENCH_ROUNDS (3) rounds times the victim for
// BENCH_DURATION seconds (10) idle, then as long under attack; the report gives p50, p99 and the maximum of each.

import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { cleanUp, cleanups, freePort, positive, root, seedWorkspace, startProcess } from './support.ts';

const ROUNDS = positive('BENCH_ROUNDS', 3);
const DURATION_MS = positive('BENCH_DURATION', 10) * 1000;
const ATTACKERS = positive('BENCH_ATTACKERS', 4);
const TARGET_FACTOR = 2;
const TARGET_MAX_MS = 250;

const MB = 1024 * 1024;

/** Serves `/big.png`: 20 MB typed image/png, the most an image may be. */
async function startImageServer(): Promise<{ url: string; close(): Promise<void> }> {
  const body = Buffer.alloc(20 * MB - 1024);
  body.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const server = http.createServer((_req, res) => {
    res.on('error', () => {});
    res.writeHead(200, { 'content-type': 'image/png' }).end(body);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type Attack = (call: (method: string, path: string, body: string) => Promise<unknown>) => Promise<unknown>;

function attacks(imageUrl: string): Array<[string, Attack]> {
  const longWord = (n: number) => 'a'.repeat(n);
  const json = (value: unknown) => JSON.stringify(value);
  return [
    [
      'embeddings, one CJK word',
      (call) => call('POST', '/v1/embeddings', json({ model: 'sandbox-embedding', input: ['x', '漢'.repeat(25_000)] })),
    ],
    [
      'embeddings, long Latin words',
      (call) =>
        call(
          'POST',
          '/v1/embeddings',
          json({ model: 'sandbox-embedding', input: Array.from({ length: 40 }, () => longWord(50_000)) }),
        ),
    ],
    [
      'chat, one 40,000-letter word',
      (call) =>
        call(
          'POST',
          '/v1/chat/completions',
          json({ model: 'sandbox-writer', messages: [{ role: 'user', content: longWord(40_000) }] }),
        ),
    ],
    [
      'responses, one long word',
      (call) =>
        call('POST', '/v1/responses', json({ model: 'sandbox-writer', input: '漢'.repeat(100_000), store: false })),
    ],
    [
      'a body nested 6,000 deep',
      (call) => call('POST', '/v1/chat/completions', `${'{"a":'.repeat(6000)}1${'}'.repeat(6000)}`),
    ],
    [
      'chat, 10 images of 20 MB',
      (call) =>
        call(
          'POST',
          '/v1/chat/completions',
          json({
            model: 'sandbox-writer',
            messages: [
              {
                role: 'user',
                content: [
                  { type: 'text', text: 'Describe these.' },
                  ...Array.from({ length: 10 }, (_, i) => ({
                    type: 'image_url',
                    image_url: { url: `${imageUrl}/big.png?${i}` },
                  })),
                ],
              },
            ],
          }),
        ),
    ],
    [
      'a document of one long word, and a command',
      async (call) => {
        const created = (await call('POST', '/v1/documents', json({ title: 'Long', content: longWord(200_000) }))) as {
          id?: string;
        };
        if (created?.id)
          await call('POST', `/v1/documents/${created.id}/commands`, json({ command: 'summarize', length: 'short' }));
      },
    ],
    [
      'a knowledge source of long words',
      async (call) => {
        const base = (await call('POST', '/v1/knowledge-bases', json({ name: 'Long words' }))) as { id?: string };
        if (base?.id)
          await call(
            'POST',
            `/v1/knowledge-bases/${base.id}/sources`,
            json({ type: 'text', title: 'Long', content: `${longWord(100_000)} ${'漢'.repeat(100_000)}` }),
          );
      },
    ],
  ];
}

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

interface Timings {
  workspace: number[];
  chat: number[];
}

async function timeVictim(baseUrl: string, key: string, until: number): Promise<Timings> {
  const timings: Timings = { workspace: [], chat: [] };
  const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
  const chat = JSON.stringify({
    model: 'sandbox-writer',
    messages: [{ role: 'user', content: 'Say hello to the team.' }],
    max_tokens: 16,
  });
  while (performance.now() < until) {
    let started = performance.now();
    let response = await fetch(`${baseUrl}/v1/workspace`, { headers });
    await response.arrayBuffer();
    timings.workspace.push(performance.now() - started);
    started = performance.now();
    response = await fetch(`${baseUrl}/v1/chat/completions`, { method: 'POST', headers, body: chat });
    await response.arrayBuffer();
    timings.chat.push(performance.now() - started);
    // About 10 pairs a second: the victim is a client, not a load generator.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return timings;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-fairness-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const databaseUrl = `sqlite:${join(dir, 'bench.db')}`;
  const attackerKeys = await seedWorkspace(databaseUrl, 20, 'admin');
  const [victimKey] = await seedWorkspace(databaseUrl, 1, 'owner');
  const images = await startImageServer();
  cleanups.push(images.close);
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = await startProcess(
    'server',
    join(root, 'node_modules/.bin/node'),
    ['src/main.ts'],
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'warn',
      WEBHOOKS_ALLOW_LOOPBACK: 'true',
      PUBLIC_BASE_URL: baseUrl,
      SEED_DEMO: 'false',
    },
    baseUrl,
    '/readyz',
  );
  cleanups.push(stop);
  const cases = attacks(images.url);
  let sent = 0;
  const statuses = new Map<string, Map<number, number>>();
  const attackCall = async (name: string, method: string, path: string, body: string) => {
    const key = attackerKeys[sent++ % attackerKeys.length]!;
    try {
      const response = await fetch(baseUrl + path, {
        method,
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body,
      });
      const byStatus = statuses.get(name) ?? statuses.set(name, new Map()).get(name)!;
      byStatus.set(response.status, (byStatus.get(response.status) ?? 0) + 1);
      return response.ok
        ? await response.json().catch(() => undefined)
        : await response.arrayBuffer().then(() => undefined);
    } catch {
      return undefined;
    }
  };

  if (process.env.BENCH_PROBE) {
    // Each attack alone, once warm: how long it takes, an upper bound of how long it can hold the event loop.
    for (const [name, attack] of cases) {
      await attack((method, path, body) => attackCall(name, method, path, body));
      const started = performance.now();
      await attack((method, path, body) => attackCall(name, method, path, body));
      process.stdout.write(`${name}: ${(performance.now() - started).toFixed(0)} ms\n`);
    }
    return;
  }
  const idle: Timings = { workspace: [], chat: [] };
  const attacked: Timings = { workspace: [], chat: [] };
  // Warm-up: the first calls load the tokenizer and compile the validator's schemas.
  await timeVictim(baseUrl, victimKey!, performance.now() + 2000);
  for (let round = 1; round <= ROUNDS; round++) {
    const quiet = await timeVictim(baseUrl, victimKey!, performance.now() + DURATION_MS);
    idle.workspace.push(...quiet.workspace);
    idle.chat.push(...quiet.chat);
    let attacking = true;
    const loops = Array.from({ length: ATTACKERS }, async (_, loop) => {
      for (let i = loop; attacking; i++) {
        const [name, attack] = cases[i % cases.length]!;
        await attack((method, path, body) => attackCall(name, method, path, body));
      }
    });
    const loud = await timeVictim(baseUrl, victimKey!, performance.now() + DURATION_MS);
    attacking = false;
    await Promise.all(loops);
    attacked.workspace.push(...loud.workspace);
    attacked.chat.push(...loud.chat);
    process.stdout.write(`round ${round}/${ROUNDS} done\n`);
  }

  const rows: string[] = [];
  let met = true;
  for (const kind of ['workspace', 'chat'] as const) {
    const quiet = [...idle[kind]].sort((a, b) => a - b);
    const loud = [...attacked[kind]].sort((a, b) => a - b);
    const quietP99 = percentile(quiet, 99);
    const loudP99 = percentile(loud, 99);
    const loudMax = loud.at(-1) ?? Number.NaN;
    const ok = loudP99 <= TARGET_FACTOR * Math.max(quietP99, 1) && loudMax <= TARGET_MAX_MS;
    met &&= ok;
    const label = kind === 'workspace' ? '`GET /v1/workspace`' : 'small chat completion';
    const f = (ms: number) => ms.toFixed(1);
    rows.push(
      `| ${label} | ${quiet.length} / ${loud.length} | ${f(percentile(quiet, 50))} | ${f(quietP99)} | ${f(percentile(loud, 50))} | ${f(loudP99)} | ${f(loudMax)} | ${ok ? 'yes' : 'no'} |`,
    );
  }
  const load = loadavg()
    .map((n) => n.toFixed(1))
    .join(' ');
  process.stdout.write(
    [
      '',
      `${cpus().length} cores, load average ${load}; ${ROUNDS} rounds of ${DURATION_MS / 1000} s idle and ${DURATION_MS / 1000} s under ${ATTACKERS} attacking loops`,
      '',
      '| request of the second workspace | requests idle / attacked | p50 idle ms | p99 idle ms | p50 attacked ms | p99 attacked ms | max attacked ms | target met |',
      '|---|--:|--:|--:|--:|--:|--:|:-:|',
      ...rows,
      '',
      'The attacker’s requests, by answer:',
      '',
      '| attack | answers |',
      '|---|---|',
      ...cases.map(
        ([name]) =>
          `| ${name} | ${[...(statuses.get(name) ?? new Map<number, number>()).entries()]
            .sort(([a], [b]) => a - b)
            .map(([status, count]) => `${count}× ${status}`)
            .join(', ')} |`,
      ),
      '',
      met
        ? 'target met'
        : `target missed: p99 under attack over ${TARGET_FACTOR}× idle, or a request over ${TARGET_MAX_MS} ms`,
      '',
    ].join('\n'),
  );
}

try {
  await main();
} finally {
  await cleanUp();
}

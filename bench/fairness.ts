// `npm run bench:fairness`: noisy neighbours. One workspace sends the worst input each free-text operation allows
// while a second workspace's requests are timed; the same requests are timed on the idle server in the same run.
// Not part of `npm test`. The target: the second workspace's p99 under attack at most 2× its idle p99, and none of
// its requests over 250 ms.
//
// The server runs as `npm start` does (its own process, SQLite, LOG_LEVEL=warn; WEBHOOKS_ALLOW_LOOPBACK so that images
// come from a loopback image server). The attacker runs in a process of its own, with the image server, so that the
// time it spends writing its bodies and serving images is not counted in the victim's timings (the victim would
// otherwise wait for its own event loop), at a lower priority (`nice -n 10`, whether pinned or not;
// BENCH_NICE_ATTACKER=0 leaves it at this process's): on a 2-core machine it shares the clients' core with the victim,
// and the victim's wait for that core while the attacker writes its bodies would be timed as if it waited for the
// server. It runs BENCH_ATTACKERS concurrent loops (4 by default) over 20 keys, so that no key meets its rate limit,
// and cycles through: embeddings of one unbroken CJK word (25,000 characters) and of many long Latin words; a chat
// completion and a response whose message is one 40,000-letter word; a body nested 6,000 levels deep; a chat completion
// with 10 images of 20 MB by URL; a document with one long word and a command on it; a document of 200,000 characters
// in sections with lists, rewritten; a knowledge-base source of long words. The victim sends, one after another,
// `GET /v1/workspace` and a small chat completion (sandbox-writer, 16 tokens). After a warm-up (each attack once, then
// the victim's requests for 2 s: an operation's first call compiles some of the validator's schemas, which is the
// server's start, not one tenant's load on another), each of BENCH_ROUNDS (3) rounds times the victim for
// BENCH_DURATION seconds (10) idle, then as long under attack; the report gives p50, p99 and the maximum of each.

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { COMMAND_LINE_FLAGS } from '../src/platform/collector.ts';
import { WORKER_IDLE_MS } from '../src/platform/worker-pool.ts';
import {
  children,
  cleanUp,
  cleanups,
  freePort,
  positive,
  root,
  rssMegabytes,
  seedWorkspace,
  startProcess,
} from './support.ts';

const ROUNDS = positive('BENCH_ROUNDS', 3);
const DURATION_MS = positive('BENCH_DURATION', 10) * 1000;
const ATTACKERS = positive('BENCH_ATTACKERS', 4);
const TARGET_FACTOR = 2;
const TARGET_MAX_MS = 250;

const MB = 1024 * 1024;

/** When the server's memory is read again after the attacks: once its idle worker threads have ended. */
const AFTER_MS = WORKER_IDLE_MS + 5000;

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

/** The attacks, or those whose name contains one of BENCH_ATTACKS's comma-separated words. */
function attacks(imageUrl: string): Array<[string, Attack]> {
  const only = process.env.BENCH_ATTACKS?.split(',').map((word) => word.trim().toLowerCase());
  return everyAttack(imageUrl).filter(([name]) => !only || only.some((word) => name.toLowerCase().includes(word)));
}

function everyAttack(imageUrl: string): Array<[string, Attack]> {
  const longWord = (n: number) => 'a'.repeat(n);
  /** Markdown of `n` characters or more in headed sections with a list each: what an editor's long report is. */
  const sectioned = (n: number, word: string) => {
    const sections: string[] = [];
    for (let at = 0, k = 1; at < n; k++) {
      const section = `## Part ${k}\n\nThe ${word} harbour log of day ${k}, with **cranes** and berths.\n\n- crane ${k}\n- berth ${k}`;
      sections.push(section);
      at += section.length + 2;
    }
    return sections.join('\n\n');
  };
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
      'a document of 200,000 characters in sections, rewritten',
      async (call) => {
        const body = json({ title: 'Sections', content: sectioned(200_000, 'first') });
        const created = (await call('POST', '/v1/documents', body)) as { id?: string };
        if (created?.id)
          await call('PATCH', `/v1/documents/${created.id}`, json({ content: sectioned(200_000, 'second') }));
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

/** The attacker's process: its loops run until SIGTERM, then it prints its answers by attack and status (JSON). */
async function attack(baseUrl: string, keys: string[]): Promise<void> {
  const images = await startImageServer();
  const cases = attacks(images.url);
  let sent = 0;
  const statuses: Record<string, Record<number, number>> = {};
  const call = async (name: string, method: string, path: string, body: string) => {
    const key = keys[sent++ % keys.length]!;
    try {
      const response = await fetch(baseUrl + path, {
        method,
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body,
      });
      const byStatus = (statuses[name] ??= {});
      byStatus[response.status] = (byStatus[response.status] ?? 0) + 1;
      return response.ok
        ? await response.json().catch(() => undefined)
        : await response.arrayBuffer().then(() => undefined);
    } catch {
      const byStatus = (statuses[name] ??= {});
      byStatus[0] = (byStatus[0] ?? 0) + 1;
      return undefined;
    }
  };
  if (process.env.BENCH_FAIRNESS_WARM_UP) {
    // Each attack once, before the rounds.
    for (const [name, run] of cases) await run((method, path, body) => call(name, method, path, body));
  } else if (process.env.BENCH_PROBE) {
    // Each attack alone, once warm: how long it takes, an upper bound of how long it can hold the event loop.
    for (const [name, run] of cases) {
      await run((method, path, body) => call(name, method, path, body));
      const started = performance.now();
      await run((method, path, body) => call(name, method, path, body));
      process.stderr.write(`${name}: ${(performance.now() - started).toFixed(0)} ms\n`);
    }
  } else {
    let attacking = true;
    process.once('SIGTERM', () => {
      attacking = false;
    });
    process.stderr.write('attacking\n');
    await Promise.all(
      Array.from({ length: ATTACKERS }, async (_, loop) => {
        for (let i = loop; attacking; i++) {
          const [name, run] = cases[i % cases.length]!;
          await run((method, path, body) => call(name, method, path, body));
        }
      }),
    );
  }
  await images.close();
  process.stdout.write(JSON.stringify(statuses));
}

/**
 * Starts the attacker's process; resolves once it attacks. `stop()` ends its loops and gives its answers. With
 * `probe` it times each attack alone (BENCH_PROBE) and with `warmUp` it sends each attack once, then exits.
 */
async function startAttacker(
  baseUrl: string,
  keys: string[],
  probe?: (line: string) => string,
  { warmUp = false } = {},
): Promise<{ stop(): Promise<Record<string, Record<number, number>>> }> {
  const nodeBin = join(root, 'node_modules/.bin/node');
  // Clients on other machines would not take the victim's core: the attacker gives way to it (header). `nice` lowers
  // the priority of the whole process, its threads included, relative to this one's.
  const [command, ...args] = [
    ...(process.env.BENCH_NICE_ATTACKER === '0' ? [] : ['nice', '-n', '10']),
    nodeBin,
    import.meta.filename,
  ];
  const child = spawn(command!, args, {
    cwd: root,
    env: {
      ...process.env,
      BENCH_FAIRNESS_ATTACKER: JSON.stringify({ baseUrl, keys }),
      ...(probe ? { BENCH_PROBE: '1' } : {}),
      ...(warmUp ? { BENCH_FAIRNESS_WARM_UP: '1' } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    // `nice` missing (or node, when it runs without `nice`): the spawn's own error, not an exit code.
    child.once('error', reject);
    child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      if (text.includes('attacking')) resolve();
      else process.stderr.write(probe ? probe(text) : text);
    });
    void exited.then((code) => (probe || warmUp ? resolve() : reject(new Error(`the attacker exited with ${code}`))));
  });
  return {
    async stop() {
      child.kill('SIGTERM');
      const code = await exited;
      children.delete(child);
      if (code !== 0) throw new Error(`the attacker exited with ${code}`);
      return JSON.parse(stdout) as Record<string, Record<number, number>>;
    },
  };
}

/**
 * With BENCH_PIN (the default where `taskset` is installed and there are two cores or more), the server runs on the
 * last core and this process, the victim and the attacker on the others, as clients on other machines would: their
 * CPU (writing megabytes of JSON, serving images) would otherwise be counted as the server's unfairness.
 */
function serverCores(): { server: string; clients: string } | undefined {
  const cores = availableParallelism();
  if (process.env.BENCH_PIN === '0' || cores < 2) return undefined;
  const clients = `0-${cores - 2}`;
  if (spawnSync('taskset', ['-a', '-p', '-c', clients, String(process.pid)], { stdio: 'ignore' }).status !== 0)
    return undefined;
  return { server: String(cores - 1), clients };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-fairness-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const databaseUrl = `sqlite:${join(dir, 'bench.db')}`;
  const attackerKeys = await seedWorkspace(databaseUrl, 20, 'admin');
  const [victimKey] = await seedWorkspace(databaseUrl, 1, 'owner');
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const nodeBin = join(root, 'node_modules/.bin/node');
  const cores = serverCores();
  // BENCH_NODE_ARGS: extra Node options for the server, e.g. `--trace-gc` to see its collections.
  const nodeArgs = [
    ...COMMAND_LINE_FLAGS,
    ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
    'src/main.ts',
  ];
  const stop = await startProcess(
    'server',
    cores ? 'taskset' : nodeBin,
    cores ? ['-c', cores.server, nodeBin, ...nodeArgs] : nodeArgs,
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
  if (process.env.BENCH_PROBE) {
    // The server's resident memory: its highest while each attack ran, and what it is once the attack is done.
    let peak = 0;
    const sample = () => (peak = Math.max(peak, rssMegabytes(stop.pid) ?? 0));
    const sampler = setInterval(sample, 20);
    process.stderr.write(`server RSS before: ${rssMegabytes(stop.pid)} MB\n`);
    await (
      await startAttacker(baseUrl, attackerKeys, (line) => {
        const text = `${line.trimEnd()}; server RSS at most ${peak} MB, then ${rssMegabytes(stop.pid)} MB\n`;
        peak = 0;
        return text;
      })
    ).stop();
    clearInterval(sampler);
    await new Promise((resolve) => setTimeout(resolve, AFTER_MS));
    process.stderr.write(
      `server RSS ${AFTER_MS / 1000} s after the last attack (idle worker threads end after ${WORKER_IDLE_MS / 1000} s): ${rssMegabytes(stop.pid)} MB\n`,
    );
    await stop();
    return;
  }
  const cases = attacks('');
  const statuses = new Map<string, Map<number, number>>();
  const idle: Timings = { workspace: [], chat: [] };
  const attacked: Timings = { workspace: [], chat: [] };
  // Warm-up: the first calls load the tokenizer and compile the validator's schemas (some of them when an operation is
  // first called: a server's first calls are its start's, not what one tenant does to another), the attacks' too.
  await (await startAttacker(baseUrl, attackerKeys, undefined, { warmUp: true })).stop();
  await timeVictim(baseUrl, victimKey!, performance.now() + 2000);
  const rss = { idle: rssMegabytes(stop.pid) ?? 0, peak: 0, after: 0 };
  const sampler = setInterval(() => (rss.peak = Math.max(rss.peak, rssMegabytes(stop.pid) ?? 0)), 20);
  for (let round = 1; round <= ROUNDS; round++) {
    const quiet = await timeVictim(baseUrl, victimKey!, performance.now() + DURATION_MS);
    idle.workspace.push(...quiet.workspace);
    idle.chat.push(...quiet.chat);
    const attacker = await startAttacker(baseUrl, attackerKeys);
    const loud = await timeVictim(baseUrl, victimKey!, performance.now() + DURATION_MS);
    for (const [name, byStatus] of Object.entries(await attacker.stop())) {
      const counts = statuses.get(name) ?? statuses.set(name, new Map()).get(name)!;
      for (const [status, count] of Object.entries(byStatus))
        counts.set(Number(status), (counts.get(Number(status)) ?? 0) + count);
    }
    attacked.workspace.push(...loud.workspace);
    attacked.chat.push(...loud.chat);
    process.stdout.write(`round ${round}/${ROUNDS} done\n`);
  }
  clearInterval(sampler);
  await new Promise((resolve) => setTimeout(resolve, AFTER_MS));
  rss.after = rssMegabytes(stop.pid) ?? 0;
  await stop();

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
      `${cpus().length} cores (${cores ? `the server on core ${cores.server}, the clients on ${cores.clients}` : 'not pinned'}), load average ${load}; ${ROUNDS} rounds of ${DURATION_MS / 1000} s idle and ${DURATION_MS / 1000} s under ${ATTACKERS} attacking loops`,
      '',
      '| request of the second workspace | requests idle / attacked | p50 idle ms | p99 idle ms | p50 attacked ms | p99 attacked ms | max attacked ms | target met |',
      '|---|--:|--:|--:|--:|--:|--:|:-:|',
      ...rows,
      '',
      `The server's resident memory: ${rss.idle} MB once warm, at most ${rss.peak} MB during the rounds, ${rss.after} MB ${AFTER_MS / 1000} s after the last (idle worker threads end after ${WORKER_IDLE_MS / 1000} s).`,
      '',
      'The attacker’s requests, by answer:',
      '',
      '| attack | answers |',
      '|---|---|',
      ...cases.map(
        ([name]) =>
          `| ${name} | ${[...(statuses.get(name) ?? new Map<number, number>()).entries()]
            .sort(([a], [b]) => a - b)
            .map(([status, count]) => `${count}× ${status === 0 ? 'no answer' : status}`)
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

const attacker = process.env.BENCH_FAIRNESS_ATTACKER;
if (attacker) {
  const { baseUrl, keys } = JSON.parse(attacker) as { baseUrl: string; keys: string[] };
  await attack(baseUrl, keys);
} else {
  try {
    await main();
  } finally {
    await cleanUp();
  }
}

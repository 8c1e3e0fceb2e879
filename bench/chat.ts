// `npm run bench:chat`: what our server adds to a streamed chat completion, against calling the same upstream
// directly, in one run. Not part of `npm test`. Issue 10's target: a p50 time-to-first-token overhead under 5 ms and
// at least 50 % of the direct throughput.
//
// The upstream is the tests' fake OpenAI (test/support/fake-providers.ts) in a worker thread of this process: it
// streams its default answer ("You said: " and the prompt, one chunk per word) and the usage chunk, in two passes:
// with no delay between chunks (an upstream that costs nothing, so the ratio shows our whole cost) and 2 ms apart (a
// paced upstream, still faster than real models, which stream some 50 to 200 tokens a second). BENCH_CHUNK_DELAYS
// ("0,2") sets the passes. The server runs as `npm start` does in production (NODE_ENV=production, LOG_LEVEL=warn, SQLite, its
// own process) with OPENAI_BASE_URL pointing at the fake, so the real path is measured: authentication, rate limit,
// validation, the engine (catalogue, token count of the prompt, the AI SDK's OpenAI provider and streamText), our
// SSE adapter and the usage record. Requests rotate over a pool of keys, so no key nears its 600 a minute.
//
// Cases: direct (client → fake) and server (client → server → fake), each at 1 and at BENCH_CONNECTIONS (20)
// concurrent streams, BENCH_DURATION seconds (10) after BENCH_WARMUP seconds (2); BENCH_NODE_ARGS adds Node options
// to the server (`--cpu-prof --cpu-prof-dir=DIR` profiles it). Time to first token: from the
// request being written to the first chunk with content read; throughput: completions read to `[DONE]` per second.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { startFakeOpenAi } from '../test/support/fake-providers.ts';
import { cleanUp, cleanups, freePort, positive, root, seedWorkspace, startProcess } from './support.ts';

const DURATION = positive('BENCH_DURATION', 10);
const WARMUP = positive('BENCH_WARMUP', 2, true);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 20);
const KEYS = positive('BENCH_KEYS', 200);
const TTFT_OVERHEAD_TARGET_MS = 5;
const THROUGHPUT_TARGET = 0.5;
/** Milliseconds between the upstream's chunks, one pass each: 0 (an upstream that costs nothing) and a paced one. */
const CHUNK_DELAYS = (process.env.BENCH_CHUNK_DELAYS ?? '0,2').split(',').map(Number);
const PROMPT = 'Write a short launch announcement for our spring sale on single-origin coffee roasts, with one line on shipping and one on the loyalty discount for members.';
/** The fake's answer is "You said: " and the prompt, one chunk per word. */
const CHUNKS = 2 + PROMPT.split(' ').length;

if (!isMainThread) {
  const fake = await startFakeOpenAi({ chunkDelayMs: workerData as number });
  parentPort!.postMessage(fake.url);
} else {
  await main();
}

interface Target {
  name: string;
  /** The chat completions URL. */
  url: string;
  secrets: string[];
}

interface Result {
  target: string;
  chunk_delay_ms?: number;
  connections: number;
  completions_per_second: number;
  ttft_ms: { p50: number; p99: number };
  completions: number;
  failures: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** One streamed completion: resolves with the time to its first content chunk, after reading it to [DONE]. */
function streamOnce(agent: http.Agent, target: Target, secret: string): Promise<number> {
  const url = new URL(target.url);
  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: PROMPT }], stream: true, stream_options: { include_usage: true } });
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let firstToken = NaN;
    let tail = '';
    const request = http.request(
      { agent, host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Authorization: `Bearer ${secret}` } },
      (response) => {
        if (response.statusCode !== 200) {
          response.resume();
          return reject(new Error(`status ${response.statusCode}`));
        }
        response.setEncoding('utf8');
        response.on('data', (text: string) => {
          // The first text: a content that is not empty (OpenAI's first chunk names the role with an empty content).
          if (Number.isNaN(firstToken) && /"content":"[^"]/.test(text)) firstToken = performance.now() - started;
          tail = (tail + text).slice(-64);
        });
        response.on('end', () => (tail.includes('data: [DONE]') ? resolve(firstToken) : reject(new Error('the stream ended without [DONE]'))));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

async function load(target: Target, connections: number, seconds: number): Promise<Result> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const ttfts: number[] = [];
  let failures = 0;
  let next = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < deadline) {
        try {
          ttfts.push(await streamOnce(agent, target, target.secrets[next++ % target.secrets.length]!));
        } catch {
          failures += 1;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  ttfts.sort((a, b) => a - b);
  return {
    target: target.name,
    connections,
    completions_per_second: Math.round(ttfts.length / elapsed),
    ttft_ms: { p50: Number(percentile(ttfts, 50).toFixed(2)), p99: Number(percentile(ttfts, 99).toFixed(2)) },
    completions: ttfts.length,
    failures,
  };
}

/** One pass: an upstream pacing its chunks `chunkDelayMs` apart, a server in front of it, every case. */
async function pass(chunkDelayMs: number, databaseUrl: string, secrets: string[]): Promise<Result[]> {
  const worker = new Worker(new URL(import.meta.url), { workerData: chunkDelayMs });
  const fakeUrl = await new Promise<string>((resolve, reject) => worker.once('message', resolve).once('error', reject));
  const port = await freePort();
  const serverUrl = `http://127.0.0.1:${port}`;
  // BENCH_NODE_ARGS: extra Node options for the server, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const stop = await startProcess('server', process.execPath, [...nodeArgs, 'src/main.ts'], {
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_BASE_URL: serverUrl,
    DATABASE_URL: databaseUrl,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    REDIS_URL: '',
    OPENAI_API_KEY: 'sk-bench',
    OPENAI_BASE_URL: fakeUrl,
    PROVIDER_MAX_RETRIES: '0',
  }, serverUrl, '/readyz');
  try {
    const targets: Target[] = [
      { name: 'direct (fake upstream)', url: `${fakeUrl}/chat/completions`, secrets: ['sk-bench'] },
      { name: 'server → fake upstream', url: `${serverUrl}/v1/chat/completions`, secrets },
    ];
    const results: Result[] = [];
    for (const connections of [...new Set([1, CONNECTIONS])]) {
      for (const target of targets) {
        if (WARMUP > 0) await load(target, connections, WARMUP);
        const result = { ...(await load(target, connections, DURATION)), chunk_delay_ms: chunkDelayMs };
        results.push(result);
        process.stdout.write(`${chunkDelayMs} ms between chunks, ${target.name}, ${connections} connection(s): ${result.completions_per_second}/s, first token p50 ${result.ttft_ms.p50} ms p99 ${result.ttft_ms.p99} ms, ${result.failures} failures\n`);
      }
    }
    return results;
  } finally {
    // Stopped with SIGTERM, so that it exits as in production (and writes its profile with BENCH_NODE_ARGS).
    await stop();
    await worker.terminate();
  }
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'content-service-bench-chat-'));
  cleanups.push(async () => rmSync(work, { recursive: true, force: true }));
  process.once('SIGINT', () => void cleanUp().finally(() => process.exit(130)));
  try {
    const databaseUrl = `sqlite:${join(work, 'bench.db')}`;
    const secrets = await seedWorkspace(databaseUrl, KEYS, 'editor');
    const results: Result[] = [];
    for (const delay of CHUNK_DELAYS) results.push(...(await pass(delay, databaseUrl, secrets)));

    const rows: string[] = ['| ms between chunks | connections | target | completions/s | TTFT p50 ms | TTFT p99 ms | failures |', '|--:|--:|---|--:|--:|--:|--:|'];
    const verdicts: string[] = [];
    for (const delay of CHUNK_DELAYS) {
      for (const connections of [...new Set([1, CONNECTIONS])]) {
        const [direct, server] = results.filter((r) => r.connections === connections && r.chunk_delay_ms === delay);
        for (const r of [direct!, server!]) rows.push(`| ${delay} | ${connections} | ${r.target} | ${r.completions_per_second} | ${r.ttft_ms.p50} | ${r.ttft_ms.p99} | ${r.failures} |`);
        const overhead = server!.ttft_ms.p50 - direct!.ttft_ms.p50;
        const share = server!.completions_per_second / direct!.completions_per_second;
        verdicts.push(
          `${delay} ms between chunks, ${connections} connection(s): TTFT overhead p50 ${overhead.toFixed(2)} ms (target < ${TTFT_OVERHEAD_TARGET_MS}: ${overhead < TTFT_OVERHEAD_TARGET_MS ? 'met' : 'NOT met'}), ` +
            `p99 ${(server!.ttft_ms.p99 - direct!.ttft_ms.p99).toFixed(2)} ms; throughput ${(share * 100).toFixed(0)} % of direct (target ≥ ${THROUGHPUT_TARGET * 100} %: ${share >= THROUGHPUT_TARGET ? 'met' : 'NOT met'})`,
        );
      }
    }
    const report = [
      `# bench:chat, ${new Date().toISOString()}`,
      '',
      `Node ${process.version}, ${cpus().length} cores, load average before ${loadavg()[0]!.toFixed(2)}; ${DURATION} s per case after ${WARMUP} s of warm-up; ${CHUNKS} chunks per completion.`,
      '',
      ...rows,
      '',
      ...verdicts.map((v) => `- ${v}`),
      '',
    ].join('\n');
    process.stdout.write(`\n${report}`);
    mkdirSync(join(root, 'bench', 'results'), { recursive: true });
    const file = join(root, 'bench', 'results', `chat-${new Date().toISOString().replace(/[:.]/g, '-')}.md`);
    writeFileSync(file, report);
    process.stdout.write(`Written to ${file}\n`);
  } finally {
    await cleanUp();
  }
}

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
//
// Two more cases run against a fresh fake and server, BENCH_ROUNDS (3) rounds in which the targets take turns; the
// report gives the median of the rounds and their spread (min–max), the server process's CPU time per request (from
// /proc), and the load average before each round:
// - embeddings: `POST /v1/embeddings` with 16 inputs of about 50 words at 1536 dimensions, answered by the fake's
//   `/v1/embeddings` directly, by the server with `text-embedding-3-small` (the AI SDK's OpenAI provider in front of
//   the fake), the same as base64 (what the openai SDK asks for) and by the server with the built-in
//   `sandbox-embedding` (no upstream); requests a second and latency to the whole answer;
// - tool-calls: a streamed chat completion with `tools` and `tool_choice: 'required'` whose answer is one tool call
//   (the fake streams OpenAI's `tool_calls` deltas for any request with `tools`); time to the first `tool_calls`
//   delta and completions read to `[DONE]` a second. A server that answers 422 to `tools`, or a fake that streams no
//   tool calls, skips the case with a notice.
// - peer: plain (not streamed) completions sent straight to the fake, through the Portkey AI gateway
//   (`@portkey-ai/gateway`, pinned, a dev dependency used only here, its own process on loopback, told the fake's
//   address with its `x-portkey-custom-host` header) and through the server, and streamed ones straight and through
//   the server (Portkey's streams fail on Node: its issues #1389 and #1550). Per target: completions a second, the
//   latency p50 added to the direct call's, and the CPU time per completion of the process in between (server or
//   gateway); the report checks issue 31's targets (added p50 under 1 ms at one connection, plain and streamed; at
//   BENCH_CONNECTIONS, no fewer completions a second and no more CPU per completion than Portkey).
// - processes: plain completions at BENCH_CONNECTIONS connections through one server and through two servers that
//   share a port (REUSE_PORT, the kernel spreading the connections); completions a second, the servers' CPU per
//   completion together, and two's completions a second over one's.
// BENCH_CASES (`streaming,peer,processes,embeddings,tool-calls`) picks the cases.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { COMMAND_LINE_FLAGS } from '../src/platform/collector.ts';
import { type FakeReply, type ReceivedRequest, startFakeOpenAi } from '../test/support/fake-providers.ts';
import {
  cleanUp,
  cleanups,
  cpuMicros,
  freePort,
  portkeyArguments,
  positive,
  root,
  seedWorkspace,
  startProcess,
} from './support.ts';

const DURATION = positive('BENCH_DURATION', 10);
const WARMUP = positive('BENCH_WARMUP', 2, true);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 20);
const KEYS = positive('BENCH_KEYS', 200);
const TTFT_OVERHEAD_TARGET_MS = 5;
const THROUGHPUT_TARGET = 0.5;
/** Milliseconds between the upstream's chunks, one pass each: 0 (an upstream that costs nothing) and a paced one. */
const CHUNK_DELAYS = (process.env.BENCH_CHUNK_DELAYS ?? '0,2').split(',').map(Number);
const PROMPT =
  'Write a short launch announcement for our spring sale on single-origin coffee roasts, with one line on shipping and one on the loyalty discount for members.';
/** The fake's answer is "You said: " and the prompt, one chunk per word. */
const CHUNKS = 2 + PROMPT.split(' ').length;
const ROUNDS = positive('BENCH_ROUNDS', 3);
const CASE_NAMES = ['streaming', 'peer', 'processes', 'embeddings', 'tool-calls'] as const;
type CaseName = (typeof CASE_NAMES)[number];
const CASES = new Set<CaseName>(
  (process.env.BENCH_CASES || CASE_NAMES.join(','))
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean)
    .map((name) => {
      if (!(CASE_NAMES as readonly string[]).includes(name))
        throw new Error(`BENCH_CASES: unknown case ${name}; the cases are ${CASE_NAMES.join(', ')}`);
      return name as CaseName;
    }),
);

/** Sentences of a coffee roaster's help centre and catalogue; each embeddings input is three of them. */
const SENTENCES = [
  'Our single-origin roasts ship within two working days from the Lisbon warehouse, tracked and insured.',
  'Members of the loyalty programme save ten percent on every bag and get free shipping above forty euros.',
  'The Ethiopia Guji is a light roast with notes of bergamot, peach and jasmine, best brewed as pour-over.',
  'Refunds are paid within fourteen days of the return reaching us, to the card used for the order.',
  'Whole beans keep their flavour for about a month once opened; store them in an airtight tin away from light.',
  'A subscription can be paused, skipped or cancelled from the account page at any time before the next roast date.',
  'The Colombia Huila is a medium roast with caramel sweetness and a round body that works well with milk.',
  'Orders placed before noon on a weekday leave the same day; weekend orders leave on Monday morning.',
  'We grind to order for espresso, moka pot, filter, French press and cold brew; choose the grind at checkout.',
  'Gift cards never expire and can be used together with the loyalty discount on the same order.',
  'Decaf is processed with the Swiss Water method, without solvents, and keeps most of the origin character.',
  'Wholesale customers get a dedicated account manager, monthly invoicing and roast profiles made for their machines.',
  'Shipping to the Azores, Madeira and the Canary Islands takes five to seven working days and costs a flat fee.',
  'The spring sale takes twenty percent off every single-origin bag until the end of April, members included.',
  'Our compostable bags have a one-way valve that lets carbon dioxide out and keeps oxygen from getting in.',
  'Tasting notes describe what a careful cup can show; water, grind and freshness change what you will find.',
];
/** 16 inputs of about 50 words (a batch of chunks as a knowledge base embeds them). */
const EMBEDDING_INPUTS = SENTENCES.map((_, i) =>
  [0, 5, 11].map((k) => SENTENCES[(i + k) % SENTENCES.length]).join(' '),
);
/** text-embedding-3-small's full size, asked of every target so that their answers are the same size. */
const EMBEDDING_DIMENSIONS = 1536;

const TOOL_PROMPT = 'Is the Ethiopia Guji in stock at the Lisbon warehouse, and how soon could a bag reach Porto?';
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'check_stock',
      description: 'Stock of a product at one warehouse, and the earliest delivery date to a city.',
      parameters: {
        type: 'object',
        properties: { product: { type: 'string' }, warehouse: { type: 'string' }, ship_to: { type: 'string' } },
        required: ['product', 'warehouse', 'ship_to'],
        additionalProperties: false,
      },
    },
  },
];
const TOOL_ARGUMENTS = JSON.stringify({ product: 'Ethiopia Guji', warehouse: 'Lisbon', ship_to: 'Porto' });

/** The fake's answer to a request with `tools`: a call of its first tool, without text. */
function toolCallReply(body: ReceivedRequest['body']): FakeReply | undefined {
  const name: unknown = body?.tools?.[0]?.function?.name;
  if (typeof name !== 'string') return undefined;
  return { toolCalls: [{ name, arguments: TOOL_ARGUMENTS }] };
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

const CHAT_BODY = JSON.stringify({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content: PROMPT }],
  stream: true,
  stream_options: { include_usage: true },
});
/** The first text: a content that is not empty (OpenAI's first chunk names the role with an empty content). */
const FIRST_CONTENT = /"content":"[^"]/;
const FIRST_TOOL_CALL = /"tool_calls":\[/;

function post(
  agent: http.Agent,
  url: string,
  secret: string,
  body: string,
  onResponse: (response: http.IncomingMessage) => void,
  onError: (error: Error) => void,
  headers: Record<string, string> = {},
): void {
  const target = new URL(url);
  const request = http.request(
    {
      agent,
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(body),
        Authorization: `Bearer ${secret}`,
        ...headers,
      },
    },
    onResponse,
  );
  request.on('error', onError);
  request.end(body);
}

/** One streamed answer: resolves with the time to the first data matching `first`, after reading it to [DONE]. */
function streamOnce(
  agent: http.Agent,
  url: string,
  secret: string,
  body = CHAT_BODY,
  first = FIRST_CONTENT,
  headers: Record<string, string> = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let firstSeen = NaN;
    let tail = '';
    post(
      agent,
      url,
      secret,
      body,
      (response) => {
        if (response.statusCode !== 200) {
          response.resume();
          return reject(new Error(`status ${response.statusCode}`));
        }
        response.setEncoding('utf8');
        response.on('data', (text: string) => {
          if (Number.isNaN(firstSeen) && first.test(text)) firstSeen = performance.now() - started;
          tail = (tail + text).slice(-64);
        });
        response.on('end', () => {
          if (!tail.includes('data: [DONE]')) reject(new Error('the stream ended without [DONE]'));
          else if (Number.isNaN(firstSeen)) reject(new Error(`the stream had no data matching ${first}`));
          else resolve(firstSeen);
        });
        response.on('error', reject);
      },
      reject,
      headers,
    );
  });
}

/** One request answered as a whole: resolves with the time to its last byte (status 200 only). */
function requestOnce(
  agent: http.Agent,
  url: string,
  secret: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    post(
      agent,
      url,
      secret,
      body,
      (response) => {
        response.resume();
        if (response.statusCode !== 200) return reject(new Error(`status ${response.statusCode}`));
        response.on('end', () => resolve(performance.now() - started));
        response.on('error', reject);
      },
      reject,
      headers,
    );
  });
}

interface Drive {
  /** What each call resolved with, sorted. */
  times: number[];
  failures: number;
  /** The first failure's message, to show why. */
  firstFailure: string | undefined;
  seconds: number;
}

/** `connections` loops calling `once` with the keys in turn until `seconds` have passed. */
async function drive(
  connections: number,
  seconds: number,
  secrets: string[],
  once: (agent: http.Agent, secret: string) => Promise<number>,
): Promise<Drive> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const times: number[] = [];
  let failures = 0;
  let firstFailure: string | undefined;
  let next = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < deadline) {
        try {
          times.push(await once(agent, secrets[next++ % secrets.length]!));
        } catch (error) {
          failures += 1;
          firstFailure ??= error instanceof Error ? error.message : String(error);
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  times.sort((a, b) => a - b);
  return { times, failures, firstFailure, seconds: elapsed };
}

async function load(target: Target, connections: number, seconds: number): Promise<Result> {
  const {
    times: ttfts,
    failures,
    seconds: elapsed,
  } = await drive(connections, seconds, target.secrets, (agent, secret) => streamOnce(agent, target.url, secret));
  return {
    target: target.name,
    connections,
    completions_per_second: Math.round(ttfts.length / elapsed),
    ttft_ms: { p50: Number(percentile(ttfts, 50).toFixed(2)), p99: Number(percentile(ttfts, 99).toFixed(2)) },
    completions: ttfts.length,
    failures,
  };
}

interface Upstream {
  /** The fake's base URL (`…/v1`). */
  fakeUrl: string;
  serverUrl: string;
  /** The server's process id. */
  pid: number;
  stop: () => Promise<void>;
}

/**
 * A server process in front of the fake, at `serverUrl`; it shares the port with the other servers started on it
 * (REUSE_PORT).
 */
function startServer(serverUrl: string, fakeUrl: string, databaseUrl: string) {
  // BENCH_NODE_ARGS: extra Node options for the server, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  return startProcess(
    'server',
    process.execPath,
    [...COMMAND_LINE_FLAGS, ...nodeArgs, 'src/main.ts'],
    {
      HOST: '127.0.0.1',
      PORT: new URL(serverUrl).port,
      REUSE_PORT: 'true',
      PUBLIC_BASE_URL: serverUrl,
      DATABASE_URL: databaseUrl,
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      REDIS_URL: '',
      OPENAI_API_KEY: 'sk-bench',
      OPENAI_BASE_URL: fakeUrl,
      PROVIDER_MAX_RETRIES: '0',
    },
    serverUrl,
    '/readyz',
  );
}

/** The fake in a worker thread, pacing its chunks `chunkDelayMs` apart, and a server in front of it. */
async function startUpstream(chunkDelayMs: number, databaseUrl: string): Promise<Upstream> {
  const worker = new Worker(new URL(import.meta.url), { workerData: chunkDelayMs });
  const fakeUrl = await new Promise<string>((resolve, reject) => worker.once('message', resolve).once('error', reject));
  const serverUrl = `http://127.0.0.1:${await freePort()}`;
  const stopServer = await startServer(serverUrl, fakeUrl, databaseUrl).catch(async (error: unknown) => {
    await worker.terminate();
    throw error;
  });
  return {
    fakeUrl,
    serverUrl,
    pid: stopServer.pid,
    stop: async () => {
      // Stopped with SIGTERM, so that it exits as in production (and writes its profile with BENCH_NODE_ARGS).
      await stopServer();
      await worker.terminate();
    },
  };
}

/** One pass: an upstream pacing its chunks `chunkDelayMs` apart, a server in front of it, every case. */
async function pass(chunkDelayMs: number, databaseUrl: string, secrets: string[]): Promise<Result[]> {
  const { fakeUrl, serverUrl, stop } = await startUpstream(chunkDelayMs, databaseUrl);
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
        process.stdout.write(
          `${chunkDelayMs} ms between chunks, ${target.name}, ${connections} connection(s): ${result.completions_per_second}/s, first token p50 ${result.ttft_ms.p50} ms p99 ${result.ttft_ms.p99} ms, ${result.failures} failures\n`,
        );
      }
    }
    return results;
  } finally {
    await stop();
  }
}

/** The streaming cases' report: one round per upstream pace, against issue 10's targets. */
function streamingReport(results: Result[]): string[] {
  const rows: string[] = [
    '| ms between chunks | connections | target | completions/s | TTFT p50 ms | TTFT p99 ms | failures |',
    '|--:|--:|---|--:|--:|--:|--:|',
  ];
  const verdicts: string[] = [];
  for (const delay of CHUNK_DELAYS) {
    for (const connections of [...new Set([1, CONNECTIONS])]) {
      const [direct, server] = results.filter((r) => r.connections === connections && r.chunk_delay_ms === delay);
      for (const r of [direct!, server!])
        rows.push(
          `| ${delay} | ${connections} | ${r.target} | ${r.completions_per_second} | ${r.ttft_ms.p50} | ${r.ttft_ms.p99} | ${r.failures} |`,
        );
      const overhead = server!.ttft_ms.p50 - direct!.ttft_ms.p50;
      const share = server!.completions_per_second / direct!.completions_per_second;
      verdicts.push(
        `${delay} ms between chunks, ${connections} connection(s): TTFT overhead p50 ${overhead.toFixed(2)} ms (target < ${TTFT_OVERHEAD_TARGET_MS}: ${overhead < TTFT_OVERHEAD_TARGET_MS ? 'met' : 'NOT met'}), ` +
          `p99 ${(server!.ttft_ms.p99 - direct!.ttft_ms.p99).toFixed(2)} ms; throughput ${(share * 100).toFixed(0)} % of direct (target ≥ ${THROUGHPUT_TARGET * 100} %: ${share >= THROUGHPUT_TARGET ? 'met' : 'NOT met'})`,
      );
    }
  }
  return [
    `Node ${process.version}, ${cpus().length} cores, load average before ${loadavg()[0]!.toFixed(2)}; ${DURATION} s per case after ${WARMUP} s of warm-up; ${CHUNKS} chunks per completion.`,
    '',
    ...rows,
    '',
    ...verdicts.map((v) => `- ${v}`),
    '',
  ];
}

// --------------------------------------------------------------------------- the embeddings and tool-call cases

type RoundCase = Exclude<CaseName, 'streaming'>;

interface RoundTarget {
  case: RoundCase;
  name: string;
  url: string;
  secrets: string[];
  body: string;
  /** Whether the answer is streamed (the latency is then the time to the first content, or tool-call, delta). */
  streamed: boolean;
  /** Headers beside the key (the Portkey gateway's provider and custom host). */
  headers?: Record<string, string>;
  /**
   * The processes whose CPU time per request is reported, summed: the server's (or servers') or the gateway's (the
   * fake shares this process).
   */
  pids?: number[];
}

interface Measurement {
  case: RoundCase;
  target: string;
  connections: number;
  round: number;
  perSecond: number;
  p50: number;
  p99: number;
  cpuMicrosPerRequest: number | undefined;
  failures: number;
  firstFailure: string | undefined;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

function embeddingsBody(model: string, encoding: 'float' | 'base64' = 'float'): string {
  return JSON.stringify({
    model,
    input: EMBEDDING_INPUTS,
    dimensions: EMBEDDING_DIMENSIONS,
    encoding_format: encoding,
  });
}

const TOOL_BODY = JSON.stringify({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content: TOOL_PROMPT }],
  tools: TOOLS,
  tool_choice: 'required',
  stream: true,
  stream_options: { include_usage: true },
});

const PLAIN_BODY = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: PROMPT }] });

function once(target: RoundTarget): (agent: http.Agent, secret: string) => Promise<number> {
  if (!target.streamed) return (agent, secret) => requestOnce(agent, target.url, secret, target.body, target.headers);
  const first = target.case === 'tool-calls' ? FIRST_TOOL_CALL : FIRST_CONTENT;
  return (agent, secret) => streamOnce(agent, target.url, secret, target.body, first, target.headers);
}

async function measure(target: RoundTarget, connections: number, round: number): Promise<Measurement> {
  if (WARMUP > 0) await drive(connections, WARMUP, target.secrets, once(target));
  const cpuOf = (pids: number[] | undefined) =>
    pids?.reduce<number | undefined>((sum, pid) => {
      const micros = cpuMicros(pid);
      return sum === undefined || micros === undefined ? undefined : sum + micros;
    }, 0);
  const cpuBefore = cpuOf(target.pids);
  const result = await drive(connections, DURATION, target.secrets, once(target));
  const cpuAfter = cpuOf(target.pids);
  const measurement: Measurement = {
    case: target.case,
    target: target.name,
    connections,
    round,
    perSecond: result.times.length / result.seconds,
    p50: percentile(result.times, 50),
    p99: percentile(result.times, 99),
    cpuMicrosPerRequest:
      cpuBefore !== undefined && cpuAfter !== undefined && result.times.length > 0
        ? (cpuAfter - cpuBefore) / result.times.length
        : undefined,
    failures: result.failures,
    firstFailure: result.firstFailure,
  };
  process.stdout.write(
    `round ${round}, ${target.case}, ${target.name}, ${connections} connection(s): ${measurement.perSecond.toFixed(0)}/s, p50 ${measurement.p50.toFixed(2)} ms p99 ${measurement.p99.toFixed(2)} ms` +
      `${measurement.cpuMicrosPerRequest === undefined ? '' : `, ${measurement.cpuMicrosPerRequest.toFixed(0)} µs CPU/request`}, ${measurement.failures} failures${result.firstFailure ? ` (first: ${result.firstFailure})` : ''}\n`,
  );
  return measurement;
}

/** One plain completion through `target`, parsed: the fake's answer ("You said: " and the prompt), or an error. */
async function checkCompletion(target: RoundTarget): Promise<void> {
  const response = await fetch(target.url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${target.secrets[0]}`, ...target.headers },
    body: target.body,
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${target.name} answered ${response.status}: ${text.slice(0, 500)}`);
  if (target.streamed) {
    if (!text.trimEnd().endsWith('data: [DONE]')) throw new Error(`${target.name}'s stream ended without [DONE]`);
    return;
  }
  const content: unknown = (JSON.parse(text) as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]
    ?.message?.content;
  if (content !== `You said: ${PROMPT}`) throw new Error(`${target.name} answered ${JSON.stringify(content)}`);
}

/** The Portkey gateway (`@portkey-ai/gateway`, a dev dependency used only here) as its own process, in production mode
 *  (no log console). */
async function startPortkey(): Promise<{ url: string; pid: number; stop: () => Promise<void> }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const stop = await startProcess(
    'the Portkey gateway',
    process.execPath,
    portkeyArguments(port),
    { NODE_ENV: 'production' },
    url,
    '/',
  );
  return { url, pid: stop.pid, stop };
}

/** One embeddings request, parsed: 16 vectors of EMBEDDING_DIMENSIONS, or an error saying what came instead. */
async function checkEmbeddings(target: RoundTarget): Promise<void> {
  const response = await fetch(target.url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${target.secrets[0]}` },
    body: target.body,
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${target.name} answered ${response.status}: ${text.slice(0, 500)}`);
  const body = JSON.parse(text) as { data?: { embedding?: unknown }[] };
  // A base64 vector is float32: 4 bytes a dimension.
  const sizes = (body.data ?? []).map((item) =>
    Array.isArray(item.embedding)
      ? item.embedding.length
      : typeof item.embedding === 'string'
        ? Buffer.from(item.embedding, 'base64').length / 4
        : 0,
  );
  if (sizes.length !== EMBEDDING_INPUTS.length || sizes.some((size) => size !== EMBEDDING_DIMENSIONS))
    throw new Error(`${target.name} answered ${sizes.length} vectors of ${[...new Set(sizes)].join(', ')} dimensions`);
}

/**
 * One tool-call stream, read whole: the call's name and its arguments put together from the deltas, or why the case
 * cannot run (a server that refuses `tools`, or an answer without a call).
 */
async function checkToolCall(target: RoundTarget): Promise<string | undefined> {
  const response = await fetch(target.url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${target.secrets[0]}` },
    body: target.body,
  });
  const text = await response.text();
  if (response.status === 422) {
    const problem = JSON.parse(text) as { code?: string; errors?: { pointer?: string; detail?: string }[] };
    return `${target.name} answered 422 ${problem.code ?? ''} to \`tools\` (${(problem.errors ?? []).map((error) => `${error.pointer} ${error.detail}`).join('; ')})`;
  }
  if (response.status !== 200) throw new Error(`${target.name} answered ${response.status}: ${text.slice(0, 500)}`);
  let name = '';
  let args = '';
  for (const frame of text.split('\n\n')) {
    if (!frame.startsWith('data: {')) continue;
    const chunk = JSON.parse(frame.slice('data: '.length)) as {
      choices?: { delta?: { tool_calls?: { function?: { name?: string; arguments?: string } }[] } }[];
    };
    for (const call of chunk.choices?.[0]?.delta?.tool_calls ?? []) {
      name += call.function?.name ?? '';
      args += call.function?.arguments ?? '';
    }
  }
  if (name === '')
    return `${target.name} streamed no tool call (${text.length} bytes, ending ${JSON.stringify(text.slice(-80))})`;
  if (name !== TOOLS[0]!.function.name || JSON.stringify(JSON.parse(args)) !== TOOL_ARGUMENTS)
    throw new Error(
      `${target.name} streamed the call ${name}(${args}), not ${TOOLS[0]!.function.name}(${TOOL_ARGUMENTS})`,
    );
  if (!text.trimEnd().endsWith('data: [DONE]')) throw new Error(`${target.name}'s stream ended without [DONE]`);
  return undefined;
}

interface RoundsOutcome {
  measurements: Measurement[];
  loadAverages: number[];
  /** Why a case did not run. */
  skipped: Map<RoundCase, string>;
}

/** The embeddings and tool-call cases: a fresh fake and server, BENCH_ROUNDS rounds in which the targets take turns. */
async function rounds(databaseUrl: string, secrets: string[]): Promise<RoundsOutcome> {
  const { fakeUrl, serverUrl, pid, stop } = await startUpstream(0, databaseUrl);
  const skipped = new Map<RoundCase, string>();
  const shared: Array<Awaited<ReturnType<typeof startServer>>> = [];
  const portkey = CASES.has('peer')
    ? await startPortkey().catch(async (error: unknown) => {
        await stop();
        throw error;
      })
    : undefined;
  try {
    const targets: RoundTarget[] = [];
    if (portkey) {
      // Portkey forwards to OpenAI's API at a custom host (loopback hosts are trusted by default), with the caller's key.
      const headers = { 'x-portkey-provider': 'openai', 'x-portkey-custom-host': fakeUrl };
      const chat = `${serverUrl}/v1/chat/completions`;
      const peer: RoundTarget[] = [
        {
          case: 'peer',
          name: PEER.direct,
          url: `${fakeUrl}/chat/completions`,
          secrets: ['sk-bench'],
          body: PLAIN_BODY,
          streamed: false,
        },
        {
          case: 'peer',
          name: PEER.portkey,
          url: `${portkey.url}/v1/chat/completions`,
          secrets: ['sk-bench'],
          body: PLAIN_BODY,
          streamed: false,
          headers,
          pids: [portkey.pid],
        },
        { case: 'peer', name: PEER.server, url: chat, secrets, body: PLAIN_BODY, streamed: false, pids: [pid] },
        {
          case: 'peer',
          name: PEER.directStreamed,
          url: `${fakeUrl}/chat/completions`,
          secrets: ['sk-bench'],
          body: CHAT_BODY,
          streamed: true,
        },
        { case: 'peer', name: PEER.serverStreamed, url: chat, secrets, body: CHAT_BODY, streamed: true, pids: [pid] },
      ];
      for (const target of peer) await checkCompletion(target);
      targets.push(...peer);
    }
    if (CASES.has('processes')) {
      // Two more servers sharing a port of their own: the kernel spreads the connections between them.
      const sharedUrl = `http://127.0.0.1:${await freePort()}`;
      for (let i = 0; i < 2; i++) {
        shared.push(await startServer(sharedUrl, fakeUrl, databaseUrl));
        await everyServerReady(sharedUrl);
      }
      const processes: RoundTarget[] = [
        {
          case: 'processes',
          name: PROCESSES.one,
          url: `${serverUrl}/v1/chat/completions`,
          secrets,
          body: PLAIN_BODY,
          streamed: false,
          pids: [pid],
        },
        {
          case: 'processes',
          name: PROCESSES.two,
          url: `${sharedUrl}/v1/chat/completions`,
          secrets,
          body: PLAIN_BODY,
          streamed: false,
          pids: shared.map((server) => server.pid),
        },
      ];
      for (const target of processes) await checkCompletion(target);
      targets.push(...processes);
    }
    if (CASES.has('embeddings')) {
      const embeddings: RoundTarget[] = [
        {
          case: 'embeddings',
          name: 'direct (fake upstream)',
          url: `${fakeUrl}/embeddings`,
          secrets: ['sk-bench'],
          body: embeddingsBody('text-embedding-3-small'),
          streamed: false,
        },
        {
          case: 'embeddings',
          name: 'server, text-embedding-3-small → fake upstream',
          url: `${serverUrl}/v1/embeddings`,
          secrets,
          body: embeddingsBody('text-embedding-3-small'),
          streamed: false,
          pids: [pid],
        },
        {
          case: 'embeddings',
          name: 'server, sandbox-embedding (built in)',
          url: `${serverUrl}/v1/embeddings`,
          secrets,
          body: embeddingsBody('sandbox-embedding'),
          streamed: false,
          pids: [pid],
        },
        // What the openai SDK asks for by default: the same vectors as base64 of float32, a quarter of the JSON.
        {
          case: 'embeddings',
          name: 'server, text-embedding-3-small as base64 → fake upstream',
          url: `${serverUrl}/v1/embeddings`,
          secrets,
          body: embeddingsBody('text-embedding-3-small', 'base64'),
          streamed: false,
          pids: [pid],
        },
      ];
      for (const target of embeddings) await checkEmbeddings(target);
      targets.push(...embeddings);
    }
    if (CASES.has('tool-calls')) {
      const tools: RoundTarget[] = [
        {
          case: 'tool-calls',
          name: 'direct (fake upstream)',
          url: `${fakeUrl}/chat/completions`,
          secrets: ['sk-bench'],
          body: TOOL_BODY,
          streamed: true,
        },
        {
          case: 'tool-calls',
          name: 'server → fake upstream',
          url: `${serverUrl}/v1/chat/completions`,
          secrets,
          body: TOOL_BODY,
          streamed: true,
          pids: [pid],
        },
      ];
      const problems = (await Promise.all(tools.map(checkToolCall))).filter(
        (problem): problem is string => problem !== undefined,
      );
      if (problems.length > 0) {
        skipped.set('tool-calls', problems.join('; '));
        process.stdout.write(`NOTICE: the tool-call case is skipped: ${problems.join('; ')}\n`);
      } else {
        targets.push(...tools);
      }
    }
    const measurements: Measurement[] = [];
    const loadAverages: number[] = [];
    for (let round = 1; round <= (targets.length > 0 ? ROUNDS : 0); round++) {
      loadAverages.push(Number(loadavg()[0]!.toFixed(2)));
      for (const connections of [...new Set([1, CONNECTIONS])])
        for (const target of targets) {
          // Processes share the load of many connections; one connection is served by one of them.
          if (target.case === 'processes' && connections === 1) continue;
          measurements.push(await measure(target, connections, round));
        }
    }
    return { measurements, loadAverages, skipped };
  } finally {
    await portkey?.stop();
    for (const server of shared) await server();
    await stop();
  }
}

const spread = (values: number[], digits: number) =>
  `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`;

/** One case's table: per connections and target, the medians of the rounds, their spread, and p50 over the direct call's. */
function roundsTable(measurements: Measurement[], rate: string, latency: string): string[] {
  const rows = [
    `| connections | target | ${rate} median (min–max) | ${latency} p50 ms median (min–max) | p99 ms median | p50 − direct ms | server CPU µs/request | failures |`,
    '|--:|---|--:|--:|--:|--:|--:|--:|',
  ];
  for (const connections of [...new Set([1, CONNECTIONS])]) {
    const groups = new Map<string, Measurement[]>();
    for (const m of measurements.filter((m) => m.connections === connections))
      groups.set(m.target, [...(groups.get(m.target) ?? []), m]);
    const directP50 = median(groups.get('direct (fake upstream)')?.map((m) => m.p50) ?? [NaN]);
    for (const [target, group] of groups) {
      const p50 = median(group.map((m) => m.p50));
      const cpu = group.every((m) => m.cpuMicrosPerRequest !== undefined)
        ? median(group.map((m) => m.cpuMicrosPerRequest!)).toFixed(0)
        : '–';
      const overhead = target.startsWith('direct') || Number.isNaN(directP50) ? '–' : (p50 - directP50).toFixed(2);
      const failures = group.reduce((sum, m) => sum + m.failures, 0);
      rows.push(
        `| ${connections} | ${target} | ${spread(
          group.map((m) => m.perSecond),
          0,
        )} | ${spread(
          group.map((m) => m.p50),
          2,
        )} | ${median(group.map((m) => m.p99)).toFixed(2)} | ${overhead} | ${cpu} | ${failures} |`,
      );
    }
  }
  return rows;
}

const PEER = {
  direct: 'direct (fake upstream), plain',
  portkey: 'Portkey gateway 1.15.2 → fake upstream, plain',
  server: 'server → fake upstream, plain',
  directStreamed: 'direct (fake upstream), streamed',
  serverStreamed: 'server → fake upstream, streamed',
};
/** Issue 31's targets: added latency at one connection, and the peer's throughput and CPU per completion. */
const ADDED_MS_TARGET = 1;

/** The peer case's table and its verdicts against issue 31's targets. */
function peerReport(measurements: Measurement[]): string[] {
  const rows = [
    '| connections | target | completions/s median (min–max) | p50 ms median (min–max) | p99 ms | added p50 ms | process CPU µs/completion median (min–max) | failures |',
    '|--:|---|--:|--:|--:|--:|--:|--:|',
  ];
  const at = (connections: number, target: string) =>
    measurements.filter((m) => m.connections === connections && m.target === target);
  const p50 = (connections: number, target: string) => median(at(connections, target).map((m) => m.p50));
  const cpu = (connections: number, target: string) =>
    median(at(connections, target).map((m) => m.cpuMicrosPerRequest ?? NaN));
  const rate = (connections: number, target: string) => median(at(connections, target).map((m) => m.perSecond));
  for (const connections of [...new Set([1, CONNECTIONS])]) {
    for (const target of Object.values(PEER)) {
      const group = at(connections, target);
      if (group.length === 0) continue;
      const direct = target.endsWith('streamed') ? PEER.directStreamed : PEER.direct;
      const added = target.startsWith('direct')
        ? '–'
        : (p50(connections, target) - p50(connections, direct)).toFixed(2);
      const cpus = group.map((m) => m.cpuMicrosPerRequest);
      const cpuCell = cpus.every((c) => c !== undefined) ? spread(cpus as number[], 0) : '–';
      rows.push(
        `| ${connections} | ${target} | ${spread(
          group.map((m) => m.perSecond),
          0,
        )} | ${spread(
          group.map((m) => m.p50),
          2,
        )} | ${median(group.map((m) => m.p99)).toFixed(2)} | ${added} | ${cpuCell} | ${group.reduce((sum, m) => sum + m.failures, 0)} |`,
      );
    }
  }
  const addedPlain = p50(1, PEER.server) - p50(1, PEER.direct);
  const addedPortkey = p50(1, PEER.portkey) - p50(1, PEER.direct);
  const addedStreamed = p50(1, PEER.serverStreamed) - p50(1, PEER.directStreamed);
  const ours = cpu(CONNECTIONS, PEER.server);
  const theirs = cpu(CONNECTIONS, PEER.portkey);
  const verdict = (met: boolean) => (met ? 'met' : 'NOT met');
  return [
    ...rows,
    '',
    `- added latency p50 at 1 connection, plain: ${addedPlain.toFixed(2)} ms (Portkey ${addedPortkey.toFixed(2)} ms; target < ${ADDED_MS_TARGET} ms: ${verdict(addedPlain < ADDED_MS_TARGET)})`,
    `- added time to first token p50 at 1 connection, streamed: ${addedStreamed.toFixed(2)} ms (target < ${ADDED_MS_TARGET} ms: ${verdict(addedStreamed < ADDED_MS_TARGET)})`,
    `- plain completions/s at ${CONNECTIONS} connections: ${rate(CONNECTIONS, PEER.server).toFixed(0)} against Portkey's ${rate(CONNECTIONS, PEER.portkey).toFixed(0)} (target ≥ Portkey's: ${verdict(rate(CONNECTIONS, PEER.server) >= rate(CONNECTIONS, PEER.portkey))})`,
    `- process CPU per plain completion at ${CONNECTIONS} connections: ${ours.toFixed(0)} µs against Portkey's ${theirs.toFixed(0)} µs (target ≤ Portkey's: ${verdict(ours <= theirs)})`,
  ];
}

/**
 * Waits (bounded) until 20 requests in a row to `/readyz`, each on a new connection, answer 200. The kernel gives each
 * new connection to one of the servers on the port, so a server still starting answers one of them otherwise (or
 * holds it), and the first server's answer alone says nothing of the second's.
 */
async function everyServerReady(url: string): Promise<void> {
  const deadline = Date.now() + 90_000;
  for (let inRow = 0; inRow < 20; ) {
    if (Date.now() > deadline) throw new Error(`the servers at ${url} were not all ready within 90 s`);
    const status = await new Promise<number>((resolve) => {
      http
        .get(`${url}/readyz`, { agent: false }, (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        })
        .once('error', () => resolve(0));
    });
    inRow = status === 200 ? inRow + 1 : 0;
    if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const PROCESSES = {
  one: 'one server → fake upstream',
  two: 'two servers on one port → fake upstream',
};

/** The processes case's table, and the completions a second of two servers over one's in each round. */
function processesReport(measurements: Measurement[]): string[] {
  if (measurements.length === 0) return ['Skipped: one connection is served by one server (BENCH_CONNECTIONS is 1).'];
  const of = (target: string) => measurements.filter((m) => m.target === target);
  const ratios = of(PROCESSES.two).map(
    (two) => two.perSecond / of(PROCESSES.one).find((one) => one.round === two.round)!.perSecond,
  );
  return [
    ...roundsTable(measurements, 'completions/s', 'latency').filter((row) => !row.startsWith('| 1 |')),
    '',
    `- two servers' completions/s over one's: ${spread(ratios, 2)} (${cpus().length} cores, shared with the benchmark and the fake upstream)`,
  ];
}

function roundsReport(outcome: RoundsOutcome): string[] {
  const lines: string[] = [];
  const intro = `Medians of ${ROUNDS} rounds (the targets take turns within a round; the spread is the rounds' min–max), ${DURATION} s per target after ${WARMUP} s of warm-up; load average before each round: ${outcome.loadAverages.join(', ') || '–'}. CPU is the server process's own, from /proc.`;
  if (CASES.has('peer')) {
    lines.push(
      `## Peer: plain completions (gpt-4o-mini, ${CHUNKS} words) through the Portkey gateway and through this server`,
      '',
    );
    lines.push(
      intro.replace(
        `CPU is the server process's own`,
        `CPU is each process's own (the server's, the gateway's; the fake shares the benchmark's process)`,
      ),
      '',
    );
    lines.push(...peerReport(outcome.measurements.filter((m) => m.case === 'peer')), '');
  }
  if (CASES.has('processes')) {
    lines.push(
      `## Processes: plain completions at ${CONNECTIONS} connections, one server and two servers sharing a port (REUSE_PORT)`,
      '',
      intro.replace(`CPU is the server process's own`, `CPU is the servers' together`),
      '',
      ...processesReport(outcome.measurements.filter((m) => m.case === 'processes')),
      '',
    );
  }
  if (CASES.has('embeddings')) {
    lines.push(
      `## Embeddings: ${EMBEDDING_INPUTS.length} inputs of about ${Math.round(EMBEDDING_INPUTS.reduce((sum, input) => sum + input.split(' ').length, 0) / EMBEDDING_INPUTS.length)} words, ${EMBEDDING_DIMENSIONS} dimensions`,
      '',
      intro,
      '',
    );
    lines.push(
      ...roundsTable(
        outcome.measurements.filter((m) => m.case === 'embeddings'),
        'requests/s',
        'latency',
      ),
      '',
    );
  }
  if (CASES.has('tool-calls')) {
    lines.push(
      `## Tool calls: a streamed completion answered by one call of \`${TOOLS[0]!.function.name}\` (\`tool_choice: 'required'\`)`,
      '',
    );
    const reason = outcome.skipped.get('tool-calls');
    if (reason) lines.push(`Skipped: ${reason}`, '');
    else
      lines.push(
        intro,
        '',
        ...roundsTable(
          outcome.measurements.filter((m) => m.case === 'tool-calls'),
          'completions/s',
          'first tool-call delta',
        ),
        '',
      );
  }
  return lines;
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'content-service-bench-chat-'));
  cleanups.push(async () => rmSync(work, { recursive: true, force: true }));
  process.once('SIGINT', () => void cleanUp().finally(() => process.exit(130)));
  try {
    const databaseUrl = `sqlite:${join(work, 'bench.db')}`;
    const secrets = await seedWorkspace(databaseUrl, KEYS, 'editor');
    const sections: string[] = [`# bench:chat, ${new Date().toISOString()}`, ''];
    if (CASES.has('streaming')) {
      const results: Result[] = [];
      for (const delay of CHUNK_DELAYS) results.push(...(await pass(delay, databaseUrl, secrets)));
      sections.push(...streamingReport(results));
    }
    if (CASES.has('peer') || CASES.has('processes') || CASES.has('embeddings') || CASES.has('tool-calls'))
      sections.push(...roundsReport(await rounds(databaseUrl, secrets)));
    const report = sections.join('\n');
    process.stdout.write(`\n${report}`);
    mkdirSync(join(root, 'bench', 'results'), { recursive: true });
    const file = join(root, 'bench', 'results', `chat-${new Date().toISOString().replace(/[:.]/g, '-')}.md`);
    writeFileSync(file, report);
    process.stdout.write(`Written to ${file}\n`);
  } finally {
    await cleanUp();
  }
}

// Last, once every constant above is set: this module is the benchmark in the main thread and the fake upstream in
// its worker.
if (!isMainThread) {
  const fake = await startFakeOpenAi({ chunkDelayMs: workerData as number, reply: toolCallReply });
  // The fake records every request; under load only the recent ones are kept.
  setInterval(() => (fake.requests.length = 0), 1000).unref();
  parentPort!.postMessage(fake.url);
} else {
  await main();
}

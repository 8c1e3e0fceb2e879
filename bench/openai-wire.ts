// `npm run bench:openai-wire`: the CPU a Chat Completions client spends on one completion, the engine's lean client
// (src/features/engine/providers/openai-wire/) against the official package it stands in for (@ai-sdk/openai's chat
// model), with nothing else around them: no server, no HTTP of ours, no database. Not part of `npm test`.
//
// The upstream is the tests' fake OpenAI (test/support/fake-providers.ts) in a worker thread: its default answer to
// the prompt below is 30 chunks and the usage chunk. The main thread calls each model's `doGenerate` (plain) and
// `doStream` read to its end (streamed) through upstreamFetch, as the engine does, BENCH_CONNECTIONS (20) calls at a
// time for BENCH_DURATION seconds (5) after BENCH_WARMUP (1), in BENCH_ROUNDS (3) rounds in which the clients take
// turns. The figure is the main thread's own CPU time per completion (`process.threadCpuUsage`), so the fake's work
// and the machine's other load do not count; the report gives the median of the rounds and their min–max.
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModelV4, LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { wireChatModel } from '../src/features/engine/providers/openai-wire/index.ts';
import { upstreamFetch } from '../src/features/engine/providers/upstream-fetch.ts';
import { startFakeOpenAi } from '../test/support/fake-providers.ts';
import { positive } from './support.ts';

const DURATION = positive('BENCH_DURATION', 5);
const WARMUP = positive('BENCH_WARMUP', 1, true);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 20);
const ROUNDS = positive('BENCH_ROUNDS', 3);
const PROMPT =
  'Write a short launch announcement for our spring sale on single-origin coffee roasts, with one line on shipping and one on the loyalty discount for members.';

const call: LanguageModelV4CallOptions = {
  prompt: [{ role: 'user', content: [{ type: 'text', text: PROMPT }] }],
  maxOutputTokens: 200,
};

/** Completions of `once` for `seconds`, `CONNECTIONS` at a time; the main thread's CPU µs per completion. */
async function measure(once: () => Promise<void>, seconds: number): Promise<{ perSecond: number; cpuMicros: number }> {
  let done = 0;
  const end = performance.now() + seconds * 1000;
  const cpu = process.threadCpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < end) {
        await once();
        done++;
      }
    }),
  );
  const used = process.threadCpuUsage(cpu);
  return {
    perSecond: done / ((performance.now() - started) / 1000),
    cpuMicros: (used.user + used.system) / Math.max(1, done),
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const worker = new Worker(new URL(import.meta.url));
  const fakeUrl = await new Promise<string>((resolve, reject) => worker.once('message', resolve).once('error', reject));
  const clients: { name: string; model: LanguageModelV4 }[] = [
    {
      name: '@ai-sdk/openai (chat)',
      model: createOpenAI({ baseURL: fakeUrl, apiKey: 'bench', fetch: upstreamFetch }).chat('gpt-4o-mini'),
    },
    {
      name: 'lean client (openai-wire)',
      model: wireChatModel('openai', { baseUrl: fakeUrl, apiKey: 'bench' }, 'gpt-4o-mini'),
    },
  ];
  const modes = {
    plain: async (model: LanguageModelV4) => {
      await model.doGenerate(call);
    },
    streamed: async (model: LanguageModelV4) => {
      const { stream } = await model.doStream(call);
      for await (const _part of stream);
    },
  };
  const results = new Map<string, { perSecond: number; cpuMicros: number }[]>();
  const loads: string[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    loads.push(loadavg()[0]!.toFixed(2));
    for (const [mode, once] of Object.entries(modes))
      for (const { name, model } of clients) {
        if (WARMUP > 0) await measure(() => once(model), WARMUP);
        const result = await measure(() => once(model), DURATION);
        const key = `${mode}\t${name}`;
        results.set(key, [...(results.get(key) ?? []), result]);
        process.stdout.write(
          `round ${round}, ${mode}, ${name}: ${result.perSecond.toFixed(0)}/s, ${result.cpuMicros.toFixed(0)} µs CPU/completion\n`,
        );
      }
  }
  await worker.terminate();
  const lines = [
    `Medians of ${ROUNDS} rounds (min–max), ${CONNECTIONS} calls at a time, ${DURATION} s each; load average before each round: ${loads.join(', ')}.`,
    '',
    '| completion | client | client CPU µs/completion | completions/s |',
    '|---|---|--:|--:|',
  ];
  for (const [key, runs] of results) {
    const [mode, name] = key.split('\t');
    const cpu = runs.map((run) => run.cpuMicros);
    lines.push(
      `| ${mode} | ${name} | ${median(cpu).toFixed(0)} (${Math.min(...cpu).toFixed(0)}–${Math.max(...cpu).toFixed(0)}) | ${median(runs.map((run) => run.perSecond)).toFixed(0)} |`,
    );
  }
  process.stdout.write(`\n${lines.join('\n')}\n`);
}

if (!isMainThread) {
  const fake = await startFakeOpenAi();
  // The fake records every request; only the recent ones are kept.
  setInterval(() => (fake.requests.length = 0), 1000).unref();
  parentPort!.postMessage(fake.url);
} else {
  await main();
}

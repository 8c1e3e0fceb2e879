// The fake upstreams (test/support/fake-providers.ts) are faithful: the real provider packages (@ai-sdk/openai's Chat
// Completions and Responses models, @ai-sdk/anthropic, @ai-sdk/openai-compatible) driven by the AI SDK read their
// answers, streams, usage, finish reasons and errors as they read the providers': 429s with `retry-after` are retried
// without the SDK's back-off, a 401 is not retried, and an aborted stream is a disconnect the fake sees. Each case
// runs with the global fetch and with the engine's own (upstreamFetch), which every hosted provider is given.
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, generateText, type LanguageModel, RetryError, streamText } from 'ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { upstreamFetch } from '../../src/features/engine/providers/upstream-fetch.ts';
import { type FakeProvider, startFakeAnthropic, startFakeOpenAi } from '../support/fake-providers.ts';

interface Case {
  name: string;
  start: () => Promise<FakeProvider>;
  model: (baseURL: string, fetch: typeof globalThis.fetch | undefined) => LanguageModel;
  path: string;
  /** The request's credentials, as the provider package sends them. */
  auth: Record<string, string>;
  /** The parsed body of a 401, as the provider sends it. */
  unauthorized: unknown;
}

const cases: Case[] = [
  {
    name: 'OpenAI Chat Completions (createOpenAI().chat)',
    start: () => startFakeOpenAi(),
    model: (baseURL, fetch) => createOpenAI({ baseURL, apiKey: 'test', fetch }).chat('gpt-4o-mini'),
    path: '/v1/chat/completions',
    auth: { authorization: 'Bearer test' },
    unauthorized: { error: { type: 'invalid_request_error', code: 'invalid_api_key', param: null } },
  },
  {
    name: 'OpenAI Responses (createOpenAI()(id))',
    start: () => startFakeOpenAi(),
    model: (baseURL, fetch) => createOpenAI({ baseURL, apiKey: 'test', fetch })('gpt-4o-mini'),
    path: '/v1/responses',
    auth: { authorization: 'Bearer test' },
    unauthorized: { error: { type: 'invalid_request_error', code: 'invalid_api_key', param: null } },
  },
  {
    name: 'Anthropic Messages',
    start: () => startFakeAnthropic(),
    model: (baseURL, fetch) => createAnthropic({ baseURL, apiKey: 'test', fetch })('claude-haiku-4-5'),
    path: '/v1/messages',
    auth: { 'x-api-key': 'test', 'anthropic-version': '2023-06-01' },
    unauthorized: { type: 'error', error: { type: 'authentication_error' } },
  },
  {
    name: 'OpenAI-compatible (Groq)',
    start: () => startFakeOpenAi(),
    model: (baseURL, fetch) =>
      createOpenAICompatible({ name: 'groq', baseURL, apiKey: 'test', includeUsage: true, fetch }).chatModel(
        'llama-3.3-70b-versatile',
      ),
    path: '/v1/chat/completions',
    auth: { authorization: 'Bearer test' },
    unauthorized: { error: { type: 'invalid_request_error', code: 'invalid_api_key', param: null } },
  },
];

const fetches = [
  { fetchName: 'the global fetch', fetch: undefined },
  { fetchName: 'upstreamFetch', fetch: upstreamFetch as typeof globalThis.fetch },
];

describe.each(cases.flatMap((c) => fetches.map((f) => ({ ...c, ...f }))))(
  '$name, $fetchName',
  ({ start, model: modelOf, fetch: fetchOf, path, auth, unauthorized }) => {
    let fake: FakeProvider;
    let model: LanguageModel;

    beforeAll(async () => {
      fake = await start();
      model = modelOf(fake.url, fetchOf);
    });
    afterAll(async () => {
      await fake?.close();
    });

    test('generateText: the text, the usage (cached tokens included) and the finish reason', async () => {
      fake.enqueue({ text: 'Spring sale: 20% off.', usage: { input: 30, output: 6, cachedInput: 10 } });
      const result = await generateText({
        model,
        instructions: 'Be upbeat.',
        prompt: 'Announce the sale',
        maxRetries: 0,
      });
      expect(result.text).toBe('Spring sale: 20% off.');
      expect(result.finishReason).toBe('stop');
      expect(result.usage).toMatchObject({
        inputTokens: 30,
        outputTokens: 6,
        totalTokens: 36,
        inputTokenDetails: { cacheReadTokens: 10, noCacheTokens: 20 },
      });
      expect(result.totalUsage).toMatchObject({ inputTokens: 30, outputTokens: 6 });

      const sent = fake.requests.at(-1)!;
      expect(sent.path).toBe(path);
      expect(sent.headers).toMatchObject(auth);
      expect(sent.body.model).toBeTypeOf('string');
      expect(sent.body.stream).toBeUndefined();
      expect(JSON.stringify(sent.body)).toContain('Announce the sale');
      expect(JSON.stringify(sent.body)).toContain('Be upbeat.');
    });

    test('streamText: the deltas in order, then the usage and the finish reason', async () => {
      fake.enqueue({ chunks: ['Spring', ' is', ' here', '.'], usage: { input: 12, output: 4 } });
      const result = streamText({ model, prompt: 'Hi', maxRetries: 0 });
      const deltas: string[] = [];
      for await (const delta of result.textStream) deltas.push(delta);
      expect(deltas.filter(Boolean)).toEqual(['Spring', ' is', ' here', '.']);
      expect(await result.text).toBe('Spring is here.');
      expect(await result.finishReason).toBe('stop');
      expect(await result.usage).toMatchObject({ inputTokens: 12, outputTokens: 4, totalTokens: 16 });
      expect(await result.totalUsage).toMatchObject({ inputTokens: 12, outputTokens: 4 });
      const sent = fake.requests.at(-1)!;
      expect(sent.path).toBe(path);
      expect(sent.body.stream).toBe(true);
    });

    test('a reply cut by the token limit finishes with "length", streamed or not', async () => {
      fake.enqueue(
        { text: 'Cut short', finishReason: 'length', usage: { input: 3, output: 2 } },
        { text: 'Cut short', finishReason: 'length', usage: { input: 3, output: 2 } },
      );
      expect((await generateText({ model, prompt: 'Hi', maxRetries: 0 })).finishReason).toBe('length');
      const streamed = streamText({ model, prompt: 'Hi', maxRetries: 0 });
      expect(await streamed.text).toBe('Cut short');
      expect(await streamed.finishReason).toBe('length');
    });

    test('without a scripted reply the fake echoes the last user message, with a rough usage', async () => {
      const result = await generateText({ model, instructions: 'Be brief.', prompt: 'Hello there', maxRetries: 0 });
      expect(result.text).toBe('You said: Hello there');
      // Prompt: ("Be brief." + "Hello there") = 20 characters / 4; completion: 4 words.
      expect(result.usage).toMatchObject({ inputTokens: 5, outputTokens: 4 });
    });

    test('a 429 with retry-after: 0 is retried (maxRetries: 1) and the retry answers', async () => {
      fake.enqueue(
        { error: { status: 429, headers: { 'retry-after': '0' } } },
        { text: 'Recovered', usage: { input: 3, output: 1 } },
      );
      const before = fake.requests.length;
      const result = await generateText({ model, prompt: 'Hi', maxRetries: 1 });
      expect(result.text).toBe('Recovered');
      expect(fake.requests.length - before).toBe(2);
    });

    test('a streamed call that meets a 5xx is retried too', async () => {
      fake.enqueue({ error: { status: 503, headers: { 'retry-after': '0' } } }, { chunks: ['Back', ' again'] });
      const before = fake.requests.length;
      const result = streamText({ model, prompt: 'Hi', maxRetries: 1 });
      expect(await result.text).toBe('Back again');
      expect(fake.requests.length - before).toBe(2);
    });

    test('retries exhausted: a RetryError whose last error is the provider’s', async () => {
      fake.enqueue(
        { error: { status: 500, headers: { 'retry-after': '0' }, message: 'Down for now' } },
        { error: { status: 500, headers: { 'retry-after': '0' }, message: 'Still down' } },
      );
      const before = fake.requests.length;
      const error = await generateText({ model, prompt: 'Hi', maxRetries: 1 }).catch((caught: unknown) => caught);
      expect(RetryError.isInstance(error)).toBe(true);
      const { lastError, reason } = error as RetryError;
      expect(reason).toBe('maxRetriesExceeded');
      expect(APICallError.isInstance(lastError)).toBe(true);
      expect(lastError).toMatchObject({ statusCode: 500, isRetryable: true, message: 'Still down' });
      expect(fake.requests.length - before).toBe(2);
    });

    test('a 401 is not retried: an APICallError with the status and the provider’s error', async () => {
      fake.enqueue({ error: { status: 401, message: 'Invalid API key' } });
      const before = fake.requests.length;
      const error = await generateText({ model, prompt: 'Hi', maxRetries: 2 }).catch((caught: unknown) => caught);
      expect(APICallError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({
        statusCode: 401,
        isRetryable: false,
        message: 'Invalid API key',
        data: unauthorized,
      });
      expect(fake.requests.length - before).toBe(1);
    });

    test('aborting an endless stream through abortSignal disconnects from the fake', async () => {
      fake.enqueue({ endless: true, chunkDelayMs: 2 });
      const disconnects = fake.disconnects;
      const controller = new AbortController();
      const result = streamText({ model, prompt: 'Go on forever', abortSignal: controller.signal, maxRetries: 0 });
      const deltas: string[] = [];
      // Ends when the abort ends the stream; bounded by the test's timeout should it not.
      for await (const delta of result.textStream) {
        if (delta) deltas.push(delta);
        if (deltas.length === 3) controller.abort();
      }
      expect(deltas.slice(0, 3)).toEqual(['word0 ', 'word1 ', 'word2 ']);
      await fake.waitForDisconnect(5_000);
      expect(fake.disconnects).toBe(disconnects + 1);
    });
  },
);

describe('the fakes themselves', () => {
  let openai: FakeProvider;
  let anthropic: FakeProvider;

  beforeAll(async () => {
    [openai, anthropic] = await Promise.all([startFakeOpenAi(), startFakeAnthropic()]);
  });
  afterAll(async () => {
    await Promise.all([openai?.close(), anthropic?.close()]);
  });

  test('an unknown route is a 404 in the provider’s error format', async () => {
    const missing = await fetch(`${openai.url}/moderations`, { method: 'POST', body: '{}' });
    expect(missing.status).toBe(404);
    expect((await missing.json()).error).toMatchObject({ type: 'invalid_request_error', param: null });
    const wrong = await fetch(`${anthropic.url}/complete`, { method: 'POST', body: '{}' });
    expect(wrong.status).toBe(404);
    expect(await wrong.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });

  test('OpenAI’s embeddings: one normalised vector per input, similar for texts that share letters; a bad input is 400', async () => {
    const answer = await fetch(`${openai.url}/embeddings`, {
      method: 'POST',
      body: JSON.stringify({ model: 'text-embedding-3-small', input: ['refunds', 'refnds', 'shipping'] }),
    });
    expect(answer.status).toBe(200);
    const body = await answer.json();
    expect(body).toMatchObject({ object: 'list', usage: { prompt_tokens: 3 } });
    const [a, b, c] = body.data.map((item: { embedding: number[] }) => item.embedding);
    const dot = (x: number[], y: number[]) => x.reduce((sum, value, i) => sum + value * y[i]!, 0);
    expect(dot(a, a)).toBeCloseTo(1);
    expect(dot(a, b)).toBeGreaterThan(dot(a, c));
    expect((await fetch(`${openai.url}/embeddings`, { method: 'POST', body: '{}' })).status).toBe(400);
  });

  test('OpenAI’s stream is data-only chunks: role first, then content, then the finish reason, the usage chunk and [DONE]', async () => {
    openai.enqueue({ chunks: ['a', 'b'], usage: { input: 2, output: 2 } });
    const response = await fetch(`${openai.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        stream_options: { include_usage: true },
      }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = (await response.text()).split('\n\n').filter(Boolean);
    expect(frames.every((frame) => frame.startsWith('data: '))).toBe(true);
    expect(frames.at(-1)).toBe('data: [DONE]');
    const chunks = frames.slice(0, -1).map((frame) => JSON.parse(frame.slice('data: '.length)));
    expect(chunks.map((chunk) => chunk.object)).toEqual(Array(5).fill('chat.completion.chunk'));
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    expect(chunks.slice(1, 3).map((chunk) => chunk.choices[0].delta.content)).toEqual(['a', 'b']);
    expect(chunks[3].choices[0].finish_reason).toBe('stop');
    expect(chunks[4]).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 },
    });
  });

  test('Anthropic’s stream is named events in the Messages API’s order', async () => {
    anthropic.enqueue({ chunks: ['a', 'b'], usage: { input: 2, output: 2 } });
    const response = await fetch(`${anthropic.url}/messages`, {
      method: 'POST',
      body: JSON.stringify({
        model: 'claude-haiku-4-5',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
      }),
    });
    const frames = (await response.text()).split('\n\n').filter(Boolean);
    const events = frames.map((frame) => frame.match(/^event: (\S+)\ndata: (.*)$/s)!);
    expect(events.map((event) => event[1])).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    for (const event of events) expect(JSON.parse(event[2]!).type).toBe(event[1]);
    expect(JSON.parse(events[6]![2]!)).toMatchObject({
      delta: { stop_reason: 'end_turn' },
      usage: { output_tokens: 2 },
    });
  });

  test('a disconnect before waitForDisconnect is called is not missed; close() ends streams and keep-alive connections', async () => {
    openai.enqueue({ endless: true });
    const controller = new AbortController();
    const response = await fetch(`${openai.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], stream: true }),
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    await reader.read();
    const before = openai.disconnects;
    controller.abort();
    await expect.poll(() => openai.disconnects, { timeout: 5_000, interval: 5 }).toBe(before + 1);
    await openai.waitForDisconnect(1_000);

    const spare = await startFakeOpenAi();
    spare.enqueue({ endless: true });
    const open = await fetch(`${spare.url}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], stream: true }),
    });
    const openReader = open.body!.getReader();
    await openReader.read();
    await spare.close();
    const drain = async () => {
      for (let i = 0; i < 10_000; i++) if ((await openReader.read()).done) return 'ended';
      return 'still open';
    };
    expect(await drain().catch(() => 'cut')).toBe('cut');
  });

  test('a `reply` default answers by the body of each request nothing was enqueued for; undefined falls back to the echo', async () => {
    const scripted = await startFakeOpenAi({
      reply: (body) => (body.messages[0].content === 'shout' ? { text: 'LOUD ANSWER' } : undefined),
    });
    try {
      const ask = async (content: string) => {
        const response = await fetch(`${scripted.url}/chat/completions`, {
          method: 'POST',
          body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }),
        });
        return ((await response.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
      };
      expect(await ask('shout')).toBe('LOUD ANSWER');
      expect(await ask('shout')).toBe('LOUD ANSWER');
      expect(await ask('whisper')).toBe('You said: whisper');
      scripted.enqueue({ text: 'enqueued first' });
      expect(await ask('shout')).toBe('enqueued first');
      expect(await ask('shout')).toBe('LOUD ANSWER');
    } finally {
      await scripted.close();
    }
  });
});

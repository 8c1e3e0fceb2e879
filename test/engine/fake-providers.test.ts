// The fake upstreams (test/support/fake-providers.ts) are faithful: the real provider packages (@ai-sdk/openai's Chat
// Completions and Responses models, @ai-sdk/anthropic, @ai-sdk/openai-compatible) driven by the AI SDK read their
// answers, streams, usage, finish reasons and errors as they read the providers': 429s with `retry-after` are retried
// without the SDK's back-off, a 401 is not retried, and an aborted stream is a disconnect the fake sees. Each case
// runs with the global fetch and with the engine's own (upstreamFetch), which every hosted provider is given. The
// engine's lean client of OpenAI's wire (providers/openai-wire/, which the engine uses for OpenAI and the compatible
// services) runs every case the official packages run, and the wire's own cases (tools, images, log probabilities,
// fields the packages do not know, an error frame) run with both.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { APICallError, generateText, jsonSchema, type LanguageModel, RetryError, streamText, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { wireChatModel } from '../../src/features/engine/providers/openai-wire/index.ts';
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
  /** Speaks OpenAI's Chat Completions (the wire's own cases run). */
  chatCompletions?: boolean;
  /** Sends `logprobs` when `providerOptions.openai.logprobs` asks (OpenAI's dialect; the compatible one reads its own). */
  openaiOptions?: boolean;
}

const cases: Case[] = [
  {
    name: 'OpenAI Chat Completions (createOpenAI().chat)',
    start: () => startFakeOpenAi(),
    model: (baseURL, fetch) => createOpenAI({ baseURL, apiKey: 'test', fetch }).chat('gpt-4o-mini'),
    path: '/v1/chat/completions',
    auth: { authorization: 'Bearer test' },
    unauthorized: { error: { type: 'invalid_request_error', code: 'invalid_api_key', param: null } },
    chatCompletions: true,
    openaiOptions: true,
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
      // As the engine configures it (providers/openai-compatible.ts).
      createOpenAICompatible({
        name: 'groq',
        baseURL,
        apiKey: 'test',
        includeUsage: true,
        supportsStructuredOutputs: true,
        fetch,
      }).chatModel('llama-3.3-70b-versatile'),
    path: '/v1/chat/completions',
    auth: { authorization: 'Bearer test' },
    unauthorized: { error: { type: 'invalid_request_error', code: 'invalid_api_key', param: null } },
    chatCompletions: true,
  },
  {
    name: 'OpenAI Chat Completions, the lean client (wireChatModel openai)',
    start: () => startFakeOpenAi(),
    model: (baseURL, fetch) => wireChatModel('openai', { baseUrl: baseURL, apiKey: 'test', fetch }, 'gpt-4o-mini'),
    path: '/v1/chat/completions',
    auth: { authorization: 'Bearer test' },
    unauthorized: { error: { type: 'invalid_request_error', code: 'invalid_api_key', param: null } },
    chatCompletions: true,
    openaiOptions: true,
  },
  {
    name: 'OpenAI-compatible (Groq), the lean client (wireChatModel groq)',
    start: () => startFakeOpenAi(),
    model: (baseURL, fetch) =>
      wireChatModel('groq', { baseUrl: baseURL, apiKey: 'test', fetch }, 'llama-3.3-70b-versatile'),
    path: '/v1/chat/completions',
    auth: { authorization: 'Bearer test' },
    unauthorized: { error: { type: 'invalid_request_error', code: 'invalid_api_key', param: null } },
    chatCompletions: true,
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

const weather = {
  get_weather: tool({
    description: 'The weather of a city',
    inputSchema: jsonSchema<{ city: string }>({
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    }),
  }),
};

/** A call's stream parts, read to the end. */
async function partsOf(
  model: LanguageModelV4,
  options: LanguageModelV4CallOptions,
): Promise<LanguageModelV4StreamPart[]> {
  const { stream } = await model.doStream(options);
  const parts: LanguageModelV4StreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);

/** A call with everything the engine sends: a system message, an image, a tool round trip, tools, sampling. */
const fullCall = (): LanguageModelV4CallOptions => ({
  prompt: [
    { role: 'system', content: 'Be brief.' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in this picture, and the weather in Paris?' },
        {
          type: 'file',
          data: { type: 'data', data: PNG },
          mediaType: 'image/png',
          providerOptions: { openai: { imageDetail: 'low' } },
        },
        { type: 'file', data: { type: 'url', url: new URL('https://example.com/cat.jpg') }, mediaType: 'image/jpeg' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me look.' },
        { type: 'tool-call', toolCallId: 'call_1', toolName: 'get_weather', input: { city: 'Paris' } },
      ],
    },
    {
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: 'call_1', toolName: 'get_weather', output: { type: 'text', value: '18°C' } },
      ],
    },
  ],
  maxOutputTokens: 100,
  temperature: 0.5,
  topP: 0.9,
  presencePenalty: 0.1,
  frequencyPenalty: 0.2,
  seed: 7,
  stopSequences: ['END'],
  responseFormat: { type: 'json', schema: { type: 'object', properties: { a: { type: 'string' } } }, name: 'answer' },
  tools: [
    {
      type: 'function',
      name: 'get_weather',
      description: 'The weather of a city',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      strict: true,
    },
  ],
  toolChoice: { type: 'tool', toolName: 'get_weather' },
  providerOptions: { openai: { parallelToolCalls: false, logprobs: 2, reasoningEffort: 'low' } },
});

/** Parts without what differs from one answer to the next (ids and times the fake makes up). */
function comparable(parts: LanguageModelV4StreamPart[]): unknown {
  return JSON.parse(
    JSON.stringify(parts, (key, value) => (key === 'id' || key === 'created' || key === 'timestamp' ? '…' : value)),
  );
}

describe.each(cases.filter((c) => c.chatCompletions).flatMap((c) => fetches.map((f) => ({ ...c, ...f }))))(
  'Chat Completions: $name, $fetchName',
  ({ start, model: modelOf, fetch: fetchOf, openaiOptions }) => {
    let fake: FakeProvider;
    let model: LanguageModel;

    beforeAll(async () => {
      fake = await start();
      model = modelOf(fake.url, fetchOf);
    });
    afterAll(async () => {
      await fake?.close();
    });

    test('tool calls, streamed and whole: the calls with their arguments, finish reason tool-calls; the tools as sent', async () => {
      const call = {
        id: 'call_w1',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
        chunks: ['{"city":', '"Paris"}'],
      };
      fake.enqueue(
        { toolCalls: [call], usage: { input: 20, output: 5 } },
        { toolCalls: [call], usage: { input: 20, output: 5 } },
      );
      const streamed = streamText({
        model,
        prompt: 'Weather in Paris?',
        tools: weather,
        toolChoice: 'required',
        maxRetries: 0,
      });
      expect(await streamed.toolCalls).toMatchObject([
        { toolCallId: 'call_w1', toolName: 'get_weather', input: { city: 'Paris' } },
      ]);
      expect(await streamed.finishReason).toBe('tool-calls');
      expect(await streamed.usage).toMatchObject({ inputTokens: 20, outputTokens: 5 });
      const sent = fake.requests.at(-1)!.body;
      expect(sent.tool_choice).toBe('required');
      expect(sent.tools).toMatchObject([
        { type: 'function', function: { name: 'get_weather', parameters: { required: ['city'] } } },
      ]);

      const whole = await generateText({ model, prompt: 'Weather in Paris?', tools: weather, maxRetries: 0 });
      expect(whole.toolCalls).toMatchObject([
        { toolCallId: 'call_w1', toolName: 'get_weather', input: { city: 'Paris' } },
      ]);
      expect(whole.finishReason).toBe('tool-calls');
    });

    test('a conversation with images, a tool call and its result goes out as the wire’s messages', async () => {
      const model4 = modelOf(fake.url, fetchOf) as LanguageModelV4;
      fake.enqueue({ text: 'A cat; 18°C.' });
      const result = await model4.doGenerate(fullCall());
      expect(result.content).toEqual([{ type: 'text', text: 'A cat; 18°C.' }]);
      const sent = fake.requests.at(-1)!.body;
      expect(sent.messages).toMatchObject([
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture, and the weather in Paris?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${Buffer.from(PNG).toString('base64')}` } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Let me look.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '18°C' },
      ]);
      expect(sent.messages[1].content[1].image_url.detail).toBe(openaiOptions ? 'low' : undefined);
      expect(sent).toMatchObject({ max_tokens: 100, temperature: 0.5, top_p: 0.9, seed: 7, stop: ['END'] });
      expect(sent.tool_choice).toEqual({ type: 'function', function: { name: 'get_weather' } });
      expect(sent.response_format).toMatchObject({
        type: 'json_schema',
        json_schema: { name: 'answer', strict: true },
      });
    });

    test('log probabilities asked in providerOptions.openai come in the raw chunks and in the whole answer’s body', async () => {
      const model4 = modelOf(fake.url, fetchOf) as LanguageModelV4;
      const ask: LanguageModelV4CallOptions = {
        prompt: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
        providerOptions: { openai: { logprobs: 2 } },
        includeRawChunks: true,
      };
      fake.enqueue({ chunks: ['Hello', ' there'] }, { text: 'Hello there' });
      const parts = await partsOf(model4, ask);
      const raws = parts.flatMap((part) =>
        part.type === 'raw' ? [part.rawValue as { choices?: { logprobs?: unknown }[] }] : [],
      );
      expect(raws.length).toBeGreaterThan(3);
      const streamed = raws.flatMap(
        (raw) => (raw.choices?.[0]?.logprobs as { content?: unknown[] } | null)?.content ?? [],
      );
      const whole = await model4.doGenerate(ask);
      const body = whole.response?.body as { choices: { logprobs: { content: unknown[] } | null }[] };
      if (openaiOptions) {
        expect(fake.requests.at(-1)!.body).toMatchObject({ logprobs: true, top_logprobs: 2 });
        expect(streamed).toMatchObject([{ token: 'Hello' }, { token: ' there' }]);
        expect(body.choices[0]!.logprobs!.content).toHaveLength(2);
      } else {
        expect(fake.requests.at(-1)!.body.logprobs).toBeUndefined();
        expect(streamed).toEqual([]);
        expect(body.choices[0]!.logprobs).toBeNull();
      }
    });
  },
);

describe('the lean client beside the official packages', () => {
  let fake: FakeProvider;
  beforeAll(async () => {
    fake = await startFakeOpenAi();
  });
  afterAll(async () => {
    await fake?.close();
  });

  const pairs = [
    {
      name: 'OpenAI',
      official: (url: string) =>
        createOpenAI({ baseURL: url, apiKey: 'test', fetch: upstreamFetch }).chat('gpt-4o-mini'),
      lean: (url: string) => wireChatModel('openai', { baseUrl: url, apiKey: 'test' }, 'gpt-4o-mini'),
    },
    {
      name: 'Groq',
      official: (url: string) =>
        createOpenAICompatible({
          name: 'groq',
          baseURL: url,
          apiKey: 'test',
          includeUsage: true,
          supportsStructuredOutputs: true,
          fetch: upstreamFetch,
        }).chatModel('llama-3.3-70b-versatile'),
      lean: (url: string) => wireChatModel('groq', { baseUrl: url, apiKey: 'test' }, 'llama-3.3-70b-versatile'),
    },
  ];

  test.each(pairs)('$name: the same request body, whole and streamed', async ({ official, lean }) => {
    const bodies = [];
    for (const model of [official(fake.url), lean(fake.url)]) {
      fake.enqueue({ text: 'ok' }, { chunks: ['ok'] });
      await model.doGenerate(fullCall());
      await partsOf(model, fullCall());
      bodies.push(fake.requests.slice(-2).map((request) => request.body));
    }
    expect(bodies[1]).toEqual(bodies[0]);
  });

  test.each(pairs)(
    '$name: the same stream parts and answers for text, tool calls, logprobs and a cut reply',
    async ({ official, lean }) => {
      const replies = [
        { chunks: ['Spring', ' is', ' here.'], usage: { input: 12, output: 3, cachedInput: 4 } },
        {
          text: 'Checking.',
          toolCalls: [
            { id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}', chunks: ['{"ci', 'ty":"Paris"}'] },
            { id: 'call_b', name: 'get_weather', arguments: '{"city":"Oslo"}' },
          ],
        },
        { text: 'Cut short', finishReason: 'length' as const },
      ];
      const options: LanguageModelV4CallOptions = {
        prompt: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
        tools: fullCall().tools,
        providerOptions: { openai: { logprobs: 1 } },
        includeRawChunks: true,
      };
      for (const reply of replies) {
        const seen = [];
        for (const model of [official(fake.url), lean(fake.url)]) {
          fake.enqueue(reply, reply);
          const parts = await partsOf(model, options);
          const whole = await model.doGenerate(options);
          // The official packages end a tool call as soon as its arguments are whole JSON, the lean client at the
          // end of the stream: the text's end may come before or after them.
          seen.push({
            parts: comparable(parts.filter((part) => part.type !== 'text-end')),
            textEnds: parts.filter((part) => part.type === 'text-end').length,
            whole: comparable([
              { type: 'finish', ...whole, request: undefined, response: { ...whole.response, headers: undefined } },
            ] as never),
          });
        }
        // The lean client keeps the fields the packages' schemas leave out (the tokens' bytes, the usage's
        // audio tokens): what the official package gives is there, and perhaps more.
        expect(seen[1]).toMatchObject(seen[0]!);
      }
    },
  );
});

/** A loopback server that answers every chat completion with `answer` (a JSON body, or SSE frames when streamed). */
async function scriptedUpstream(answer: {
  json: unknown;
  frames: unknown[];
}): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => {
      text += chunk;
    });
    req.on('end', () => {
      if (JSON.parse(text).stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const frame of answer.frames) res.write(`data: ${JSON.stringify(frame)}\n\n`);
        res.end('data: [DONE]\n\n');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer.json));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('the lean client and what the official packages do not know', () => {
  const ask: LanguageModelV4CallOptions = {
    prompt: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
    includeRawChunks: true,
  };

  test('fields new to the wire reach the engine as they came: in the raw chunks and in the whole answer’s body', async () => {
    const chunk = (delta: object, extra: object = {}) => ({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'gpt-4o-mini',
      choices: [{ index: 0, delta, finish_reason: null, x_choice_note: 'kept' }],
      ...extra,
    });
    const upstream = await scriptedUpstream({
      json: {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4o-mini',
        x_moderation: { flagged: false },
        choices: [
          { index: 0, message: { role: 'assistant', content: 'Hi!', x_citations: ['a'] }, finish_reason: 'stop' },
        ],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, x_credits: 0.5 },
      },
      frames: [
        chunk({ role: 'assistant', content: '' }),
        chunk({ content: 'Hi!', x_citations: ['a'] }, { x_moderation: { flagged: false } }),
        { ...chunk({}), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
        {
          ...chunk({}),
          choices: [],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, x_credits: 0.5 },
        },
      ],
    });
    try {
      for (const service of ['openai', 'groq'] as const) {
        const model = wireChatModel(service, { baseUrl: upstream.url, apiKey: 'k' }, 'gpt-4o-mini');
        const parts = await partsOf(model, ask);
        const raws = parts.flatMap((part) => (part.type === 'raw' ? [part.rawValue] : []));
        expect(raws[1]).toMatchObject({
          x_moderation: { flagged: false },
          choices: [{ delta: { x_citations: ['a'] } }],
        });
        expect(raws[3]).toMatchObject({ usage: { x_credits: 0.5 } });
        expect(parts.find((part) => part.type === 'finish')).toMatchObject({
          finishReason: { unified: 'stop', raw: 'stop' },
          usage: { inputTokens: { total: 1 }, outputTokens: { total: 1 }, raw: { x_credits: 0.5 } },
        });
        const whole = await model.doGenerate(ask);
        expect(whole.response?.body).toMatchObject({
          x_moderation: { flagged: false },
          choices: [{ message: { x_citations: ['a'] } }],
        });
      }
    } finally {
      await upstream.close();
    }
  });

  test('an error frame before any output fails the call (so it is retried); after output it is an error part', async () => {
    const error = { error: { message: 'The server had an error', type: 'server_error', code: null } };
    const upstream = await scriptedUpstream({ json: {}, frames: [error] });
    try {
      const model = wireChatModel('openai', { baseUrl: upstream.url, apiKey: 'k' }, 'gpt-4o-mini');
      const failed = await Promise.resolve(model.doStream(ask)).catch((caught: unknown) => caught);
      expect(APICallError.isInstance(failed)).toBe(true);
      expect(failed).toMatchObject({ message: 'The server had an error', statusCode: 500, isRetryable: true });
    } finally {
      await upstream.close();
    }
    const late = await scriptedUpstream({
      json: {},
      frames: [{ id: 'c', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'Hal' } }] }, error],
    });
    try {
      const model = wireChatModel('openai', { baseUrl: late.url, apiKey: 'k' }, 'gpt-4o-mini');
      const parts = await partsOf(model, ask);
      expect(parts.find((part) => part.type === 'error')).toMatchObject({
        error: { message: 'The server had an error' },
      });
      expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: { unified: 'error' } });
    } finally {
      await late.close();
    }
  });
});

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

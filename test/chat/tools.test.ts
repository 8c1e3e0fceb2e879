// Tools (function calling) and images in POST /v1/chat/completions, through the real provider packages
// (@ai-sdk/openai, @ai-sdk/anthropic, @ai-sdk/google) in front of fake upstreams on loopback that speak their wire
// formats (test/support/fake-providers.ts), on SQLite and PostgreSQL: what each upstream received (OpenAI `tools`,
// Anthropic `tool_use`/`tool_result`, Google `functionDeclarations`/`functionCall`/`functionResponse`, the image's
// bytes), a tool loop, streamed tool calls in OpenAI's fragments, parallel calls, every tool_choice form, models
// without the capability, images from data: URLs and from an image server through the SSRF guard, threads that keep
// tool calls, and the output policy on tool-call arguments.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { ImageBudget } from '../../src/features/engine/image-budget.ts';
import { IMAGE_LIMITS, readImages } from '../../src/features/engine/images.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { Problem } from '../../src/platform/problems.ts';
import { asyncApiErrors } from '../support/asyncapi.ts';
import { expectProblem } from '../support/expect.ts';
import { type FakeProvider, startFakeAnthropic, startFakeGoogle, startFakeOpenAi } from '../support/fake-providers.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { schemaErrors } from '../support/spec.ts';

/** A 1×1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const PNG_DATA_URL = `data:image/png;base64,${PNG.toString('base64')}`;

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the weather forecast for a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city'],
      additionalProperties: false,
    },
  },
};
type Schemas = components['schemas'];

const TIME = {
  type: 'function',
  function: {
    name: 'get_local_time',
    description: 'The local time in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const ASK = { role: 'user', content: 'Should I pack an umbrella for Lisbon tomorrow?' };
const ARGS = '{"city":"Lisbon","unit":"celsius"}';

/** The `data:` payloads of a `text/event-stream` answer, JSON-parsed, without the final [DONE]. */
function chunksOf(answer: Answer): Schemas['ChatCompletionChunk'][] {
  const data = answer.text
    .split('\n\n')
    .filter((block) => block.startsWith('data: '))
    .map((block) => block.slice(6));
  expect(data.at(-1)).toBe('[DONE]');
  return data.slice(0, -1).map((d) => JSON.parse(d));
}

/** The tool calls of choice 0 rebuilt from a stream's fragments, as a client joins them. */
function joinedCalls(chunks: Schemas['ChatCompletionChunk'][]): { id: string; name: string; arguments: string }[] {
  const calls: { id: string; name: string; arguments: string }[] = [];
  for (const chunk of chunks) {
    for (const fragment of chunk.choices[0]?.delta.tool_calls ?? []) {
      if (fragment.id)
        calls[fragment.index] = {
          id: fragment.id,
          name: fragment.function!.name!,
          arguments: fragment.function!.arguments!,
        };
      else calls[fragment.index]!.arguments += fragment.function!.arguments!;
    }
  }
  return calls;
}

/** An image server on loopback: `/roast.png` (a PNG), `/page.html` (not an image), `/big.png` (over 20 MB), `/missing.png` (404). */
async function startImageServer(): Promise<{ url: string; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    if (req.url === '/roast.png') res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
    else if (req.url === '/page.html')
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>not an image</html>');
    else if (req.url === '/big.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      const block = Buffer.alloc(1024 * 1024);
      let sent = 0;
      const write = () => {
        while (sent < 21 && res.write(block)) sent += 1;
        if (sent >= 21) res.end();
        else res.once('drain', () => ((sent += 1), write()));
      };
      res.on('error', () => {});
      write();
    } else res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

describe.each(databaseKinds)('tools and images on %s', (kind) => {
  let openai: FakeProvider;
  let anthropic: FakeProvider;
  let google: FakeProvider;
  let images: Awaited<ReturnType<typeof startImageServer>>;
  let server: TestServer;
  let counter = 0;

  beforeAll(async () => {
    [openai, anthropic, google, images] = await Promise.all([
      startFakeOpenAi(),
      startFakeAnthropic(),
      startFakeGoogle(),
      startImageServer(),
    ]);
    server = await startTestServer({
      database: kind,
      env: {
        OPENAI_API_KEY: 'sk-test-openai',
        OPENAI_BASE_URL: openai.url,
        ANTHROPIC_API_KEY: 'sk-ant-test',
        ANTHROPIC_BASE_URL: anthropic.url,
        GOOGLE_GENERATIVE_AI_API_KEY: 'google-test-key',
        GOOGLE_BASE_URL: google.url,
        PROVIDER_MAX_RETRIES: '0',
        // The development switch that lets the server fetch images from loopback (the image server).
        WEBHOOKS_ALLOW_LOOPBACK: 'true',
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await Promise.all([openai, anthropic, google, images].map((fake) => fake?.close()));
  });

  async function newWorkspace() {
    const created = await createWorkspace(server.platform.db, {
      name: `Tools ${++counter}`,
      region: server.platform.config.region,
      ownerEmail: `t${counter}@test.example`,
      now: new Date(),
    });
    return created.secret;
  }

  function complete(key: string, body: Record<string, unknown>): Promise<Answer> {
    return server.call('POST', '/v1/chat/completions', { key, body });
  }

  test('OpenAI: a tool loop — the call, the tool result sent back, the answer — with what the upstream received', async () => {
    const key = await newWorkspace();
    openai.enqueue({ toolCalls: [{ id: 'call_weather1', name: 'get_weather', arguments: ARGS }] });
    const first = await complete(key, { model: 'gpt-4o-mini', messages: [ASK], tools: [WEATHER] });
    expect(first.status, first.text).toBe(200);
    expect(schemaErrors('/components/schemas/ChatCompletion', first.body)).toEqual([]);
    expect(first.body.choices[0]).toMatchObject({
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_weather1', type: 'function', function: { name: 'get_weather', arguments: ARGS } }],
      },
      finish_reason: 'tool_calls',
    });
    const sent = openai.requests.at(-1)!.body;
    // `strict` is OpenAI's default, filled in by the request's validation.
    expect(sent.tools).toEqual([{ type: 'function', function: { ...WEATHER.function, strict: false } }]);
    expect(sent.tool_choice).toBe('auto');
    expect(sent.parallel_tool_calls).toBe(true);

    openai.enqueue({ text: 'Yes: showers are likely in Lisbon tomorrow (80%), so pack an umbrella.' });
    const result = '{"city":"Lisbon","temperature_c":17,"conditions":"showers","chance_of_rain":0.8}';
    const second = await complete(key, {
      model: 'gpt-4o-mini',
      tools: [WEATHER],
      messages: [ASK, first.body.choices[0].message, { role: 'tool', tool_call_id: 'call_weather1', content: result }],
    });
    expect(second.status, second.text).toBe(200);
    expect(second.body.choices[0]).toMatchObject({
      message: { content: 'Yes: showers are likely in Lisbon tomorrow (80%), so pack an umbrella.' },
      finish_reason: 'stop',
    });
    expect(second.body.choices[0].message.tool_calls).toBeUndefined();
    expect(openai.requests.at(-1)!.body.messages).toEqual([
      { role: 'user', content: ASK.content },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_weather1', type: 'function', function: { name: 'get_weather', arguments: ARGS } }],
      },
      { role: 'tool', tool_call_id: 'call_weather1', content: result },
    ]);
  });

  test('an answer sent back as the openai SDK’s helpers hold it (runTools, parse) is accepted; their fields stay here', async () => {
    const key = await newWorkspace();
    const call = { id: 'call_weather2', type: 'function', function: { name: 'get_weather', arguments: ARGS } };
    const result = { role: 'tool', tool_call_id: 'call_weather2', content: '{"temperature_c":17}' };
    // What openai 5's runTools sends back: the answer with `parsed` and each call's `parsed_arguments`; its parse()
    // helper holds the parsed object there instead of null.
    for (const parsed of [null, { city: 'Lisbon' }]) {
      openai.enqueue({ text: 'Showers in Lisbon.' });
      const answer = await complete(key, {
        model: 'gpt-4o-mini',
        tools: [WEATHER],
        messages: [
          ASK,
          {
            role: 'assistant',
            content: null,
            refusal: null,
            tool_calls: [{ ...call, function: { ...call.function, parsed_arguments: parsed } }],
            parsed,
          },
          result,
        ],
      });
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body.choices[0].message.content).toBe('Showers in Lisbon.');
      expect(openai.requests.at(-1)!.body.messages).toEqual([
        { role: 'user', content: ASK.content },
        { role: 'assistant', content: null, tool_calls: [call] },
        result,
      ]);
    }
    const text = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [ASK, { role: 'assistant', content: 'Sunny.', parsed: 'Sunny.' }, ASK],
    });
    expectProblem(text, 422, 'validation_failed');
    expect(text.body.errors.map((e: { pointer: string }) => e.pointer)).toContain('/messages/1/parsed');
  });

  test('OpenAI: a streamed tool call comes in OpenAI’s fragments; joined they are the non-streamed arguments', async () => {
    const key = await newWorkspace();
    openai.enqueue({
      toolCalls: [
        { id: 'call_s1', name: 'get_weather', arguments: ARGS, chunks: ['{"city":', '"Lisbon",', '"unit":"celsius"}'] },
      ],
    });
    const streamed = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [ASK],
      tools: [WEATHER],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(streamed.status, streamed.text).toBe(200);
    const chunks = chunksOf(streamed);
    for (const chunk of chunks) expect(schemaErrors('/components/schemas/ChatCompletionChunk', chunk)).toEqual([]);
    const fragments = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(fragments[0]).toEqual({
      index: 0,
      id: 'call_s1',
      type: 'function',
      function: { name: 'get_weather', arguments: '' },
    });
    for (const later of fragments.slice(1)) expect(Object.keys(later).sort()).toEqual(['function', 'index']);
    expect(fragments.slice(1).map((f) => f.function)).toEqual([
      { arguments: '{"city":' },
      { arguments: '"Lisbon",' },
      { arguments: '"unit":"celsius"}' },
    ]);
    expect(chunks.filter((c) => c.choices[0]?.delta.role === 'assistant')).toHaveLength(1);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('tool_calls');
    expect(chunks.at(-1)!.usage!.total_tokens).toBeGreaterThan(0);

    openai.enqueue({ toolCalls: [{ id: 'call_s1', name: 'get_weather', arguments: ARGS }] });
    const whole = await complete(key, { model: 'gpt-4o-mini', messages: [ASK], tools: [WEATHER] });
    expect(joinedCalls(chunks)).toEqual([
      { id: 'call_s1', name: 'get_weather', arguments: whole.body.choices[0].message.tool_calls[0].function.arguments },
    ]);
  });

  test('parallel tool calls in one answer, streamed and not; parallel_tool_calls false reaches OpenAI and Anthropic', async () => {
    const key = await newWorkspace();
    const two = [
      { id: 'call_p1', name: 'get_weather', arguments: '{"city":"Lisbon"}' },
      { id: 'call_p2', name: 'get_local_time', arguments: '{"city":"Lisbon"}' },
    ];
    openai.enqueue({ toolCalls: two });
    const whole = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Weather and time in Lisbon?' }],
      tools: [WEATHER, TIME],
    });
    expect(
      whole.body.choices[0].message.tool_calls.map((c: Schemas['ChatCompletionMessageToolCall']) => [
        c.id,
        c.function.name,
        c.function.arguments,
      ]),
    ).toEqual(two.map((c) => [c.id, c.name, c.arguments]));
    openai.enqueue({ toolCalls: two });
    const streamed = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Weather and time in Lisbon?' }],
      tools: [WEATHER, TIME],
      stream: true,
    });
    expect(joinedCalls(chunksOf(streamed))).toEqual(two);

    openai.enqueue({ toolCalls: [two[0]!] });
    await complete(key, {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Weather in Lisbon?' }],
      tools: [WEATHER, TIME],
      parallel_tool_calls: false,
    });
    expect(openai.requests.at(-1)!.body.parallel_tool_calls).toBe(false);
    anthropic.enqueue({ toolCalls: [{ name: 'get_weather', arguments: '{"city":"Lisbon"}' }] });
    const claude = await complete(key, {
      model: 'claude-haiku-4-5',
      messages: [{ role: 'user', content: 'Weather in Lisbon?' }],
      tools: [WEATHER, TIME],
      parallel_tool_calls: false,
    });
    expect(claude.status, claude.text).toBe(200);
    expect(anthropic.requests.at(-1)!.body.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
  });

  test('each tool_choice form reaches the provider; a choice without tools, or of an unknown tool, is refused', async () => {
    const key = await newWorkspace();
    for (const choice of ['none', 'auto', 'required', { type: 'function', function: { name: 'get_weather' } }]) {
      openai.enqueue(
        choice === 'none'
          ? { text: 'I cannot check the weather right now.' }
          : { toolCalls: [{ name: 'get_weather', arguments: '{"city":"Lisbon"}' }] },
      );
      const answer = await complete(key, {
        model: 'gpt-4o-mini',
        messages: [ASK],
        tools: [WEATHER],
        tool_choice: choice,
      });
      expect(answer.status, answer.text).toBe(200);
      expect(openai.requests.at(-1)!.body.tool_choice).toEqual(choice);
      // A named choice makes OpenAI answer `stop`; a choice that called tools is `tool_calls` all the same.
      expect(answer.body.choices[0].finish_reason).toBe(choice === 'none' ? 'stop' : 'tool_calls');
    }
    anthropic.enqueue({ toolCalls: [{ name: 'get_weather', arguments: '{"city":"Lisbon"}' }] });
    await complete(key, {
      model: 'claude-haiku-4-5',
      messages: [ASK],
      tools: [WEATHER],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    expect(anthropic.requests.at(-1)!.body.tool_choice).toEqual({ type: 'tool', name: 'get_weather' });
    anthropic.enqueue({ toolCalls: [{ name: 'get_weather', arguments: '{"city":"Lisbon"}' }] });
    await complete(key, { model: 'claude-haiku-4-5', messages: [ASK], tools: [WEATHER], tool_choice: 'required' });
    expect(anthropic.requests.at(-1)!.body.tool_choice).toEqual({ type: 'any' });

    const calls = openai.requests.length;
    const noTools = await complete(key, { model: 'gpt-4o-mini', messages: [ASK], tool_choice: 'auto' });
    expectProblem(noTools, 422, 'validation_failed');
    expect(noTools.body.error.param).toBe('tool_choice');
    const unknown = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [ASK],
      tools: [WEATHER],
      tool_choice: { type: 'function', function: { name: 'get_time' } },
    });
    expectProblem(unknown, 422, 'validation_failed');
    expect(unknown.body.error.param).toBe('tool_choice.function.name');
    const twice = await complete(key, { model: 'gpt-4o-mini', messages: [ASK], tools: [WEATHER, WEATHER] });
    expect(twice.body.error.param).toBe('tools[1].function.name');
    const badName = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [ASK],
      tools: [{ type: 'function', function: { name: 'get weather' } }],
    });
    expectProblem(badName, 422, 'validation_failed');
    const strayResult = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [ASK, { role: 'tool', tool_call_id: 'call_nowhere', content: '{}' }],
      tools: [WEATHER],
    });
    expectProblem(strayResult, 422, 'validation_failed');
    expect(strayResult.body.error.param).toBe('messages[1].tool_call_id');
    const emptyAssistant = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [ASK, { role: 'assistant', content: null }],
    });
    expect(emptyAssistant.body.error.param).toBe('messages[1].content');
    const tooMany = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [ASK],
      tools: Array.from({ length: 129 }, (_, i) => ({ type: 'function', function: { name: `tool_${i}` } })),
    });
    expectProblem(tooMany, 422, 'validation_failed');
    expect(openai.requests.length).toBe(calls);
  });

  test('a model without the tools or vision capability is refused before any call, naming it', async () => {
    const key = await newWorkspace();
    const tools = await complete(key, { model: 'o1-mini', messages: [ASK], tools: [WEATHER] });
    expectProblem(tools, 422, 'validation_failed');
    expect(tools.body.error.param).toBe('tools');
    expect(tools.body.errors[0].detail).toContain('tools capability');
    // tool_choice none asks for no call: the model answers, and the provider gets no tools.
    const calls = openai.requests.length;
    const none = await complete(key, { model: 'o1-mini', messages: [ASK], tools: [WEATHER], tool_choice: 'none' });
    expect(none.status, none.text).toBe(200);
    expect(none.body.choices[0].message.content).toBe(`You said: ${ASK.content}`);
    expect(openai.requests.length).toBe(calls + 1);
    expect(openai.requests.at(-1)!.body.tools).toBeUndefined();
    const image = await complete(key, {
      model: 'o1-mini',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: PNG_DATA_URL } },
          ],
        },
      ],
    });
    expectProblem(image, 422, 'validation_failed');
    expect(image.body.errors[0]).toEqual({
      pointer: '/messages/0/content/1',
      detail: expect.stringContaining('vision capability'),
    });
    expect((await server.call('GET', '/v1/usage', { key })).body.totals.requests).toBe(1);
  });

  test('Anthropic: tools, tool_use and tool_result in its wire format, streamed and not', async () => {
    const key = await newWorkspace();
    anthropic.enqueue({ toolCalls: [{ id: 'toolu_01Weather', name: 'get_weather', arguments: ARGS }] });
    const first = await complete(key, {
      model: 'claude-haiku-4-5',
      messages: [{ role: 'system', content: 'Use the tools.' }, ASK],
      tools: [WEATHER],
    });
    expect(first.status, first.text).toBe(200);
    expect(first.body.choices[0]).toMatchObject({
      message: {
        content: null,
        tool_calls: [{ id: 'toolu_01Weather', function: { name: 'get_weather', arguments: ARGS } }],
      },
      finish_reason: 'tool_calls',
    });
    const sent = anthropic.requests.at(-1)!.body;
    expect(sent.tools).toEqual([
      expect.objectContaining({
        name: 'get_weather',
        description: WEATHER.function.description,
        input_schema: WEATHER.function.parameters,
      }),
    ]);

    anthropic.enqueue({
      toolCalls: [
        {
          id: 'toolu_02Weather',
          name: 'get_weather',
          arguments: ARGS,
          chunks: ['{"city": "Lis', 'bon", "unit"', ': "celsius"}'],
        },
      ],
    });
    const streamed = await complete(key, {
      model: 'claude-haiku-4-5',
      messages: [ASK],
      tools: [WEATHER],
      stream: true,
    });
    const calls = joinedCalls(chunksOf(streamed));
    expect(calls).toEqual([
      { id: 'toolu_02Weather', name: 'get_weather', arguments: '{"city": "Lisbon", "unit": "celsius"}' },
    ]);
    expect(JSON.parse(calls[0]!.arguments)).toEqual(JSON.parse(ARGS));

    anthropic.enqueue({ text: 'Pack an umbrella: showers are likely.' });
    const answer = await complete(key, {
      model: 'claude-haiku-4-5',
      tools: [WEATHER],
      messages: [
        ASK,
        first.body.choices[0].message,
        { role: 'tool', tool_call_id: 'toolu_01Weather', content: '{"conditions":"showers"}' },
      ],
    });
    expect(answer.body.choices[0].message.content).toBe('Pack an umbrella: showers are likely.');
    const loop = anthropic.requests.at(-1)!.body.messages;
    expect(loop[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'tool_use', id: 'toolu_01Weather', name: 'get_weather', input: JSON.parse(ARGS) }],
    });
    expect(loop[2]).toEqual({
      role: 'user',
      content: [
        expect.objectContaining({
          type: 'tool_result',
          tool_use_id: 'toolu_01Weather',
          content: '{"conditions":"showers"}',
        }),
      ],
    });
  });

  test('Google: functionDeclarations, functionCall and functionResponse; a streamed call (sent whole) still comes in fragments', async () => {
    const key = await newWorkspace();
    google.enqueue({ toolCalls: [{ name: 'get_weather', arguments: '{"city":"Lisbon"}' }] });
    const first = await complete(key, {
      model: 'gemini-2.0-flash',
      messages: [ASK],
      tools: [WEATHER],
      tool_choice: 'required',
    });
    expect(first.status, first.text).toBe(200);
    const call = first.body.choices[0].message.tool_calls[0];
    expect(call.function).toEqual({ name: 'get_weather', arguments: '{"city":"Lisbon"}' });
    expect(first.body.choices[0].finish_reason).toBe('tool_calls');
    const sent = google.requests.at(-1)!;
    // An answer asked for whole is asked of the provider whole (the engine's `generate`), a streamed one streamed.
    expect(sent.path).toMatch(/\/models\/gemini-2\.0-flash:generateContent$/);
    expect(sent.body.tools).toEqual([
      {
        functionDeclarations: [
          expect.objectContaining({ name: 'get_weather', description: WEATHER.function.description }),
        ],
      },
    ]);
    expect(sent.body.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY' } });

    google.enqueue({ toolCalls: [{ name: 'get_weather', arguments: '{"city":"Lisbon"}' }] });
    const streamed = await complete(key, {
      model: 'gemini-2.0-flash',
      messages: [ASK],
      tools: [WEATHER],
      stream: true,
    });
    expect(google.requests.at(-1)!.path).toMatch(/\/models\/gemini-2\.0-flash:streamGenerateContent\?alt=sse$/);
    const fragments = chunksOf(streamed).flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(fragments).toEqual([
      { index: 0, id: expect.any(String), type: 'function', function: { name: 'get_weather', arguments: '' } },
      { index: 0, function: { arguments: '{"city":"Lisbon"}' } },
    ]);

    google.enqueue({ text: 'Showers: take an umbrella.' });
    const answer = await complete(key, {
      model: 'gemini-2.0-flash',
      tools: [WEATHER],
      messages: [
        ASK,
        first.body.choices[0].message,
        { role: 'tool', tool_call_id: call.id, content: '{"conditions":"showers"}' },
      ],
    });
    expect(answer.body.choices[0].message.content).toBe('Showers: take an umbrella.');
    const contents = google.requests.at(-1)!.body.contents;
    expect(contents[1]).toEqual({
      role: 'model',
      parts: [
        expect.objectContaining({
          functionCall: expect.objectContaining({ name: 'get_weather', args: { city: 'Lisbon' } }),
        }),
      ],
    });
    expect(contents[2].parts[0].functionResponse).toMatchObject({
      name: 'get_weather',
      response: { name: 'get_weather', content: '{"conditions":"showers"}' },
    });
  });

  test('images: a data: URL and an image server’s URL reach every provider as bytes', async () => {
    const key = await newWorkspace();
    const question = (url: string, detail?: string) => ({
      role: 'user',
      content: [
        { type: 'text', text: 'Describe the bag.' },
        { type: 'image_url', image_url: { url, ...(detail ? { detail } : {}) } },
      ],
    });
    const fetched = images.requests.length;
    const byUrl = await complete(key, { model: 'gpt-4o-mini', messages: [question(`${images.url}/roast.png`, 'low')] });
    expect(byUrl.status, byUrl.text).toBe(200);
    expect(images.requests.length).toBe(fetched + 1);
    expect(openai.requests.at(-1)!.body.messages[0].content).toEqual([
      { type: 'text', text: 'Describe the bag.' },
      { type: 'image_url', image_url: { url: PNG_DATA_URL, detail: 'low' } },
    ]);
    const inline = await complete(key, { model: 'gpt-4o-mini', messages: [question(PNG_DATA_URL)] });
    expect(inline.status, inline.text).toBe(200);
    expect(openai.requests.at(-1)!.body.messages[0].content[1].image_url.url).toBe(PNG_DATA_URL);
    // More image tokens are counted for a high-detail image than for a low one.
    expect(inline.body.usage.prompt_tokens).toBeGreaterThanOrEqual(0);

    expect(
      (await complete(key, { model: 'claude-haiku-4-5', messages: [question(`${images.url}/roast.png`)] })).status,
    ).toBe(200);
    expect(anthropic.requests.at(-1)!.body.messages[0].content[1]).toMatchObject({
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: PNG.toString('base64') },
    });
    expect((await complete(key, { model: 'gemini-2.0-flash', messages: [question(PNG_DATA_URL)] })).status).toBe(200);
    expect(google.requests.at(-1)!.body.contents[0].parts[1]).toEqual({
      inlineData: { mimeType: 'image/png', data: PNG.toString('base64') },
    });
  });

  test('images that cannot be read are 422 image_unreadable naming the part; at most 10 images', async () => {
    const key = await newWorkspace();
    const calls = openai.requests.length;
    const ask = async (url: string) =>
      complete(key, {
        model: 'gpt-4o-mini',
        messages: [
          { role: 'user', content: 'Look:' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'this' },
              { type: 'image_url', image_url: { url } },
            ],
          },
        ],
      });
    for (const [url, detail] of [
      ['http://169.254.169.254/latest/meta-data/image.png', 'private, loopback or link-local'],
      [`${images.url}/page.html`, 'not an image'],
      [`${images.url}/missing.png`, 'answered 404'],
      [`${images.url}/big.png`, 'larger than 20 MB'],
      ['data:image/png;base64,not base64!', 'not valid base64'],
      ['data:text/plain;base64,aGVsbG8=', 'base64-encoded image'],
    ] as const) {
      const answer = await ask(url);
      expect(answer.status, `${url}: ${answer.text}`).toBe(422);
      expectProblem(answer, 422, 'image_unreadable');
      expect(answer.body.errors[0].pointer, url).toBe('/messages/1/content/1');
      expect(answer.body.errors[0].detail, url).toContain(detail);
      expect(answer.body.error.param).toBe('messages[1].content[1]');
    }
    const eleven = Array.from({ length: 11 }, () => ({ type: 'image_url', image_url: { url: PNG_DATA_URL } }));
    const tooMany = await complete(key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: eleven }] });
    expectProblem(tooMany, 422, 'validation_failed');
    expect(tooMany.body.errors[0].pointer).toBe('/messages/0/content/10');
    expect(openai.requests.length).toBe(calls);
  });

  test('the guard refuses loopback without the development switch', async () => {
    const budget = new ImageBudget(IMAGE_LIMITS.perRequestBytes);
    const source = { url: `${images.url}/roast.png`, pointer: '/messages/0/content/0' };
    const refused = await readImages(budget, [source], { allowPrivateNetworks: false }).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(Problem);
    expect((refused as Problem).code).toBe('image_unreadable');
    expect(budget.available).toBe(budget.totalBytes);
    const read = await readImages(budget, [source], { allowPrivateNetworks: true });
    expect(read.images).toHaveLength(1);
    expect(Buffer.from(read.images[0]!.data as Uint8Array).equals(PNG)).toBe(true);
    expect(read.images[0]!.mediaType).toBe('image/png');
    read.release();
    expect(budget.available).toBe(budget.totalBytes);
  });

  test('threads keep tool calls and results (and send them back), images as placeholders; events carry them', async () => {
    const key = await newWorkspace();
    openai.enqueue({ toolCalls: [{ id: 'call_t1', name: 'get_weather', arguments: ARGS }] });
    const first = await complete(key, {
      model: 'gpt-4o-mini',
      store: true,
      tools: [WEATHER],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Is this bag waterproof, and will it rain in Lisbon? ' },
            { type: 'image_url', image_url: { url: PNG_DATA_URL } },
            { type: 'image_url', image_url: { url: `${images.url}/roast.png` } },
          ],
        },
      ],
    });
    expect(first.status, first.text).toBe(200);
    const threadId = first.body.thread_id;
    openai.enqueue({ text: 'Rain is likely; the bag is not waterproof.' });
    const second = await complete(key, {
      model: 'gpt-4o-mini',
      thread_id: threadId,
      tools: [WEATHER],
      messages: [{ role: 'tool', tool_call_id: 'call_t1', content: '{"conditions":"rain"}' }],
      stream: true,
    });
    expect(second.status, second.text).toBe(200);
    expect(openai.requests.at(-1)!.body.messages).toEqual([
      {
        role: 'user',
        content: `Is this bag waterproof, and will it rain in Lisbon? [image: image/png, not kept][image: ${images.url}/roast.png]`,
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_t1', type: 'function', function: { name: 'get_weather', arguments: ARGS } }],
      },
      { role: 'tool', tool_call_id: 'call_t1', content: '{"conditions":"rain"}' },
    ]);
    const thread = await server.call('GET', `/v1/chat/threads/${threadId}`, { key });
    expect(schemaErrors('/components/schemas/ChatThreadWithMessages', thread.body)).toEqual([]);
    expect(
      thread.body.messages.map((m: Schemas['ChatMessage']) => [
        m.role,
        m.content,
        m.tool_calls,
        m.tool_call_id,
        m.finish_reason,
      ]),
    ).toEqual([
      [
        'user',
        `Is this bag waterproof, and will it rain in Lisbon? [image: image/png, not kept][image: ${images.url}/roast.png]`,
        null,
        null,
        null,
      ],
      [
        'assistant',
        null,
        [{ id: 'call_t1', type: 'function', function: { name: 'get_weather', arguments: ARGS } }],
        null,
        'tool_calls',
      ],
      ['tool', '{"conditions":"rain"}', null, 'call_t1', null],
      ['assistant', 'Rain is likely; the bag is not waterproof.', null, null, 'stop'],
    ]);
    const events = (
      (await server.call('GET', '/v1/events?limit=100', { key })).body.data as Schemas['ChatMessageCreatedEvent'][]
    ).reverse();
    expect(events.map((e) => e.type)).toEqual(Array(4).fill('chat.message.created'));
    for (const event of events) expect(asyncApiErrors(event)).toEqual([]);
    expect(events[1]!.data).toMatchObject({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_t1', function: { name: 'get_weather' } }],
      tool_call_id: null,
    });
    expect(events[2]!.data).toMatchObject({ role: 'tool', tool_calls: null, tool_call_id: 'call_t1' });
  });

  test('sandbox (no key): a tool loop, streamed calls, parallel calls, and images the server fetched', async () => {
    const key = await newWorkspace();
    const weather = {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Get the current weather in a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    };
    const ask = { role: 'user', content: 'What is the weather in Paris?' };
    const first = await complete(key, { model: 'sandbox-writer', messages: [ask], tools: [weather] });
    expect(first.status, first.text).toBe(200);
    expect(first.body.choices[0]).toMatchObject({
      message: {
        content: null,
        tool_calls: [{ type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      finish_reason: 'tool_calls',
    });
    const streamed = await complete(key, { model: 'sandbox-writer', messages: [ask], tools: [weather], stream: true });
    const chunks = chunksOf(streamed);
    expect(joinedCalls(chunks)).toEqual([
      { id: first.body.choices[0].message.tool_calls[0].id, name: 'get_weather', arguments: '{"city":"Paris"}' },
    ]);
    expect(chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []).length).toBeGreaterThan(2);

    const call = first.body.choices[0].message.tool_calls[0];
    const answer = await complete(key, {
      model: 'sandbox-writer',
      tools: [weather],
      messages: [
        ask,
        first.body.choices[0].message,
        { role: 'tool', tool_call_id: call.id, content: '{"temperature":21,"sky":"clear"}' },
      ],
    });
    expect(answer.body.choices[0]).toMatchObject({
      message: { content: 'get_weather: {"temperature":21,"sky":"clear"}.' },
      finish_reason: 'stop',
    });

    const two = await complete(key, {
      model: 'sandbox-writer',
      messages: [{ role: 'user', content: 'What is the weather in Paris and Berlin?' }],
      tools: [weather],
    });
    expect(
      two.body.choices[0].message.tool_calls.map((c: Schemas['ChatCompletionMessageToolCall']) => c.function.arguments),
    ).toEqual(['{"city":"Paris"}', '{"city":"Berlin"}']);
    const one = await complete(key, {
      model: 'sandbox-writer',
      messages: [{ role: 'user', content: 'What is the weather in Paris and Berlin?' }],
      tools: [weather],
      parallel_tool_calls: false,
    });
    expect(one.body.choices[0].message.tool_calls).toHaveLength(1);

    // The server fetched the image and handed the sandbox its bytes: it reads the PNG's size, as from a data: URL.
    for (const url of [`${images.url}/roast.png`, PNG_DATA_URL]) {
      const echoed = await complete(key, {
        model: 'sandbox-echo',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Describe' },
              { type: 'image_url', image_url: { url } },
            ],
          },
        ],
      });
      expect(echoed.status, echoed.text).toBe(200);
      expect(echoed.body.choices[0].message.content).toBe('Describe [image: PNG, 1×1]');
    }
  });

  test('the output policy covers tool-call arguments: a block, streamed and not, and a redaction that keeps JSON valid', async () => {
    const key = await newWorkspace();
    const rule = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'No competitor names', kind: 'banned_phrase', phrases: ['Globex Coffee'] },
    });
    expect(rule.status, rule.text).toBe(201);
    const banned = '{"query":"prices at Globex Coffee","city":"Lisbon"}';
    openai.enqueue({ toolCalls: [{ name: 'search_prices', arguments: banned }] });
    const search = {
      type: 'function',
      function: {
        name: 'search_prices',
        parameters: { type: 'object', properties: { query: { type: 'string' }, city: { type: 'string' } } },
      },
    };
    const blocked = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Compare prices' }],
      tools: [search],
    });
    expectProblem(blocked, 422, 'policy_violation');
    expect(blocked.body.rule_id).toBe(rule.body.id);
    openai.enqueue({
      toolCalls: [
        {
          name: 'search_prices',
          arguments: banned,
          chunks: ['{"query":"prices at Glo', 'bex Coffee","city":"Lisbon"}'],
        },
      ],
    });
    const streamed = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Compare prices' }],
      tools: [search],
      stream: true,
    });
    expect(streamed.status).toBe(200);
    const [sentChunks, error] = streamed.text.split('event: error');
    expect(JSON.parse(error!.replace(/^\s*data: /, '')).code).toBe('policy_violation');
    // Nothing of the banned phrase went out in the call's fragments.
    expect(sentChunks).toContain('search_prices');
    expect(sentChunks).not.toContain('Globex');

    const redact = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: {
        name: 'Ticket ids',
        kind: 'regex',
        pattern: 'ACME-\\d{4,}',
        action: 'redact',
        replacement: '"ticket"\\hidden',
      },
    });
    expect(redact.status, redact.text).toBe(201);
    const ticket = '{"ticket":"ACME-20931","note":"see ACME-20932"}';
    openai.enqueue({ toolCalls: [{ name: 'search_prices', arguments: ticket }] });
    const whole = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Look up my ticket' }],
      tools: [search],
    });
    expect(whole.status, whole.text).toBe(200);
    const args = whole.body.choices[0].message.tool_calls[0].function.arguments;
    expect(JSON.parse(args)).toEqual({ ticket: '"ticket"\\hidden', note: 'see "ticket"\\hidden' });
    openai.enqueue({
      toolCalls: [
        {
          name: 'search_prices',
          arguments: ticket,
          chunks: ['{"ticket":"ACME-2', '0931","note":"see AC', 'ME-20932"}'],
        },
      ],
    });
    const joined = joinedCalls(
      chunksOf(
        await complete(key, {
          model: 'gpt-4o-mini',
          messages: [{ role: 'user', content: 'Look up my ticket' }],
          tools: [search],
          stream: true,
        }),
      ),
    );
    expect(joined[0]!.arguments).toBe(args);
  });

  test('the output policy reads arguments as decoded: a banned phrase spelt with JSON escapes is blocked, streamed and not', async () => {
    const key = await newWorkspace();
    const rule = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'No forbidden phrase', kind: 'banned_phrase', phrases: ['forbidden phrase'] },
    });
    expect(rule.status, rule.text).toBe(201);
    const note = {
      type: 'function',
      function: {
        name: 'save_note',
        parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      },
    };
    // The sandbox writes a quoted tab as the JSON escape \t; a provider may escape any letter as \u0066.
    const sandbox = {
      model: 'sandbox-writer',
      messages: [{ role: 'user', content: 'Save a note "forbidden\tphrase"' }],
      tools: [note],
    };
    const blocked = await complete(key, sandbox);
    expectProblem(blocked, 422, 'policy_violation');
    expect(blocked.body.rule_id).toBe(rule.body.id);
    const streamedSandbox = await complete(key, { ...sandbox, stream: true });
    expect(streamedSandbox.text).toContain('event: error');
    expect(streamedSandbox.text.split('event: error')[0]).not.toContain('phrase');
    for (const chunks of [['{"text":"\\u0066orbidden phrase"}'], ['{"text":"\\u00', '66orbidden phr', 'ase"}']]) {
      openai.enqueue({ toolCalls: [{ name: 'save_note', arguments: chunks.join(''), chunks }] });
      const upstream = await complete(key, {
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Take a note' }],
        tools: [note],
        stream: chunks.length > 1,
      });
      if (chunks.length === 1) expectProblem(upstream, 422, 'policy_violation');
      else {
        expect(upstream.text).toContain('event: error');
        expect(upstream.text.split('event: error')[0]).not.toContain('orbidden');
      }
    }
    // A redaction inside an escaped string re-encodes the string: the arguments still parse, to the redacted text.
    const redact = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'Ticket ids', kind: 'regex', pattern: 'ACME-\\d{4,}', action: 'redact', replacement: '[ticket]' },
    });
    expect(redact.status, redact.text).toBe(201);
    openai.enqueue({ toolCalls: [{ name: 'save_note', arguments: '{"text":"see\\tACME-\\u0032\\u00300931\\n"}' }] });
    const redacted = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Take a note' }],
      tools: [note],
    });
    expect(redacted.status, redacted.text).toBe(200);
    expect(JSON.parse(redacted.body.choices[0].message.tool_calls[0].function.arguments)).toEqual({
      text: 'see\t[ticket]\n',
    });
  });
});

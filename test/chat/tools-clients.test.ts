// Clients, unmodified, calling tools through our API against the sandbox (no key): the official `openai` SDK (tools,
// a tool-result round trip, its runTools loop, a stream with `tool_calls` deltas, an image part), LangChain's ChatOpenAI with
// `bindTools(...).invoke`, and the AI SDK's `createOpenAI({baseURL, apiKey}).chat(model)` running its own tool loop
// with generateText and streamText.
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';

const WEATHER: OpenAI.Chat.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    },
  },
};
/** A 1×1 PNG. */
const PNG_DATA_URL =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

describe('clients calling tools', () => {
  let server: TestServer;
  let openai: OpenAI;

  beforeAll(async () => {
    server = await startTestServer();
    openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.ownerKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.close();
  });

  test('openai: a tool call, its result sent back, and the answer', async () => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'What is the weather in Paris?' },
    ];
    const first = await openai.chat.completions.create({ model: 'sandbox-writer', messages, tools: [WEATHER] });
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const call = choice.message.tool_calls![0]!;
    expect(call.type).toBe('function');
    if (call.type !== 'function') throw new Error('a function call was expected');
    expect(call.function).toEqual({ name: 'get_weather', arguments: '{"city":"Paris"}' });
    messages.push(choice.message, {
      role: 'tool',
      tool_call_id: call.id,
      content: JSON.stringify({ temperature: 21, sky: 'clear' }),
    });
    const second = await openai.chat.completions.create({ model: 'sandbox-writer', messages, tools: [WEATHER] });
    expect(second.choices[0]!.message.content).toBe('get_weather: {"temperature":21,"sky":"clear"}.');
    expect(second.choices[0]!.finish_reason).toBe('stop');
  });

  // openai 7 sends back only the fields of a request message; what openai 5 added (`parsed`) is tools.test.ts's.
  test('openai: runTools runs the function and ends with the text, streamed and not', async () => {
    const cities: string[] = [];
    const weather = {
      type: 'function' as const,
      function: {
        name: WEATHER.function.name,
        description: WEATHER.function.description!,
        parameters: WEATHER.function.parameters!,
        parse: (text: string) => JSON.parse(text) as { city: string },
        function: ({ city }: { city: string }) => {
          cities.push(city);
          return { temperature: 21, sky: 'clear' };
        },
      },
    };
    const params = {
      model: 'sandbox-writer',
      messages: [{ role: 'user' as const, content: 'What is the weather in Paris?' }],
      tools: [weather],
    };
    for (const runner of [
      openai.chat.completions.runTools({ ...params, stream: false }),
      openai.chat.completions.runTools({ ...params, stream: true }),
    ])
      expect(await runner.finalContent()).toBe('get_weather: {"temperature":21,"sky":"clear"}.');
    expect(cities).toEqual(['Paris', 'Paris']);
  });

  test('openai: a stream’s tool_calls deltas, joined by the SDK’s own helper, are the call', async () => {
    const stream = openai.chat.completions.stream({
      model: 'sandbox-writer',
      messages: [{ role: 'user', content: 'What is the weather in Paris and Berlin?' }],
      tools: [WEATHER],
    });
    let deltas = 0;
    stream.on('chunk', (chunk) => (deltas += chunk.choices[0]?.delta.tool_calls?.length ?? 0));
    const final = await stream.finalChatCompletion();
    const calls = final.choices[0]!.message.tool_calls!.map((call) =>
      call.type === 'function' ? call.function : null,
    );
    expect(calls).toEqual([
      { name: 'get_weather', arguments: '{"city":"Paris"}' },
      { name: 'get_weather', arguments: '{"city":"Berlin"}' },
    ]);
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    expect(deltas).toBeGreaterThan(4);
  });

  test('openai: an image part', async () => {
    const completion = await openai.chat.completions.create({
      model: 'sandbox-echo',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture?' },
            { type: 'image_url', image_url: { url: PNG_DATA_URL, detail: 'low' } },
          ],
        },
      ],
    });
    expect(completion.choices[0]!.message.content).toBe('What is in this picture? [image: PNG, 1×1]');
    const refused = await openai.chat.completions
      .create({
        model: 'sandbox-echo',
        messages: [
          {
            role: 'user',
            content: [{ type: 'image_url', image_url: { url: 'https://169.254.169.254/latest/meta-data/x.png' } }],
          },
        ],
      })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect((refused as InstanceType<typeof OpenAI.UnprocessableEntityError>).code).toBe('image_unreadable');
  });

  test('LangChain: ChatOpenAI.bindTools(...).invoke gives the tool call', async () => {
    const model = new ChatOpenAI({
      model: 'sandbox-writer',
      apiKey: server.ownerKey,
      configuration: { baseURL: `${server.url}/v1` },
      maxRetries: 0,
    });
    const message = await model.bindTools([WEATHER]).invoke('What is the weather in Paris?');
    expect(message.tool_calls).toEqual([
      { name: 'get_weather', args: { city: 'Paris' }, id: expect.stringMatching(/^call_/), type: 'tool_call' },
    ]);
  });

  test('AI SDK: createOpenAI().chat() runs the tool loop with generateText and streamText', async () => {
    const model = createOpenAI({ baseURL: `${server.url}/v1`, apiKey: server.ownerKey }).chat('sandbox-writer');
    const cities: string[] = [];
    const tools = {
      get_weather: tool({
        description: 'Get the current weather in a city',
        inputSchema: jsonSchema<{ city: string }>({
          type: 'object',
          properties: { city: { type: 'string' } },
          required: ['city'],
        }),
        execute: async ({ city }) => (cities.push(city), { city, temperature: 21 }),
      }),
    };
    const result = await generateText({
      model,
      tools,
      stopWhen: stepCountIs(3),
      prompt: 'What is the weather in Paris?',
    });
    expect(cities).toEqual(['Paris']);
    expect(result.steps).toHaveLength(2);
    expect(result.text).toBe('get_weather: {"city":"Paris","temperature":21}.');

    const streamed = streamText({ model, tools, stopWhen: stepCountIs(3), prompt: 'What is the weather in Berlin?' });
    let text = '';
    for await (const part of streamed.textStream) text += part;
    expect(cities).toEqual(['Paris', 'Berlin']);
    expect(text).toBe('get_weather: {"city":"Berlin","temperature":21}.');
  });
});

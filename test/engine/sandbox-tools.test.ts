// The sandbox models' tool calls and image reading (src/features/engine/providers/sandbox/model.ts, sandbox-tools.ts; the rules in
// docs/engine.md, "The sandbox models"): called straight through the LanguageModelV4 interface the engine uses, and
// through the AI SDK's generateText/streamText with tools that execute, so a whole agent loop runs offline.
import type {
  JSONSchema7,
  LanguageModelV4CallOptions,
  LanguageModelV4FunctionTool,
  LanguageModelV4Message,
  LanguageModelV4StreamPart,
  LanguageModelV4ToolResultOutput,
} from '@ai-sdk/provider';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { Ajv } from 'ajv';
import { describe, expect, test } from 'vitest';
import { imageTokens } from '../../src/features/engine/image-info.ts';
import { sandboxModel } from '../../src/features/engine/providers/sandbox/model.ts';
import { countPromptTokens, countTokens } from '../../src/features/engine/tokens.ts';
import { gif, jpeg, png, WEBP_1X1 } from '../support/images.ts';

const WEATHER_SCHEMA: JSONSchema7 = {
  type: 'object',
  properties: {
    city: { type: 'string', description: 'The city, e.g. Paris' },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
  },
  required: ['city'],
  additionalProperties: false,
};
const weather: LanguageModelV4FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Get the current weather in a city',
  inputSchema: WEATHER_SCHEMA,
};
const search: LanguageModelV4FunctionTool = {
  type: 'function',
  name: 'searchHelpArticles',
  description: 'Search the help centre',
  inputSchema: {
    type: 'object',
    properties: { query: { type: 'string' }, limit: { type: 'integer', minimum: 1, maximum: 10 } },
    required: ['query'],
  },
};
const translate: LanguageModelV4FunctionTool = {
  type: 'function',
  name: 'translate-text',
  description: 'Translate text into another language',
  inputSchema: {
    type: 'object',
    properties: { text: { type: 'string' }, language: { type: 'string', enum: ['French', 'German', 'Spanish'] } },
    required: ['text', 'language'],
  },
};

const user = (text: string): LanguageModelV4Message => ({ role: 'user', content: [{ type: 'text', text }] });

function options(
  prompt: LanguageModelV4Message[] | string,
  extra: Partial<LanguageModelV4CallOptions> = {},
): LanguageModelV4CallOptions {
  return { prompt: typeof prompt === 'string' ? [user(prompt)] : prompt, ...extra };
}

async function generated(model: string, call: LanguageModelV4CallOptions) {
  return sandboxModel(model).doGenerate(call);
}

/** The calls of a doGenerate result, with their arguments parsed. */
async function callsOf(model: string, call: LanguageModelV4CallOptions) {
  const result = await generated(model, call);
  return result.content.flatMap((part) =>
    part.type === 'tool-call'
      ? [{ id: part.toolCallId, name: part.toolName, args: JSON.parse(part.input) as unknown }]
      : [],
  );
}

async function textOf(model: string, call: LanguageModelV4CallOptions): Promise<string> {
  const result = await generated(model, call);
  expect(result.content.every((part) => part.type === 'text')).toBe(true);
  return result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

async function streamed(model: string, call: LanguageModelV4CallOptions): Promise<LanguageModelV4StreamPart[]> {
  const { stream } = await sandboxModel(model).doStream(call);
  const parts: LanguageModelV4StreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

const ajv = new Ajv({ strict: false, allErrors: true });
function expectValid(schema: JSONSchema7, value: unknown) {
  const validate = ajv.compile(schema);
  expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
}

describe('which tool the sandbox calls', () => {
  test('auto: the tool that shares the most words with the message', async () => {
    const result = await generated(
      'sandbox-writer',
      options("What's the weather in Paris?", { tools: [search, weather], toolChoice: { type: 'auto' } }),
    );
    expect(result.finishReason).toEqual({ unified: 'tool-calls', raw: 'tool_calls' });
    expect(result.content).toHaveLength(1);
    const [call] = result.content;
    expect(call).toMatchObject({ type: 'tool-call', toolName: 'get_weather', input: '{"city":"Paris"}' });
    // camelCase names are split: "articles" matches "searchHelpArticles" (and the plural "article").
    expect(
      await callsOf('sandbox-writer', options('A help article about invoices, please', { tools: [weather, search] })),
    ).toMatchObject([{ name: 'searchHelpArticles', args: { query: 'invoices' } }]);
    // auto is the default.
    expect(await callsOf('sandbox-writer', options('weather in Oslo', { tools: [weather] }))).toMatchObject([
      { name: 'get_weather', args: { city: 'Oslo' } },
    ]);
  });

  test('auto without a matching tool answers in text, as without tools', async () => {
    const message = 'Write a short poem about autumn leaves';
    const result = await generated('sandbox-writer', options(message, { tools: [weather, search] }));
    expect(result.finishReason).toEqual({ unified: 'stop', raw: 'stop' });
    expect(await textOf('sandbox-writer', options(message, { tools: [weather, search] }))).toBe(
      await textOf('sandbox-writer', options(message)),
    );
  });

  test('equal scores: the first tool offered', async () => {
    const forecast: LanguageModelV4FunctionTool = {
      type: 'function',
      name: 'weather_forecast',
      inputSchema: WEATHER_SCHEMA,
    };
    expect((await callsOf('sandbox-writer', options('weather in Rome', { tools: [forecast, weather] })))[0]!.name).toBe(
      'weather_forecast',
    );
    expect((await callsOf('sandbox-writer', options('weather in Rome', { tools: [weather, forecast] })))[0]!.name).toBe(
      'get_weather',
    );
    // A second shared word wins: "forecast".
    expect(
      (await callsOf('sandbox-writer', options('the weather forecast in Rome', { tools: [weather, forecast] })))[0]!
        .name,
    ).toBe('weather_forecast');
  });

  test('required: the best tool, the first offered when none matches', async () => {
    expect(
      await callsOf(
        'sandbox-writer',
        options('Hello there', { tools: [search, weather], toolChoice: { type: 'required' } }),
      ),
    ).toMatchObject([{ name: 'searchHelpArticles' }]);
    expect(
      await callsOf(
        'sandbox-writer',
        options('Is it raining? Weather in Lyon', { tools: [search, weather], toolChoice: { type: 'required' } }),
      ),
    ).toMatchObject([{ name: 'get_weather', args: { city: 'Lyon' } }]);
    // sandbox-echo calls the first tool offered.
    expect(
      await callsOf(
        'sandbox-echo',
        options('Weather in Lyon', { tools: [search, weather], toolChoice: { type: 'required' } }),
      ),
    ).toMatchObject([{ name: 'searchHelpArticles', args: { query: 'weather lyon' } }]);
  });

  test('a named tool is called whatever the message; a name not offered gets a text answer', async () => {
    expect(
      await callsOf(
        'sandbox-writer',
        options('weather in Paris', {
          tools: [weather, search],
          toolChoice: { type: 'tool', toolName: 'searchHelpArticles' },
        }),
      ),
    ).toMatchObject([{ name: 'searchHelpArticles', args: { query: 'weather paris' } }]);
    expect(
      await callsOf(
        'sandbox-echo',
        options('weather in Paris', {
          tools: [weather, search],
          toolChoice: { type: 'tool', toolName: 'get_weather' },
        }),
      ),
    ).toMatchObject([{ name: 'get_weather', args: { city: 'Paris' } }]);
    expect(
      await textOf(
        'sandbox-writer',
        options('weather in Paris', { tools: [weather], toolChoice: { type: 'tool', toolName: 'get_time' } }),
      ),
    ).toBe(await textOf('sandbox-writer', options('weather in Paris')));
  });

  test('none, and sandbox-echo under auto: no call', async () => {
    expect(
      await textOf('sandbox-writer', options('weather in Paris', { tools: [weather], toolChoice: { type: 'none' } })),
    ).toBe(await textOf('sandbox-writer', options('weather in Paris')));
    expect(await textOf('sandbox-echo', options('weather in Paris', { tools: [weather] }))).toBe('weather in Paris');
  });

  test('provider tools are not called', async () => {
    const providerTool = { type: 'provider' as const, id: 'openai.web_search' as const, name: 'web_search', args: {} };
    expect(
      await textOf(
        'sandbox-writer',
        options('search the web', { tools: [providerTool], toolChoice: { type: 'required' } }),
      ),
    ).toMatch(/^Here's a first draft about search the web\. /);
  });

  test('ids: call_ and 24 letters and digits, the same for the same call, distinct between calls', async () => {
    const first = await callsOf('sandbox-writer', options('weather in Paris and Berlin', { tools: [weather] }));
    expect(first.map((call) => call.id)).toEqual([
      expect.stringMatching(/^call_[A-Za-z0-9]{24}$/),
      expect.stringMatching(/^call_[A-Za-z0-9]{24}$/),
    ]);
    expect(new Set(first.map((call) => call.id)).size).toBe(2);
    expect(await callsOf('sandbox-writer', options('weather in Paris and Berlin', { tools: [weather] }))).toEqual(
      first,
    );
    const other = await callsOf('sandbox-writer', options('weather in Paris', { tools: [weather] }));
    expect(other[0]!.id).not.toBe(first[0]!.id);
    const echoed = await callsOf(
      'sandbox-echo',
      options('weather in Paris and Berlin', { tools: [weather], toolChoice: { type: 'required' } }),
    );
    expect(echoed[0]!.id).not.toBe(first[0]!.id);
  });

  test('choices and seeds do not change a tool call', async () => {
    const plain = await callsOf('sandbox-writer', options('weather in Paris', { tools: [weather] }));
    expect(
      await callsOf(
        'sandbox-writer',
        options('weather in Paris', { tools: [weather], seed: 7, providerOptions: { sandbox: { choice: 2 } } }),
      ),
    ).toEqual(plain);
  });
});

describe('the arguments', () => {
  test('places: the capitalised names after a preposition, in order', async () => {
    const flight: LanguageModelV4FunctionTool = {
      type: 'function',
      name: 'book_flight',
      description: 'Book a flight',
      inputSchema: {
        type: 'object',
        properties: {
          origin: { type: 'string' },
          destination: { type: 'string' },
          passengers: { type: 'integer', minimum: 1, maximum: 9 },
        },
        required: ['origin', 'destination', 'passengers'],
      },
    };
    expect(
      await callsOf(
        'sandbox-writer',
        options('Book a flight from New York to Los Angeles for 12 people', { tools: [flight] }),
      ),
    ).toMatchObject([{ args: { origin: 'New York', destination: 'Los Angeles', passengers: 9 } }]);
    // No number: the minimum.
    expect(
      await callsOf('sandbox-writer', options('Book a flight from Lisbon to Porto', { tools: [flight] })),
    ).toMatchObject([{ args: { origin: 'Lisbon', destination: 'Porto', passengers: 1 } }]);
  });

  test('an enum takes the first of its values the message names, else its first; optional properties only when named', async () => {
    expect(
      await callsOf('sandbox-writer', options('What is the weather in Denver in Fahrenheit?', { tools: [weather] })),
    ).toMatchObject([{ args: { city: 'Denver', unit: 'fahrenheit' } }]);
    expect((await callsOf('sandbox-writer', options('weather in Denver', { tools: [weather] })))[0]!.args).toEqual({
      city: 'Denver',
    });
    expect(
      await callsOf('sandbox-writer', options('Translate "good morning" please', { tools: [translate] })),
    ).toMatchObject([{ args: { text: 'good morning', language: 'French' } }]);
    expect(
      await callsOf('sandbox-writer', options('Translate “good morning” into German', { tools: [translate] })),
    ).toMatchObject([{ args: { text: 'good morning', language: 'German' } }]);
  });

  test('strings: quoted phrases in order, else the key terms that are not the tool’s own words', async () => {
    expect(
      await callsOf('sandbox-writer', options('Search the help centre for refund policy, top 3', { tools: [search] })),
    ).toMatchObject([{ args: { query: 'refund policy', limit: 3 } }]);
    expect(
      await callsOf('sandbox-writer', options('Search help for "reset password"', { tools: [search] })),
    ).toMatchObject([{ args: { query: 'reset password' } }]);
    const email: LanguageModelV4FunctionTool = {
      type: 'function',
      name: 'send_email',
      inputSchema: {
        type: 'object',
        properties: { subject: { type: 'string', maxLength: 10 }, body: { type: 'string', minLength: 20 } },
        required: ['subject', 'body'],
      },
    };
    expect(
      await callsOf(
        'sandbox-writer',
        options('Send an email "Quarterly numbers" saying "See attached"', { tools: [email] }),
      ),
    ).toMatchObject([{ args: { subject: 'Quarterly ', body: 'See attached........' } }]);
  });

  test('numbers in order, within the bounds; booleans from the property’s name', async () => {
    const add: LanguageModelV4FunctionTool = {
      type: 'function',
      name: 'add_numbers',
      description: 'Add two numbers',
      inputSchema: {
        type: 'object',
        properties: {
          a: { type: 'number' },
          b: { type: 'number', exclusiveMinimum: 0 },
          round: { type: 'boolean' },
          precise: { type: 'boolean' },
        },
        required: ['a', 'b', 'round', 'precise'],
      },
    };
    expect(
      await callsOf('sandbox-writer', options('Add the numbers 12,500.5 and -3, rounded', { tools: [add] })),
    ).toMatchObject([{ args: { a: 12500.5, b: 1, round: true, precise: false } }]);
  });

  test('arguments are valid against their schema, whatever the message', async () => {
    const schema: JSONSchema7 = {
      type: 'object',
      properties: {
        title: { type: 'string', minLength: 3, maxLength: 40 },
        cities: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3 },
        priority: { type: 'string', enum: ['low', 'normal', 'high'] },
        count: { type: 'integer', minimum: 2, maximum: 5 },
        ratio: { type: 'number', exclusiveMaximum: 1 },
        scores: { type: 'array', items: { type: 'number', minimum: 0 }, minItems: 2 },
        urgent: { type: 'boolean' },
        note: { anyOf: [{ type: 'null' }, { type: 'string' }] },
        kind: { const: 'event' },
        tags: { type: 'array', items: { type: 'string', enum: ['work', 'home', 'travel'] } },
        when: {
          type: 'object',
          properties: { day: { type: 'string' }, hour: { type: 'integer', minimum: 0, maximum: 23 } },
          required: ['day', 'hour'],
        },
        nothing: { type: 'null' },
      },
      required: [
        'title',
        'cities',
        'priority',
        'count',
        'ratio',
        'scores',
        'urgent',
        'note',
        'kind',
        'tags',
        'when',
        'nothing',
      ],
      additionalProperties: false,
    };
    const planner: LanguageModelV4FunctionTool = {
      type: 'function',
      name: 'plan_event',
      description: 'Plan an event',
      inputSchema: schema,
      strict: true,
    };
    const messages = [
      'Plan an urgent event in Paris, Berlin, Rome and Oslo at 9 with high priority for work and travel, ratio 7',
      'plan',
      '',
      'Plan "Team offsite" with "a very long quoted phrase that is much longer than forty characters" in Madrid',
      '¿Dónde está la biblioteca? 日本語のテキスト -1 -2 -3',
    ];
    for (const message of messages) {
      const calls = await callsOf(
        'sandbox-writer',
        options(message, { tools: [planner], toolChoice: { type: 'required' } }),
      );
      expect(calls.length).toBeGreaterThan(0);
      for (const call of calls) expectValid(schema, call.args);
    }
    const [first] = await callsOf(
      'sandbox-writer',
      options(messages[0]!, { tools: [planner], toolChoice: { type: 'required' } }),
    );
    expect(first!.args).toMatchObject({
      cities: ['Paris', 'Berlin', 'Rome'],
      priority: 'high',
      count: 5,
      urgent: true,
      kind: 'event',
      tags: ['work', 'travel'],
      nothing: null,
    });
  });

  test('a schema without properties gets {}', async () => {
    const now: LanguageModelV4FunctionTool = {
      type: 'function',
      name: 'current_time',
      description: 'The current time',
      inputSchema: { type: 'object', properties: {} },
    };
    expect(
      await callsOf('sandbox-writer', options('What time is it? Current time please', { tools: [now] })),
    ).toMatchObject([{ name: 'current_time', args: {} }]);
  });
});

describe('parallel calls', () => {
  test('one call per listed value of the first required string, at most 4', async () => {
    const calls = await callsOf(
      'sandbox-writer',
      options("What's the weather in Paris and Berlin, in celsius?", { tools: [weather] }),
    );
    expect(calls.map((call) => call.args)).toEqual([
      { city: 'Paris', unit: 'celsius' },
      { city: 'Berlin', unit: 'celsius' },
    ]);
    const many = await callsOf(
      'sandbox-writer',
      options('weather in Paris, Berlin, Rome, Madrid and Lisbon', { tools: [weather] }),
    );
    expect(many.map((call) => (call.args as { city: string }).city)).toEqual(['Paris', 'Berlin', 'Rome', 'Madrid']);
    // Quoted phrases joined by "or" are a list too.
    expect(
      (await callsOf('sandbox-writer', options('Search help for "refunds" or "returns"', { tools: [search] }))).map(
        (call) => call.args,
      ),
    ).toEqual([{ query: 'refunds' }, { query: 'returns' }]);
  });

  test('providerOptions.sandbox.parallelToolCalls: false makes one call, with the first value', async () => {
    const calls = await callsOf(
      'sandbox-writer',
      options('weather in Paris and Berlin', {
        tools: [weather],
        providerOptions: { sandbox: { parallelToolCalls: false } },
      }),
    );
    expect(calls.map((call) => call.args)).toEqual([{ city: 'Paris' }]);
  });
});

describe('after tool results', () => {
  const toolTurn = (outputs: Array<[string, LanguageModelV4ToolResultOutput]>): LanguageModelV4Message[] => [
    user('What is the weather in Paris and Berlin?'),
    {
      role: 'assistant',
      content: outputs.map(([name], i) => ({
        type: 'tool-call' as const,
        toolCallId: `call_${i}`,
        toolName: name,
        input: { city: i === 0 ? 'Paris' : 'Berlin' },
      })),
    },
    {
      role: 'tool',
      content: outputs.map(([name, output], i) => ({
        type: 'tool-result' as const,
        toolCallId: `call_${i}`,
        toolName: name,
        output,
      })),
    },
  ];

  test('sandbox-writer answers each result in order: "<tool name>: <result text>."', async () => {
    const prompt = toolTurn([
      ['get_weather', { type: 'json', value: { temperature: 21, sky: 'clear' } }],
      ['get_weather', { type: 'text', value: 'Rain all day!' }],
    ]);
    const result = await generated('sandbox-writer', options(prompt, { tools: [weather] }));
    expect(result.finishReason).toEqual({ unified: 'stop', raw: 'stop' });
    expect(result.content).toEqual([
      { type: 'text', text: 'get_weather: {"temperature":21,"sky":"clear"}. get_weather: Rain all day!' },
    ]);
  });

  test('errors and denials, and results in separate tool messages', async () => {
    const [asked, calls, results] = toolTurn([
      ['get_weather', { type: 'error-text', value: 'city not found' }],
      ['get_weather', { type: 'execution-denied', reason: 'not allowed' }],
    ]);
    const split = [
      asked!,
      calls!,
      { ...results!, content: [results!.content[0]!] } as LanguageModelV4Message,
      { ...results!, content: [results!.content[1]!] } as LanguageModelV4Message,
    ];
    expect(await textOf('sandbox-writer', options(split, { tools: [weather] }))).toBe(
      'get_weather: error: city not found. get_weather: denied: not allowed.',
    );
    const json = toolTurn([['get_weather', { type: 'error-json', value: { code: 404 } }]]);
    expect(await textOf('sandbox-writer', options(json))).toBe('get_weather: error: {"code":404}.');
    const content = toolTurn([
      [
        'get_weather',
        {
          type: 'content',
          value: [
            { type: 'text', text: 'Sunny' },
            { type: 'text', text: 'and warm' },
          ],
        },
      ],
    ]);
    expect(await textOf('sandbox-writer', options(content))).toBe('get_weather: Sunny and warm.');
  });

  test('sandbox-echo echoes the last result', async () => {
    const prompt = toolTurn([
      ['get_weather', { type: 'text', value: 'Sunny' }],
      ['get_weather', { type: 'json', value: { temperature: 12 } }],
    ]);
    expect(await textOf('sandbox-echo', options(prompt, { tools: [weather] }))).toBe('{"temperature":12}');
  });

  test('no call under auto; required calls again', async () => {
    const prompt = toolTurn([['get_weather', { type: 'text', value: 'Sunny' }]]);
    expect(await textOf('sandbox-writer', options(prompt, { tools: [weather], toolChoice: { type: 'auto' } }))).toBe(
      'get_weather: Sunny.',
    );
    expect(
      await callsOf('sandbox-writer', options(prompt, { tools: [weather], toolChoice: { type: 'required' } })),
    ).toMatchObject([{ name: 'get_weather' }, { name: 'get_weather' }]);
  });

  test('stop, max_tokens and JSON apply to the answer', async () => {
    const prompt = toolTurn([['get_weather', { type: 'text', value: 'Sunny and warm' }]]);
    expect(await textOf('sandbox-writer', options(prompt, { stopSequences: [' and'] }))).toBe('get_weather: Sunny');
    const cut = await generated('sandbox-writer', options(prompt, { maxOutputTokens: 2 }));
    expect(cut.finishReason.unified).toBe('length');
    const json = await textOf('sandbox-writer', options(prompt, { responseFormat: { type: 'json' } }));
    expect(JSON.parse(json)).toEqual({
      reply: 'get_weather: Sunny and warm.',
      key_terms: ['weather', 'sunny', 'warm'],
    });
  });
});

describe('limits, formats and streaming of a call', () => {
  test('stop does not cut a call, max_tokens does (finish length); a JSON response format does not stop one', async () => {
    const call = options('weather in Paris', {
      tools: [weather],
      stopSequences: ['Paris'],
      responseFormat: { type: 'json' },
    });
    const result = await generated('sandbox-writer', call);
    expect(result.finishReason.unified).toBe('tool-calls');
    expect(result.content).toMatchObject([{ type: 'tool-call', input: '{"city":"Paris"}' }]);
    // The name takes its tokens first, then the arguments as many as are left, as OpenAI's models stop mid-call.
    const name = countTokens('get_weather');
    const cut = await generated('sandbox-writer', { ...call, maxOutputTokens: name + 2 });
    expect(cut.finishReason).toEqual({ unified: 'length', raw: 'length' });
    expect(cut.content).toMatchObject([{ type: 'tool-call', toolName: 'get_weather' }]);
    const input = (cut.content[0] as { input: string }).input;
    expect('{"city":"Paris"}'.startsWith(input) && input.length < '{"city":"Paris"}'.length).toBe(true);
    expect(countTokens(input)).toBe(2);
    expect(cut.usage.outputTokens.total).toBe(name + 2);
    // A quoted argument of 40 KB with max_tokens 1: one token is written and billed, not the whole argument.
    const long = await generated(
      'sandbox-writer',
      options(`Save a note "${'lorem ipsum '.repeat(3_400)}"`, {
        tools: [
          {
            type: 'function',
            name: 'save_note',
            inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
          },
        ],
        maxOutputTokens: 1,
      }),
    );
    expect(long.finishReason.unified).toBe('length');
    expect(long.usage.outputTokens.total).toBeLessThanOrEqual(1);
    // Without a matching tool, the text answer is in the format asked for.
    const text = await textOf(
      'sandbox-writer',
      options('Write about autumn leaves', { tools: [weather], responseFormat: { type: 'json' } }),
    );
    expect(JSON.parse(text)).toMatchObject({ key_terms: ['autumn', 'leaves'] });
  });

  test('doStream: start, fragments cut after each ":" and ",", end, then the whole call, for each call', async () => {
    const parts = await streamed(
      'sandbox-writer',
      options('weather in Paris and Berlin, in fahrenheit', { tools: [weather] }),
    );
    const generatedCalls = await callsOf(
      'sandbox-writer',
      options('weather in Paris and Berlin, in fahrenheit', { tools: [weather] }),
    );
    expect(parts[0]).toEqual({ type: 'stream-start', warnings: [] });
    expect(parts.at(-1)).toMatchObject({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' } });
    expect(parts.some((part) => part.type.startsWith('text'))).toBe(false);
    const calls = parts.filter((part) => part.type === 'tool-call');
    expect(
      calls.map((call) => ({ id: call.toolCallId, name: call.toolName, args: JSON.parse(call.input) as unknown })),
    ).toEqual(generatedCalls);
    for (const call of calls) {
      const own = parts.filter((part) => 'id' in part && part.id === call.toolCallId);
      expect(own[0]).toEqual({ type: 'tool-input-start', id: call.toolCallId, toolName: 'get_weather' });
      expect(own.at(-1)).toEqual({ type: 'tool-input-end', id: call.toolCallId });
      const deltas = own.filter((part) => part.type === 'tool-input-delta').map((part) => part.delta);
      expect(deltas.join('')).toBe(call.input);
      expect(deltas).toEqual([
        '{"city":',
        `"${(JSON.parse(call.input) as { city: string }).city}",`,
        '"unit":',
        '"fahrenheit"}',
      ]);
      // The whole call follows its end.
      expect(parts.indexOf(call)).toBe(parts.indexOf(own.at(-1)!) + 1);
    }
  });

  test('usage: the tool definitions count as input, the calls as output', async () => {
    const message = 'weather in Paris and Berlin';
    const result = await generated('sandbox-writer', options(message, { tools: [weather, search] }));
    const definitions = [weather, search].reduce(
      (sum, t) =>
        sum + countTokens(t.name) + countTokens(t.description ?? '') + countTokens(JSON.stringify(t.inputSchema)),
      0,
    );
    expect(result.usage.inputTokens.total).toBe(countPromptTokens([{ content: message }]) + definitions);
    expect(result.usage.outputTokens.total).toBe(
      2 * countTokens('get_weather') + countTokens('{"city":"Paris"}') + countTokens('{"city":"Berlin"}'),
    );
    const streamedFinish = (await streamed('sandbox-writer', options(message, { tools: [weather, search] }))).at(-1);
    expect(streamedFinish).toMatchObject({ type: 'finish', usage: result.usage });
    // toolChoice none still sends the definitions.
    const none = await generated(
      'sandbox-writer',
      options(message, { tools: [weather, search], toolChoice: { type: 'none' } }),
    );
    expect(none.usage.inputTokens.total).toBe(result.usage.inputTokens.total);
    // The calls and results in the prompt count as their text.
    const prompt: LanguageModelV4Message[] = [
      user(message),
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'call_1', toolName: 'get_weather', input: { city: 'Paris' } }],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'call_1',
            toolName: 'get_weather',
            output: { type: 'json', value: { temperature: 21 } },
          },
        ],
      },
    ];
    const after = await generated('sandbox-writer', options(prompt));
    expect(after.usage.inputTokens.total).toBe(
      countPromptTokens([
        { content: message },
        { content: 'get_weather {"city":"Paris"}' },
        { content: '{"temperature":21}' },
      ]),
    );
  });
});

describe('images', () => {
  const withImage = (
    text: string,
    data: Uint8Array | string | URL,
    mediaType = 'image/png',
    providerOptions?: Record<string, Record<string, string>>,
  ): LanguageModelV4Message => ({
    role: 'user',
    content: [
      { type: 'text', text },
      {
        type: 'file',
        mediaType,
        data: data instanceof URL ? { type: 'url', url: data } : { type: 'data', data },
        ...(providerOptions ? { providerOptions } : {}),
      },
    ],
  });

  test('sandbox-echo puts a marker in place of each image', async () => {
    expect(await textOf('sandbox-echo', options([withImage('What is this?', png(640, 480))]))).toBe(
      'What is this? [image: PNG, 640×480]',
    );
    expect(await textOf('sandbox-echo', options([withImage('', jpeg(16, 8), 'image/jpeg')]))).toBe(
      '[image: JPEG, 16×8]',
    );
    const several: LanguageModelV4Message = {
      role: 'user',
      content: [
        { type: 'file', mediaType: 'image/gif', data: { type: 'data', data: gif(3, 2) } },
        { type: 'text', text: 'then ' },
        {
          type: 'file',
          mediaType: 'image/webp',
          data: { type: 'data', data: Buffer.from(WEBP_1X1.lossless).toString('base64') },
        },
        { type: 'text', text: 'and' },
        { type: 'file', mediaType: 'image/png', data: { type: 'data', data: Buffer.from('not a png') } },
        { type: 'file', mediaType: 'image/png', data: { type: 'url', url: new URL('https://example.com/cat.png') } },
      ],
    };
    expect(await textOf('sandbox-echo', options([several]))).toBe(
      '[image: GIF, 3×2] then [image: WebP, 1×1] and [image: unreadable, 9 bytes] [image: https://example.com/cat.png, not fetched]',
    );
  });

  test('a provider reference is not read; the bare data forms of earlier interfaces are read too', async () => {
    const odd: LanguageModelV4Message = {
      role: 'user',
      content: [
        { type: 'file', mediaType: 'image/png', data: { type: 'reference', reference: { openai: 'file-abc' } } },
        { type: 'file', mediaType: 'image/png', data: png(2, 2) as never },
        { type: 'file', mediaType: 'image/gif', data: Buffer.from(gif(5, 4)).toString('base64') as never },
        { type: 'file', mediaType: 'image/png', data: new URL('https://example.com/a.png') as never },
        { type: 'file', mediaType: 'application/pdf', data: { type: 'data', data: new Uint8Array(4) } },
      ],
    };
    expect(await textOf('sandbox-echo', options([odd]))).toBe(
      '[image: provider reference, not read] [image: PNG, 2×2] [image: GIF, 5×4] [image: https://example.com/a.png, not fetched]',
    );
  });

  test('sandbox-writer describes each image before its draft, or alone', async () => {
    expect(await textOf('sandbox-writer', options([withImage('', png(640, 480))]))).toBe(
      'The image is a PNG of 640×480 pixels (landscape).',
    );
    expect(await textOf('sandbox-writer', options([withImage('What is this?', jpeg(600, 800), 'image/jpeg')]))).toBe(
      'The image is a JPEG of 600×800 pixels (portrait).',
    );
    expect(
      await textOf(
        'sandbox-writer',
        options([withImage('Describe the garden photo', WEBP_1X1.extended, 'image/webp')]),
      ),
    ).toBe(
      `The image is a WebP of 1×1 pixels (square). ${await textOf('sandbox-writer', options('Describe the garden photo'))}`,
    );
    const two: LanguageModelV4Message = {
      role: 'user',
      content: [
        { type: 'file', mediaType: 'image/png', data: { type: 'data', data: new Uint8Array([1, 2, 3]) } },
        { type: 'file', mediaType: 'image/png', data: { type: 'url', url: new URL('https://example.com/cat.png') } },
      ],
    };
    expect(await textOf('sandbox-writer', options([two]))).toBe(
      'Image 1 is in no format the sandbox reads (3 bytes). Image 2 is a link the sandbox does not fetch (https://example.com/cat.png).',
    );
  });

  test('images count by the tile rule, at the detail the part asks for', async () => {
    const text = 'What is this?';
    const base = countPromptTokens([{ content: text }]);
    const high = await generated('sandbox-echo', options([withImage(text, png(1024, 1024))]));
    expect(high.usage.inputTokens.total).toBe(base + 765);
    const low = await generated(
      'sandbox-echo',
      options([withImage(text, png(1024, 1024), 'image/png', { openai: { imageDetail: 'low' } })]),
    );
    expect(low.usage.inputTokens.total).toBe(base + 85);
    const sandboxLow = await generated(
      'sandbox-echo',
      options([withImage(text, png(1024, 1024), 'image/png', { sandbox: { imageDetail: 'low' } })]),
    );
    expect(sandboxLow.usage.inputTokens.total).toBe(base + 85);
    const unreadable = await generated('sandbox-echo', options([withImage(text, new Uint8Array(10))]));
    expect(unreadable.usage.inputTokens.total).toBe(base + 85);
    // Every user message's images count, not only the last one's.
    const earlier = await generated(
      'sandbox-echo',
      options([
        withImage(text, png(100, 100)),
        { role: 'assistant', content: [{ type: 'text', text: 'A square.' }] },
        user('And?'),
      ]),
    );
    expect(earlier.usage.inputTokens.total).toBe(
      countPromptTokens([{ content: text }, { content: 'A square.' }, { content: 'And?' }]) +
        imageTokens({ width: 100, height: 100 }),
    );
  });
});

describe('through the AI SDK', () => {
  const weatherTool = tool({
    description: 'Get the current weather in a city',
    inputSchema: jsonSchema<{ city: string; unit?: 'celsius' | 'fahrenheit' }>(WEATHER_SCHEMA),
    execute: async ({ city }) => ({ city, temperature: city === 'Paris' ? 21 : 14 }),
  });

  test('generateText runs the whole loop: calls, results, answer', async () => {
    const result = await generateText({
      model: sandboxModel('sandbox-writer'),
      prompt: "What's the weather in Paris and Berlin?",
      tools: { get_weather: weatherTool },
      stopWhen: stepCountIs(5),
      maxRetries: 0,
    });
    expect(result.steps).toHaveLength(2);
    expect(result.steps[0]!.finishReason).toBe('tool-calls');
    expect(result.steps[0]!.toolCalls.map((call) => call.input)).toEqual([{ city: 'Paris' }, { city: 'Berlin' }]);
    expect(result.steps[0]!.toolResults.map((r) => r.output)).toEqual([
      { city: 'Paris', temperature: 21 },
      { city: 'Berlin', temperature: 14 },
    ]);
    expect(result.finishReason).toBe('stop');
    expect(result.text).toBe(
      'get_weather: {"city":"Paris","temperature":21}. get_weather: {"city":"Berlin","temperature":14}.',
    );
    expect(result.totalUsage.inputTokens).toBe(
      result.steps[0]!.usage.inputTokens! + result.steps[1]!.usage.inputTokens!,
    );
  });

  test('streamText streams the calls and the answer', async () => {
    const result = streamText({
      model: sandboxModel('sandbox-writer'),
      prompt: 'Weather in Oslo, in celsius',
      tools: { get_weather: weatherTool },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    const kinds: string[] = [];
    let argumentsText = '';
    for await (const part of result.fullStream) {
      kinds.push(part.type);
      if (part.type === 'tool-input-delta') argumentsText += part.delta;
    }
    expect(argumentsText).toBe('{"city":"Oslo","unit":"celsius"}');
    expect(kinds).toEqual(
      expect.arrayContaining([
        'tool-input-start',
        'tool-input-delta',
        'tool-input-end',
        'tool-call',
        'tool-result',
        'text-delta',
      ]),
    );
    expect(await result.text).toBe('get_weather: {"city":"Oslo","temperature":14}.');
  });

  test('an image reaches the model as bytes, a link as a link (never fetched)', async () => {
    const bytes = await generateText({
      model: sandboxModel('sandbox-echo'),
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look:' },
            { type: 'image', image: png(320, 200) },
          ],
        },
      ],
      maxRetries: 0,
    });
    expect(bytes.text).toBe('Look: [image: PNG, 320×200]');
    const link = await generateText({
      model: sandboxModel('sandbox-writer'),
      messages: [
        { role: 'user', content: [{ type: 'image', image: new URL('https://images.example.invalid/cat.png') }] },
      ],
      maxRetries: 0,
    });
    expect(link.text).toBe('The image is a link the sandbox does not fetch (https://images.example.invalid/cat.png).');
  });
});

describe('the worked examples of docs/engine.md', () => {
  const docsWeather: LanguageModelV4FunctionTool = { ...weather, description: 'Get the current weather in a city' };

  test('a call, parallel calls, the answer after a result, no call', async () => {
    expect(
      await callsOf('sandbox-writer', options("What's the weather in Paris?", { tools: [docsWeather] })),
    ).toMatchObject([{ args: { city: 'Paris' } }]);
    const parts = await streamed(
      'sandbox-writer',
      options("What's the weather in Paris and Berlin, in fahrenheit?", { tools: [docsWeather] }),
    );
    const calls = parts.filter((part) => part.type === 'tool-call').map((part) => part.input);
    expect(calls).toEqual(['{"city":"Paris","unit":"fahrenheit"}', '{"city":"Berlin","unit":"fahrenheit"}']);
    expect(
      parts
        .filter((part) => part.type === 'tool-input-delta')
        .slice(0, 4)
        .map((part) => part.delta),
    ).toEqual(['{"city":', '"Paris",', '"unit":', '"fahrenheit"}']);
    const prompt: LanguageModelV4Message[] = [
      user("What's the weather in Paris?"),
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'call_1', toolName: 'get_weather', input: { city: 'Paris' } }],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'call_1',
            toolName: 'get_weather',
            output: { type: 'json', value: { temperature: 21, sky: 'clear' } },
          },
        ],
      },
    ];
    expect(await textOf('sandbox-writer', options(prompt, { tools: [docsWeather] }))).toBe(
      'get_weather: {"temperature":21,"sky":"clear"}.',
    );
    expect(
      await textOf('sandbox-writer', options('Write a poem about autumn leaves', { tools: [docsWeather] })),
    ).toMatch(/^Here's a first draft about autumn leaves\. /);
  });

  test('an image description', async () => {
    const message: LanguageModelV4Message = {
      role: 'user',
      content: [
        { type: 'text', text: 'Write a caption for this garden photo' },
        { type: 'file', mediaType: 'image/png', data: { type: 'data', data: png(640, 480) } },
      ],
    };
    expect(await textOf('sandbox-writer', options([message]))).toMatch(
      /^The image is a PNG of 640×480 pixels \(landscape\)\. Here's a first draft about this garden photo\. /,
    );
    expect(await textOf('sandbox-echo', options([message]))).toBe(
      'Write a caption for this garden photo [image: PNG, 640×480]',
    );
    expect(imageTokens({ width: 640, height: 480 })).toBe(425);
  });
});

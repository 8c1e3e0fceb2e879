// Function tools and image input in OpenAI's Responses API against the real server on SQLite and PostgreSQL: a tool
// loop on the sandbox (call → function_call_output with previous_response_id → the answer from the result), the
// stream's function-call events in OpenAI's order (fragments joined equal the non-streamed arguments), parallel calls,
// every tool_choice form, a model without the capability, the stateless round trip (calls repeated in `input`),
// stored items (retrieve, input items with fc_/fco_ ids, the thread's messages), input_image parts from a data: URL
// and from a loopback image server (the development switch of the SSRF guard), the output policy on arguments, and
// gpt-4o-mini through the fake OpenAI upstream (the engine calls Chat Completions upstream) with a tool call.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { expectProblem } from '../support/expect.ts';
import { type FakeProvider, startFakeOpenAi } from '../support/fake-providers.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { type Json, schemaErrors } from '../support/spec.ts';
import { parseEvents } from '../support/sse.ts';

/** A 1×1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const PNG_DATA_URL = `data:image/png;base64,${PNG.toString('base64')}`;

const WEATHER = {
  type: 'function',
  name: 'get_weather',
  description: 'Get the current weather in a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['city'],
    additionalProperties: false,
  },
};
const TIME = {
  type: 'function',
  name: 'get_local_time',
  description: 'The local time in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
type Schemas = components['schemas'];

const FC_ID = /^fc_[0-9A-HJKMNP-TV-Z]{26}$/;
const FCO_ID = /^fco_[0-9A-HJKMNP-TV-Z]{26}$/;

/** The events of a streamed answer, parsed, each checked against the contract and its `event:` name and number. */
function eventsOf(answer: Answer): Json[] {
  expect(answer.status, answer.text).toBe(200);
  const events = parseEvents(answer.text);
  return events.map((event, i) => {
    const data = JSON.parse(event.data) as Json;
    expect(event.event).toBe(data.type);
    expect(data.sequence_number).toBe(i);
    expect(schemaErrors('/components/schemas/ResponseStreamEvent', data)).toEqual([]);
    return data;
  });
}

async function startImageServer(): Promise<{ url: string; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    if (req.url === '/roast.png') res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
    else res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
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

describe.each(databaseKinds)('responses with tools and images on %s', (kind) => {
  let openai: FakeProvider;
  let images: Awaited<ReturnType<typeof startImageServer>>;
  let server: TestServer;
  let counter = 0;

  beforeAll(async () => {
    [openai, images] = await Promise.all([startFakeOpenAi(), startImageServer()]);
    server = await startTestServer({
      database: kind,
      env: {
        OPENAI_API_KEY: 'sk-test-openai',
        OPENAI_BASE_URL: openai.url,
        PROVIDER_MAX_RETRIES: '0',
        WEBHOOKS_ALLOW_LOOPBACK: 'true',
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await Promise.all([openai, images].map((fake) => fake?.close()));
  });

  async function newWorkspace() {
    const created = await createWorkspace(server.platform.db, {
      name: `Responses tools ${++counter}`,
      region: server.platform.config.region,
      ownerEmail: `rt${counter}@test.example`,
      now: new Date(),
    });
    return created.secret;
  }

  function create(key: string, body: Record<string, unknown>): Promise<Answer> {
    return server.call('POST', '/v1/responses', { key, body });
  }

  test('a tool loop on the sandbox: the call, its output with previous_response_id, the answer from the result; all stored', async () => {
    const key = await newWorkspace();
    const first = await create(key, {
      model: 'sandbox-writer',
      input: 'What is the weather in Paris?',
      tools: [WEATHER],
    });
    expect(first.status, first.text).toBe(200);
    expect(schemaErrors('/components/schemas/Response', first.body)).toEqual([]);
    expect(first.body).toMatchObject({
      status: 'completed',
      tools: [WEATHER],
      tool_choice: 'auto',
      parallel_tool_calls: true,
      incomplete_details: null,
    });
    expect(first.body.output).toEqual([
      {
        id: expect.stringMatching(FC_ID),
        type: 'function_call',
        call_id: expect.stringMatching(/^call_/),
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
        status: 'completed',
      },
    ]);
    const call = first.body.output[0];

    const result = '{"temperature":21,"sky":"clear"}';
    const second = await create(key, {
      model: 'sandbox-writer',
      previous_response_id: first.body.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: result }],
      tools: [WEATHER],
    });
    expect(second.status, second.text).toBe(200);
    expect(second.body.output).toEqual([
      {
        id: expect.stringMatching(/^msg_/),
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: `get_weather: ${result}.`, annotations: [], logprobs: [] }],
      },
    ]);
    expect(second.body.thread_id).toBe(first.body.thread_id);

    expect((await server.call('GET', `/v1/responses/${first.body.id}`, { key })).body).toEqual(first.body);
    const items = await server.call('GET', `/v1/responses/${second.body.id}/input_items`, { key });
    expect(schemaErrors('/components/schemas/ResponseItemList', items.body)).toEqual([]);
    expect(items.body.data).toEqual([
      {
        id: expect.stringMatching(FCO_ID),
        type: 'function_call_output',
        call_id: call.call_id,
        output: result,
        status: 'completed',
      },
    ]);
    expect(items.body.first_id).toBe(items.body.data[0].id);

    const thread = await server.call('GET', `/v1/chat/threads/${first.body.thread_id}`, { key });
    expect(
      thread.body.messages.map((m: Schemas['ChatMessage']) => [
        m.role,
        m.content,
        m.tool_calls,
        m.tool_call_id,
        m.finish_reason,
      ]),
    ).toEqual([
      ['user', 'What is the weather in Paris?', null, null, null],
      [
        'assistant',
        null,
        [{ id: call.call_id, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        null,
        'tool_calls',
      ],
      ['tool', result, null, call.call_id, null],
      ['assistant', `get_weather: ${result}.`, null, null, 'stop'],
    ]);
    // The item ids are the thread messages' ULIDs.
    expect(thread.body.messages[1].id.slice(4)).toBe(call.id.slice(3));
    expect(thread.body.messages[2].id.slice(4)).toBe(items.body.data[0].id.slice(4));
  });

  test('streamed: the function call item, its argument fragments and done events in OpenAI’s order; joined they are the arguments', async () => {
    const key = await newWorkspace();
    const body = {
      model: 'sandbox-writer',
      input: 'What is the weather in Paris and Berlin, in fahrenheit?',
      tools: [WEATHER],
    };
    const whole = await create(key, body);
    expect(whole.body.output.map((item: Schemas['ResponseFunctionCall']) => item.arguments)).toEqual([
      '{"city":"Paris","unit":"fahrenheit"}',
      '{"city":"Berlin","unit":"fahrenheit"}',
    ]);
    const data = eventsOf(await create(key, { ...body, stream: true }));
    const types = data.map((d) => d.type);
    const callEvents = (index: number) => data.filter((d) => d.output_index === index).map((d) => d.type);
    for (const index of [0, 1]) {
      const own = callEvents(index);
      expect(own[0]).toBe('response.output_item.added');
      expect(own.slice(1, -2).every((type) => type === 'response.function_call_arguments.delta')).toBe(true);
      expect(own.length).toBeGreaterThan(4);
      expect(own.slice(-2)).toEqual(['response.function_call_arguments.done', 'response.output_item.done']);
    }
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      ...callEvents(0),
      ...callEvents(1),
      'response.completed',
    ]);
    const added = data.filter((d) => d.type === 'response.output_item.added');
    expect(added.map((d) => d.item)).toEqual(
      [0, 1].map((i) => ({
        ...whole.body.output[i],
        id: expect.stringMatching(FC_ID),
        arguments: '',
        status: 'in_progress',
      })),
    );
    for (const index of [0, 1]) {
      const itemId = added[index]!.item.id;
      const deltas = data.filter(
        (d) => d.type === 'response.function_call_arguments.delta' && d.output_index === index,
      );
      expect(deltas.every((d) => d.item_id === itemId)).toBe(true);
      const joined = deltas.map((d) => d.delta).join('');
      expect(joined).toBe(whole.body.output[index].arguments);
      expect(
        data.find((d) => d.type === 'response.function_call_arguments.done' && d.output_index === index),
      ).toMatchObject({ item_id: itemId, arguments: joined });
      expect(data.find((d) => d.type === 'response.output_item.done' && d.output_index === index)!.item).toEqual({
        ...added[index]!.item,
        arguments: joined,
        status: 'completed',
      });
    }
    const completed = data.at(-1)!.response;
    expect(completed.status).toBe('completed');
    expect(completed.output.map((item: Schemas['ResponseFunctionCall']) => item.id)).toEqual(
      added.map((d) => d.item.id),
    );
    expect((await server.call('GET', `/v1/responses/${completed.id}`, { key })).body).toEqual(completed);
  });

  test('parallel calls, parallel_tool_calls false, and every tool_choice form; refused forms name the field', async () => {
    const key = await newWorkspace();
    const ask = 'What is the weather in Paris and Berlin?';
    const two = await create(key, { model: 'sandbox-writer', input: ask, tools: [WEATHER] });
    expect(two.body.output.map((item: Schemas['ResponseFunctionCall']) => item.arguments)).toEqual([
      '{"city":"Paris"}',
      '{"city":"Berlin"}',
    ]);
    expect(new Set(two.body.output.map((item: Schemas['ResponseFunctionCall']) => item.id)).size).toBe(2);
    const one = await create(key, {
      model: 'sandbox-writer',
      input: ask,
      tools: [WEATHER],
      parallel_tool_calls: false,
    });
    expect(one.body.output).toHaveLength(1);
    expect(one.body.parallel_tool_calls).toBe(false);

    const poem = 'Write a poem about autumn leaves';
    const auto = await create(key, {
      model: 'sandbox-writer',
      input: poem,
      tools: [WEATHER, TIME],
      tool_choice: 'auto',
    });
    expect(auto.body.output.map((item: Schemas['ResponseOutputItem']) => item.type)).toEqual(['message']);
    const required = await create(key, {
      model: 'sandbox-writer',
      input: poem,
      tools: [WEATHER, TIME],
      tool_choice: 'required',
    });
    expect(required.body.output.map((item: Schemas['ResponseFunctionCall']) => [item.type, item.name])).toEqual([
      ['function_call', 'get_weather'],
    ]);
    const named = await create(key, {
      model: 'sandbox-writer',
      input: 'What is the weather in Paris?',
      tools: [WEATHER, TIME],
      tool_choice: { type: 'function', name: 'get_local_time' },
    });
    expect(named.body.output.map((item: Schemas['ResponseFunctionCall']) => [item.name, item.arguments])).toEqual([
      ['get_local_time', '{"city":"Paris"}'],
    ]);
    expect(named.body.tool_choice).toEqual({ type: 'function', name: 'get_local_time' });
    const none = await create(key, {
      model: 'sandbox-writer',
      input: 'What is the weather in Paris?',
      tools: [WEATHER],
      tool_choice: 'none',
    });
    expect(none.body.output.map((item: Schemas['ResponseOutputItem']) => item.type)).toEqual(['message']);

    const unknown = await create(key, {
      model: 'sandbox-writer',
      input: poem,
      tools: [WEATHER],
      tool_choice: { type: 'function', name: 'get_time' },
    });
    expectProblem(unknown, 422, 'validation_failed');
    expect(unknown.body.error.param).toBe('tool_choice.name');
    const requiredAlone = await create(key, { model: 'sandbox-writer', input: poem, tool_choice: 'required' });
    expect(requiredAlone.body.error.param).toBe('tool_choice');
    const twice = await create(key, { model: 'sandbox-writer', input: poem, tools: [WEATHER, WEATHER] });
    expect(twice.body.error.param).toBe('tools[1].name');
    const stray = await create(key, {
      model: 'sandbox-writer',
      input: [
        { role: 'user', content: poem },
        { type: 'function_call_output', call_id: 'call_nowhere', output: '{}' },
      ],
      tools: [WEATHER],
    });
    expectProblem(stray, 422, 'validation_failed');
    expect(stray.body.error.param).toBe('input[1].call_id');
  });

  test('a model without the tools capability is refused as in chat; with tool_choice none it answers', async () => {
    const key = await newWorkspace();
    const refused = await create(key, { model: 'o1-mini', input: 'What is the weather in Paris?', tools: [WEATHER] });
    expectProblem(refused, 422, 'validation_failed');
    expect(refused.body.errors[0]).toEqual({ pointer: '/tools', detail: expect.stringContaining('tools capability') });
    expect(refused.body.error.param).toBe('tools');
    const calls = openai.requests.length;
    openai.enqueue({ text: 'I cannot check the weather.' });
    const none = await create(key, {
      model: 'o1-mini',
      input: 'What is the weather in Paris?',
      tools: [WEATHER],
      tool_choice: 'none',
    });
    expect(none.status, none.text).toBe(200);
    expect(openai.requests.length).toBe(calls + 1);
    expect(openai.requests.at(-1)!.body.tools).toBeUndefined();
  });

  test('stateless: the calls repeated in input (as received) with their outputs, store false; the turn reaches the model as one', async () => {
    const key = await newWorkspace();
    const ask = { role: 'user', content: 'What is the weather in Paris and Berlin?' };
    const first = await create(key, {
      model: 'sandbox-echo',
      input: [ask],
      tools: [WEATHER],
      tool_choice: 'required',
      store: false,
    });
    expect(first.status, first.text).toBe(200);
    expect(first.body.output).toHaveLength(2);
    const outputs = first.body.output.map((call: Schemas['ResponseFunctionCall'], i: number) => ({
      type: 'function_call_output',
      call_id: call.call_id,
      output: `{"sky":"${i === 0 ? 'clear' : 'grey'}"}`,
    }));
    const second = await create(key, {
      model: 'sandbox-writer',
      input: [ask, ...first.body.output, ...outputs],
      tools: [WEATHER],
      store: false,
    });
    expect(second.status, second.text).toBe(200);
    // The writer answers every result at the end of the prompt: both calls were one assistant turn before them.
    expect(second.body.output[0].content[0].text).toBe('get_weather: {"sky":"clear"}. get_weather: {"sky":"grey"}.');
  });

  test('input_image parts: a data: URL and an https URL read by the server (loopback allowed here); stored as placeholders', async () => {
    const key = await newWorkspace();
    const fetched = images.requests.length;
    for (const url of [PNG_DATA_URL, `${images.url}/roast.png`]) {
      const answer = await create(key, {
        model: 'sandbox-echo',
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'Describe' },
              { type: 'input_image', image_url: url, detail: 'low' },
            ],
          },
        ],
      });
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body.output[0].content[0].text).toBe('Describe [image: PNG, 1×1]');
      const items = await server.call('GET', `/v1/responses/${answer.body.id}/input_items`, { key });
      const placeholder = url.startsWith('data:') ? '[image: image/png, not kept]' : `[image: ${url}]`;
      expect(items.body.data[0].content).toEqual([{ type: 'input_text', text: `Describe${placeholder}` }]);
    }
    expect(images.requests.length).toBe(fetched + 1);

    // Through the fake OpenAI upstream, the image arrives as its bytes.
    openai.enqueue({ text: 'A bag of coffee.' });
    const upstream = await create(key, {
      model: 'gpt-4o-mini',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is this?' },
            { type: 'input_image', image_url: `${images.url}/roast.png`, detail: 'high' },
          ],
        },
      ],
    });
    expect(upstream.status, upstream.text).toBe(200);
    expect(openai.requests.at(-1)!.body.messages[0].content).toEqual([
      { type: 'text', text: 'What is this?' },
      { type: 'image_url', image_url: { url: PNG_DATA_URL, detail: 'high' } },
    ]);

    const noVision = await create(key, {
      model: 'o1-mini',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What is this?' },
            { type: 'input_image', image_url: PNG_DATA_URL },
          ],
        },
      ],
    });
    expectProblem(noVision, 422, 'validation_failed');
    expect(noVision.body.errors[0]).toEqual({
      pointer: '/input/0/content/1',
      detail: expect.stringContaining('vision capability'),
    });
    const missing = await create(key, {
      model: 'sandbox-echo',
      input: [
        { role: 'user', content: 'Look' },
        { role: 'user', content: [{ type: 'input_image', image_url: `${images.url}/missing.png` }] },
      ],
    });
    expectProblem(missing, 422, 'image_unreadable');
    expect(missing.body.errors[0].pointer).toBe('/input/1/content/0');
    const inSystem = await create(key, {
      model: 'sandbox-echo',
      input: [
        { role: 'system', content: [{ type: 'input_image', image_url: PNG_DATA_URL }] },
        { role: 'user', content: 'hi' },
      ],
    });
    expectProblem(inSystem, 422, 'validation_failed');
    expect(inSystem.body.errors[0].pointer).toBe('/input/0/content/0');
  });

  test('the output policy blocks a banned phrase in arguments: a problem, or response.failed when streamed, nothing saved', async () => {
    const key = await newWorkspace();
    const rule = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'No competitor names', kind: 'banned_phrase', phrases: ['Globex Coffee'] },
    });
    expect(rule.status, rule.text).toBe(201);
    const search = {
      type: 'function',
      name: 'search_prices',
      description: 'Search the prices of a coffee roaster',
      parameters: { type: 'object', properties: { roaster: { type: 'string' } }, required: ['roaster'] },
    };
    const input = 'Search the prices of "Globex Coffee"';
    const blocked = await create(key, { model: 'sandbox-writer', input, tools: [search] });
    expectProblem(blocked, 422, 'policy_violation');
    expect(blocked.body.rule_id).toBe(rule.body.id);
    const data = eventsOf(await create(key, { model: 'sandbox-writer', input, tools: [search], stream: true }));
    expect(data.at(-1)).toMatchObject({
      type: 'response.failed',
      response: { status: 'failed', error: { code: 'policy_violation' } },
    });
    // Nothing of the phrase went out: the failure's message names the rule's phrase, no event before it does.
    expect(JSON.stringify(data.slice(0, -1))).not.toContain('Globex');
    // What went out is checked: the keys and the punctuation before the blocked string, none of the string.
    expect(
      data
        .filter((d) => d.type === 'response.function_call_arguments.delta')
        .map((d) => d.delta)
        .join(''),
    ).not.toContain('Globex');
    expect((await server.call('GET', '/v1/chat/threads', { key })).body.data).toEqual([]);
  });

  test('the output policy reads arguments as decoded: a banned phrase written with a JSON escape is blocked, streamed and not', async () => {
    const key = await newWorkspace();
    const rule = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'No forbidden phrase', kind: 'banned_phrase', phrases: ['forbidden phrase'] },
    });
    expect(rule.status, rule.text).toBe(201);
    const note = {
      type: 'function',
      name: 'save_note',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    };
    const input = 'Save a note "forbidden\tphrase"';
    expectProblem(await create(key, { model: 'sandbox-writer', input, tools: [note] }), 422, 'policy_violation');
    const data = eventsOf(await create(key, { model: 'sandbox-writer', input, tools: [note], stream: true }));
    expect(data.at(-1)).toMatchObject({ type: 'response.failed', response: { error: { code: 'policy_violation' } } });
    expect(JSON.stringify(data.slice(0, -1))).not.toContain('phrase');
  });

  test('gpt-4o-mini through the fake OpenAI upstream: tools in Chat Completions form, the call, its output sent back', async () => {
    const key = await newWorkspace();
    const args = '{"city":"Lisbon","unit":"celsius"}';
    openai.enqueue({
      toolCalls: [
        {
          id: 'call_lisbon1',
          name: 'get_weather',
          arguments: args,
          chunks: ['{"city":', '"Lisbon",', '"unit":"celsius"}'],
        },
      ],
    });
    const streamed = eventsOf(
      await create(key, {
        model: 'gpt-4o-mini',
        input: 'Should I pack an umbrella for Lisbon tomorrow?',
        tools: [WEATHER],
        stream: true,
      }),
    );
    expect(streamed.filter((d) => d.type === 'response.function_call_arguments.delta').map((d) => d.delta)).toEqual([
      '{"city":',
      '"Lisbon",',
      '"unit":"celsius"}',
    ]);
    const first = streamed.at(-1)!.response;
    expect(first.output).toEqual([
      {
        id: expect.stringMatching(FC_ID),
        type: 'function_call',
        call_id: 'call_lisbon1',
        name: 'get_weather',
        arguments: args,
        status: 'completed',
      },
    ]);
    const sent = openai.requests.at(-1)!.body;
    expect(sent.tools).toEqual([
      {
        type: 'function',
        function: { name: 'get_weather', description: WEATHER.description, parameters: WEATHER.parameters },
      },
    ]);
    expect(sent.tool_choice).toBe('auto');

    openai.enqueue({ text: 'Yes: showers are likely, so pack an umbrella.' });
    const result = '{"conditions":"showers","chance_of_rain":0.8}';
    const second = await create(key, {
      model: 'gpt-4o-mini',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: 'call_lisbon1', output: result }],
      tools: [WEATHER],
    });
    expect(second.status, second.text).toBe(200);
    expect(second.body.output[0].content[0].text).toBe('Yes: showers are likely, so pack an umbrella.');
    expect(openai.requests.at(-1)!.body.messages).toEqual([
      { role: 'user', content: 'Should I pack an umbrella for Lisbon tomorrow?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_lisbon1', type: 'function', function: { name: 'get_weather', arguments: args } }],
      },
      { role: 'tool', tool_call_id: 'call_lisbon1', content: result },
    ]);
  });
});

// Clients of OpenAI's Responses API, unmodified, pointed at our /v1 with our API key: the `openai` SDK's
// responses.create (plain, streamed, continued with previous_response_id), responses.retrieve, responses.delete and
// responses.inputItems.list, and the AI SDK's default OpenAI provider (which speaks the Responses API) with
// generateText and streamText; with function tools: the SDK's tool-result round trips (continued with
// previous_response_id, streamed, and stateless) and the AI SDK running a whole tool loop with generateText.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';

const WEATHER: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Get the current weather in a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: true,
};

describe('Responses API clients against our API', () => {
  let server: TestServer;
  let openai: OpenAI;

  beforeAll(async () => {
    server = await startTestServer();
    openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.ownerKey, maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.close();
  });

  test('openai: responses.create answers a response whose output_text the SDK computes', async () => {
    const response = await openai.responses.create({
      model: 'sandbox-echo',
      instructions: 'Repeat me.',
      input: 'Spring sale starts Monday',
    });
    expect(response.object).toBe('response');
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('Spring sale starts Monday');
    expect(response.usage!.total_tokens).toBe(response.usage!.input_tokens + response.usage!.output_tokens);
    expect((response as unknown as { cost_usd: number }).cost_usd).toBeGreaterThan(0);
  });

  test('openai: previous_response_id, retrieve, inputItems.list and delete', async () => {
    const first = await openai.responses.create({ model: 'sandbox-echo', input: 'first turn' });
    const second = await openai.responses.create({
      model: 'sandbox-echo',
      input: [{ role: 'user', content: 'second turn' }],
      previous_response_id: first.id,
    });
    expect(second.previous_response_id).toBe(first.id);
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens);
    const retrieved = await openai.responses.retrieve(second.id);
    expect(retrieved.output_text).toBe('second turn');
    const items = [];
    for await (const item of openai.responses.inputItems.list(second.id, { limit: 1 })) items.push(item);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: 'second turn' }],
    });
    const deleted = await openai.responses.delete(second.id);
    expect(deleted).toMatchObject({ id: second.id, object: 'response', deleted: true });
    await expect(openai.responses.retrieve(second.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(openai.responses.create({ model: 'no-such-model', input: 'hi' })).rejects.toMatchObject({
      status: 404,
      code: 'model_not_found',
      param: 'model',
    });
  });

  test('openai: an id in OpenAI’s format that is not ours is NotFoundError on retrieve, delete, inputItems and previous_response_id', async () => {
    // The example id of OpenAI's own specification.
    const id = 'resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b';
    await expect(openai.responses.retrieve(id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(openai.responses.delete(id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(openai.responses.inputItems.list(id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const continued = await openai.responses
      .create({ model: 'sandbox-echo', input: 'hi', previous_response_id: id })
      .catch((e: unknown) => e);
    expect(continued).toBeInstanceOf(OpenAI.NotFoundError);
    expect(continued).toMatchObject({ type: 'invalid_request_error', param: 'previous_response_id' });
  });

  test('openai: a refusal names the Responses API’s own field (max_output_tokens, input)', async () => {
    const overLimit = await openai.responses
      .create({ model: 'sandbox-echo', input: 'hi', max_output_tokens: 20_000 })
      .catch((e: unknown) => e);
    expect(overLimit).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect(overLimit).toMatchObject({ code: 'validation_failed', param: 'max_output_tokens' });
    const tooLong = await openai.responses
      .create({ model: 'sandbox-echo', input: 'word '.repeat(130_000) })
      .catch((e: unknown) => e);
    expect(tooLong).toMatchObject({ status: 422, code: 'context_length_exceeded', param: 'input' });
  });

  test('openai: inputItems.list pages through every item with after', async () => {
    const input = Array.from({ length: 5 }, (_, i) => ({ role: 'user' as const, content: `item ${i}` }));
    const response = await openai.responses.create({ model: 'sandbox-echo', input });
    const texts: string[] = [];
    for await (const item of openai.responses.inputItems.list(response.id, { limit: 2, order: 'asc' })) {
      texts.push((item as { content: Array<{ text: string }> }).content[0]!.text);
    }
    expect(texts).toEqual(['item 0', 'item 1', 'item 2', 'item 3', 'item 4']);
  });

  test('openai: stream: true yields the typed events, ending with response.completed', async () => {
    const stream = await openai.responses.create({
      model: 'sandbox-echo',
      input: 'Spring sale starts Monday',
      stream: true,
    });
    const types: string[] = [];
    let text = '';
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(text).toBe('Spring sale starts Monday');
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(completed!.usage!.output_tokens).toBeGreaterThan(0);
    // The SDK's stream helper assembles the same response.
    const helper = openai.responses.stream({ model: 'sandbox-echo', input: 'helper text' });
    const final = await helper.finalResponse();
    expect(final.output_text).toBe('helper text');
  });

  test('AI SDK: the default OpenAI provider (Responses API) with generateText and streamText', async () => {
    const provider = createOpenAI({ baseURL: `${server.url}/v1`, apiKey: server.ownerKey });
    const generated = await generateText({
      model: provider('sandbox-echo'),
      system: 'Repeat me.',
      prompt: 'Spring sale starts Monday',
    });
    expect(generated.text).toBe('Spring sale starts Monday');
    expect(generated.finishReason).toBe('stop');
    expect(generated.usage.inputTokens).toBeGreaterThan(0);
    const responseId = (generated.providerMetadata?.openai as { responseId?: string } | undefined)?.responseId;
    expect(responseId).toMatch(/^resp_/);

    const streamed = streamText({ model: provider('sandbox-echo'), prompt: 'Streamed spring sale' });
    let text = '';
    for await (const part of streamed.textStream) text += part;
    expect(text).toBe('Streamed spring sale');
    expect((await streamed.usage).outputTokens).toBeGreaterThan(0);

    // A conversation continued through the provider's previousResponseId option.
    const next = await generateText({
      model: provider('sandbox-echo'),
      prompt: 'next turn',
      providerOptions: { openai: { previousResponseId: responseId } },
    });
    expect(next.text).toBe('next turn');
    expect(next.usage.inputTokens).toBeGreaterThan(generated.usage.inputTokens!);
  });

  test('openai: responses.create with tools, the function_call_output sent back with previous_response_id, the answer', async () => {
    const first = await openai.responses.create({
      model: 'sandbox-writer',
      input: 'What is the weather in Paris?',
      tools: [WEATHER],
    });
    expect(first.status).toBe('completed');
    expect(first.output_text).toBe('');
    const call = first.output[0]!;
    if (call.type !== 'function_call') throw new Error('a function call was expected');
    expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' });
    expect(call.id).toMatch(/^fc_/);
    const second = await openai.responses.create({
      model: 'sandbox-writer',
      previous_response_id: first.id,
      input: [
        {
          type: 'function_call_output',
          call_id: call.call_id,
          output: JSON.stringify({ temperature: 21, sky: 'clear' }),
        },
      ],
      tools: [WEATHER],
    });
    expect(second.output_text).toBe('get_weather: {"temperature":21,"sky":"clear"}.');
    const items = [];
    for await (const item of openai.responses.inputItems.list(second.id)) items.push(item);
    expect(items).toEqual([
      expect.objectContaining({ type: 'function_call_output', call_id: call.call_id, status: 'completed' }),
    ]);
  });

  test('openai: streamed, the SDK’s stream helper assembles the calls; the stateless round trip repeats them in input', async () => {
    const stream = openai.responses.stream({
      model: 'sandbox-writer',
      input: 'What is the weather in Paris and Berlin?',
      tools: [WEATHER],
      store: false,
    });
    const deltas: string[] = [];
    stream.on('response.function_call_arguments.delta', (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    const calls = final.output.filter((item) => item.type === 'function_call');
    expect(calls.map((call) => [call.name, call.arguments])).toEqual([
      ['get_weather', '{"city":"Paris"}'],
      ['get_weather', '{"city":"Berlin"}'],
    ]);
    expect(deltas.join('')).toBe('{"city":"Paris"}{"city":"Berlin"}');
    expect(deltas.length).toBeGreaterThan(2);

    // The stateless round trip gives back the output of `create` (the stream helper's items carry the SDK's own
    // `parsed_arguments`, which is not an input field).
    const unstored = await openai.responses.create({
      model: 'sandbox-writer',
      input: 'What is the weather in Paris and Berlin?',
      tools: [WEATHER],
      store: false,
    });
    expect(unstored.output.map((item) => (item.type === 'function_call' ? item.call_id : null))).toEqual(
      calls.map((call) => call.call_id),
    );
    const answer = await openai.responses.create({
      model: 'sandbox-writer',
      store: false,
      tools: [WEATHER],
      input: [
        { role: 'user', content: 'What is the weather in Paris and Berlin?' },
        ...unstored.output.filter((item) => item.type === 'function_call'),
        ...calls.map((call, i) => ({
          type: 'function_call_output' as const,
          call_id: call.call_id,
          output: `{"temperature":${20 + i}}`,
        })),
      ],
    });
    expect(answer.output_text).toBe('get_weather: {"temperature":20}. get_weather: {"temperature":21}.');
  });

  test('AI SDK: the default OpenAI provider (Responses API) runs a whole tool loop with generateText and streamText', async () => {
    const model = createOpenAI({ baseURL: `${server.url}/v1`, apiKey: server.ownerKey })('sandbox-writer');
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
    expect(result.steps[0]!.finishReason).toBe('tool-calls');
    expect(result.text).toBe('get_weather: {"city":"Paris","temperature":21}.');

    const streamed = streamText({ model, tools, stopWhen: stepCountIs(3), prompt: 'What is the weather in Berlin?' });
    let text = '';
    for await (const part of streamed.textStream) text += part;
    expect(cities).toEqual(['Paris', 'Berlin']);
    expect(text).toBe('get_weather: {"city":"Berlin","temperature":21}.');
  });
});

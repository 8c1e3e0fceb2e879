// Our Responses API answers against OpenAI's own published schemas (a pinned copy of the components checked, with the
// commit it came from, in openai-responses-schemas.json): the output items and usage of a body (text and function
// calls), every text, content-part and function-call event of a stream, and the assistant parts of listed input items.
// The contract's schemas are our reading of OpenAI's; these catch a field OpenAI requires that our reading lacks.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { projectRoot } from '../support/prism.ts';
import { type Answer, startTestServer, type TestServer } from '../support/server.ts';
import type { Json } from '../support/spec.ts';
import { parseEvents } from '../support/sse.ts';

const openAi: Json = JSON.parse(readFileSync(join(projectRoot, 'test/chat/openai-responses-schemas.json'), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
ajv.addSchema(openAi, 'openai.json');

/** The errors of `value` against OpenAI's component schema `name`, or []. */
function openAiErrors(name: string, value: unknown): string[] {
  const validate = ajv.getSchema(`openai.json#/components/schemas/${name}`)!;
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => `${name}${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
}

/** OpenAI's schema of each stream event type we send that the pinned copy holds. */
const EVENT_SCHEMAS: Record<string, string> = {
  'response.content_part.added': 'ResponseContentPartAddedEvent',
  'response.content_part.done': 'ResponseContentPartDoneEvent',
  'response.output_text.delta': 'ResponseTextDeltaEvent',
  'response.output_text.done': 'ResponseTextDoneEvent',
  'response.function_call_arguments.delta': 'ResponseFunctionCallArgumentsDeltaEvent',
  'response.function_call_arguments.done': 'ResponseFunctionCallArgumentsDoneEvent',
};

const WEATHER = {
  type: 'function',
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** The errors of an output item (a message or a function call) against OpenAI's schema. */
const itemErrors = (item: Json) => openAiErrors(item.type === 'message' ? 'OutputMessage' : 'FunctionToolCall', item);

/** The errors of a response object's output items and usage against OpenAI's schemas. */
function responseErrors(response: Json): string[] {
  return [...response.output.flatMap(itemErrors), ...openAiErrors('ResponseUsage', response.usage)];
}

describe('Responses API answers against OpenAI’s published schemas', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  const create = (body: Record<string, unknown>): Promise<Answer> =>
    server.call('POST', '/v1/responses', { key: server.ownerKey, body });

  test('the pinned copy says what these answers lacked: logprobs, cache_write_tokens, the called function’s name', () => {
    const schemas = openAi.components.schemas;
    expect(schemas.OutputTextContent.required).toContain('logprobs');
    expect(schemas.ResponseUsage.properties.input_tokens_details.required).toContain('cache_write_tokens');
    expect(schemas.ResponseFunctionCallArgumentsDoneEvent.required).toContain('name');
  });

  test('bodies: a text answer and a function-call answer, created and retrieved', async () => {
    const text = await create({ model: 'sandbox-echo', input: 'Spring sale starts Monday' });
    expect(text.status, text.text).toBe(200);
    expect(text.body.output[0].content[0]).toMatchObject({ type: 'output_text', annotations: [], logprobs: [] });
    expect(text.body.usage.input_tokens_details).toEqual({ cached_tokens: 0, cache_write_tokens: 0 });
    expect(responseErrors(text.body)).toEqual([]);
    const calls = await create({ model: 'sandbox-writer', input: 'Weather in Paris and Berlin?', tools: [WEATHER] });
    expect(calls.status, calls.text).toBe(200);
    expect(calls.body.output.map((item: Json) => item.type)).toContain('function_call');
    expect(responseErrors(calls.body)).toEqual([]);
    const retrieved = await server.call('GET', `/v1/responses/${text.body.id}`, { key: server.ownerKey });
    expect(retrieved.status, retrieved.text).toBe(200);
    expect(responseErrors(retrieved.body)).toEqual([]);
  });

  test('stream events: a text answer and a function-call answer', async () => {
    const seen = new Set<string>();
    for (const body of [
      { model: 'sandbox-echo', input: 'Spring sale starts Monday', stream: true },
      { model: 'sandbox-writer', input: 'Weather in Paris and Berlin?', tools: [WEATHER], stream: true },
    ]) {
      const answer = await create(body);
      expect(answer.status, answer.text).toBe(200);
      for (const event of parseEvents(answer.text)) {
        const data = JSON.parse(event.data) as Json;
        const schema = EVENT_SCHEMAS[data.type];
        if (schema) {
          seen.add(data.type);
          expect(openAiErrors(schema, data)).toEqual([]);
        }
        if (data.type === 'response.output_item.done') expect(itemErrors(data.item)).toEqual([]);
        if (data.type === 'response.completed') expect(responseErrors(data.response)).toEqual([]);
        if (data.type === 'response.function_call_arguments.done') expect(data.name).toBe('get_weather');
      }
    }
    expect([...seen].sort()).toEqual(Object.keys(EVENT_SCHEMAS).sort());
  });

  test('listed input items: an assistant message given back is an output_text part with logprobs', async () => {
    const answer = await create({
      model: 'sandbox-echo',
      input: [
        { role: 'user', content: 'Name a roast' },
        { role: 'assistant', content: [{ type: 'output_text', text: 'Midnight Espresso' }] },
        { role: 'user', content: 'Another one' },
      ],
    });
    expect(answer.status, answer.text).toBe(200);
    const items = await server.call('GET', `/v1/responses/${answer.body.id}/input_items?order=asc`, {
      key: server.ownerKey,
    });
    expect(items.status, items.text).toBe(200);
    const assistant = items.body.data.find((item: Json) => item.role === 'assistant');
    expect(assistant.content).toEqual([
      { type: 'output_text', text: 'Midnight Espresso', annotations: [], logprobs: [] },
    ]);
    expect(openAiErrors('OutputTextContent', assistant.content[0])).toEqual([]);
  });
});

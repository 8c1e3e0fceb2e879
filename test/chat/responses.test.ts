// OpenAI's Responses API against the real server on SQLite and PostgreSQL, with the sandbox models: a plain response
// and its usage and cost, instructions, JSON schema output, the event stream (names, order, sequence numbers, the
// completed response), conversations continued with previous_response_id (the model sees the earlier turns; a
// response continued twice forks a new thread), retrieve, delete, input items and their pages, store: false, the
// problems in OpenAI's shape, the thread messages and events a stored response writes, and GET /v1/usage.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { priceOf } from '../../src/features/engine/pricing.ts';
import { countPromptTokens } from '../../src/features/engine/tokens.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { asyncApiErrors } from '../support/asyncapi.ts';
import { expectProblem } from '../support/expect.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { type Json, schemaErrors } from '../support/spec.ts';
import { parseEvents } from '../support/sse.ts';

const RESPONSE_ID = /^resp_[0-9A-HJKMNP-TV-Z]{26}$/;
const THREAD_ID = /^thr_[0-9A-HJKMNP-TV-Z]{26}$/;
const PASSAGES =
  'Knowledge passages:\n[1] Shipping\nOrders placed before 2 pm ship the same day. Delivery takes 2 to 4 business days.\n\n[2] Returns\nReturns are free within 30 days.\nEnd of passages.';

describe.each(databaseKinds)('responses on %s', (kind) => {
  let server: TestServer;
  let counter = 0;

  beforeAll(async () => {
    server = await startTestServer({ database: kind });
  });
  afterAll(async () => {
    await server?.close();
  });

  async function newWorkspace() {
    const created = await createWorkspace(server.platform.db, {
      name: `Responses ${++counter}`,
      region: server.platform.config.region,
      ownerEmail: `r${counter}@test.example`,
      now: new Date(),
    });
    return { key: created.secret, id: created.workspace.id, keyId: created.apiKey.id };
  }

  function create(body: Record<string, unknown>, key = server.ownerKey): Promise<Answer> {
    return server.call('POST', '/v1/responses', { key, body });
  }

  const textOf = (response: { output: Array<{ type: string; content?: Array<{ text: string }> }> }) =>
    response.output
      .filter((item) => item.type === 'message')
      .map((item) => item.content!.map((part) => part.text).join(''))
      .join('');

  test('a text input answers a stored response object with usage, cost and its thread', async () => {
    const answer = await create({
      model: 'sandbox-echo',
      input: 'Spring sale starts Monday',
      metadata: { campaign: 'spring' },
    });
    expect(answer.status, answer.text).toBe(200);
    expect(schemaErrors('/components/schemas/Response', answer.body)).toEqual([]);
    const body = answer.body;
    expect(body.id).toMatch(RESPONSE_ID);
    expect(body).toMatchObject({
      object: 'response',
      status: 'completed',
      model: 'sandbox-echo',
      error: null,
      incomplete_details: null,
      previous_response_id: null,
      store: true,
      metadata: { campaign: 'spring' },
      background: false,
      truncation: 'disabled',
      tools: [],
      tool_choice: 'auto',
      text: { format: { type: 'text' } },
    });
    expect(body.output).toEqual([
      {
        id: expect.stringMatching(/^msg_/),
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Spring sale starts Monday', annotations: [], logprobs: [] }],
      },
    ]);
    expect(body.created_at).toBe(Math.floor(body.created_at));
    expect(Math.abs(body.created_at - Date.now() / 1000)).toBeLessThan(600);
    const { usage } = body;
    expect(usage.input_tokens).toBe(countPromptTokens([{ content: 'Spring sale starts Monday' }]));
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    expect(usage).toMatchObject({
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 0 },
    });
    const model = server.platform.services.engine.catalogue.get('sandbox-echo')!;
    expect(body.cost_usd).toBe(
      priceOf(model, { inputTokens: usage.input_tokens, cachedInputTokens: 0, outputTokens: usage.output_tokens }),
    );
    expect(body.thread_id).toMatch(THREAD_ID);

    const thread = await server.call('GET', `/v1/chat/threads/${body.thread_id}`);
    expect(thread.body).toMatchObject({
      title: 'Spring sale starts Monday',
      message_count: 2,
      metadata: { campaign: 'spring' },
    });
    expect(thread.body.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'Spring sale starts Monday'],
      ['assistant', 'Spring sale starts Monday'],
    ]);
    // The output item is the thread's message.
    expect(thread.body.messages[1].id).toBe(body.output[0].id);

    const fetched = await server.call('GET', `/v1/responses/${body.id}`);
    expect(fetched.status, fetched.text).toBe(200);
    expect(fetched.body).toEqual(body);
  });

  test('instructions come first, apply to one response, and are not inherited by the next', async () => {
    // sandbox-writer answers from a passages block in the system messages: the instructions reach the model.
    const first = await create({
      model: 'sandbox-writer',
      instructions: PASSAGES,
      input: 'How many business days does delivery take?',
    });
    expect(first.status, first.text).toBe(200);
    expect(textOf(first.body)).toBe(
      'Delivery takes 2 to 4 business days [1]. Orders placed before 2 pm ship the same day [1].',
    );
    expect(first.body.instructions).toBe(PASSAGES);
    const next = await create({
      model: 'sandbox-writer',
      previous_response_id: first.body.id,
      input: 'Are returns free?',
    });
    expect(next.status, next.text).toBe(200);
    // Without the instructions, the writer drafts from the message instead of answering from the passages.
    expect(textOf(next.body)).toMatch(/^Thanks for asking\. \[Answer “Are returns free\?” /);
    expect(next.body.instructions).toBeNull();
  });

  test('previous_response_id replays the conversation: the model sees the earlier turns', async () => {
    const first = await create({
      model: 'sandbox-writer',
      input: [
        { role: 'system', content: PASSAGES },
        { role: 'user', content: [{ type: 'input_text', text: 'Hello there' }] },
      ],
    });
    expect(first.status, first.text).toBe(200);
    const second = await create({
      model: 'sandbox-writer',
      previous_response_id: first.body.id,
      input: [{ role: 'user', content: 'Are returns free?' }],
    });
    expect(second.status, second.text).toBe(200);
    // The passages came in the first request's input, as a system message: the second answer is grounded in them.
    expect(textOf(second.body)).toBe('Returns are free within 30 days [2].');
    expect(second.body).toMatchObject({ previous_response_id: first.body.id, thread_id: first.body.thread_id });
    const earlier = [
      { content: PASSAGES },
      { content: 'Hello there' },
      { content: textOf(first.body) },
      { content: 'Are returns free?' },
    ];
    expect(second.body.usage.input_tokens).toBe(countPromptTokens(earlier));
    const thread = await server.call('GET', `/v1/chat/threads/${first.body.thread_id}`);
    expect(thread.body.messages.map((m: { role: string }) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
  });

  test('continuing a response that is not the last of its thread forks a new thread with the history up to it', async () => {
    const first = await create({ model: 'sandbox-echo', input: 'one' });
    const second = await create({ model: 'sandbox-echo', previous_response_id: first.body.id, input: 'two' });
    expect(second.body.thread_id).toBe(first.body.thread_id);
    const branch = await create({ model: 'sandbox-echo', previous_response_id: first.body.id, input: 'branch' });
    expect(branch.status, branch.text).toBe(200);
    expect(branch.body.thread_id).toMatch(THREAD_ID);
    expect(branch.body.thread_id).not.toBe(first.body.thread_id);
    // The branch saw "one" and its answer, not "two".
    expect(branch.body.usage.input_tokens).toBe(
      countPromptTokens([{ content: 'one' }, { content: 'one' }, { content: 'branch' }]),
    );
    const forked = await server.call('GET', `/v1/chat/threads/${branch.body.thread_id}`);
    expect(forked.body.messages.map((m: { content: string }) => m.content)).toEqual(['one', 'one', 'branch', 'branch']);
    const original = await server.call('GET', `/v1/chat/threads/${first.body.thread_id}`);
    expect(original.body.messages.map((m: { content: string }) => m.content)).toEqual(['one', 'one', 'two', 'two']);
    // Both branches continue.
    const onBranch = await create({ model: 'sandbox-echo', previous_response_id: branch.body.id, input: 'three' });
    expect(onBranch.body.thread_id).toBe(branch.body.thread_id);
    expect((await server.call('GET', `/v1/responses/${branch.body.id}`)).body.thread_id).toBe(branch.body.thread_id);
  });

  test('text.format json_schema answers a value of the schema; json modes need the capability', async () => {
    const schema = {
      type: 'object',
      properties: { title: { type: 'string' }, word_count: { type: 'integer' } },
      required: ['title', 'word_count'],
      additionalProperties: false,
    };
    const answer = await create({
      model: 'sandbox-writer',
      input: 'Write a product blurb for our spring roast from Huila.',
      text: { format: { type: 'json_schema', name: 'product_blurb', schema, strict: true } },
    });
    expect(answer.status, answer.text).toBe(200);
    const value = JSON.parse(textOf(answer.body));
    expect(Object.keys(value).sort()).toEqual(['title', 'word_count']);
    expect(value.title).toBe('Product');
    expect(typeof value.word_count).toBe('number');
    expect(answer.body.text).toEqual({ format: { type: 'json_schema', name: 'product_blurb', schema, strict: true } });
    const object = await create({
      model: 'sandbox-echo',
      input: 'hello world',
      text: { format: { type: 'json_object' } },
    });
    expect(object.status, object.text).toBe(200);
    expect(JSON.parse(textOf(object.body))).toEqual({ reply: 'hello world', key_terms: ['hello', 'world'] });
  });

  test('max_output_tokens cuts the output: status incomplete with its reason', async () => {
    const answer = await create({
      model: 'sandbox-echo',
      input: 'one two three four five six seven eight nine ten',
      max_output_tokens: 3,
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      max_output_tokens: 3,
    });
    expect(answer.body.output[0].status).toBe('incomplete');
    expect(answer.body.usage.output_tokens).toBe(3);
  });

  test('a stream sends OpenAI events in order with sequence numbers, then the completed response, stored', async () => {
    const answer = await create({ model: 'sandbox-echo', input: 'Spring sale starts Monday', stream: true });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseEvents(answer.text);
    const data = events.map((e) => JSON.parse(e.data) as Json);
    for (const [i, event] of events.entries()) {
      expect(event.event).toBe(data[i]!.type);
      expect(data[i]!.sequence_number).toBe(i);
      expect(schemaErrors('/components/schemas/ResponseStreamEvent', data[i])).toEqual([]);
    }
    const deltas = data.filter((d) => d.type === 'response.output_text.delta');
    expect(deltas.map((d) => d.delta)).toEqual(['Spring ', 'sale ', 'starts ', 'Monday']);
    expect(data.map((d) => d.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...deltas.map(() => 'response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(data[0]!.response).toMatchObject({ status: 'in_progress', output: [], usage: null });
    const itemId = data[2]!.item.id;
    expect(deltas.every((d) => d.item_id === itemId && d.output_index === 0 && d.content_index === 0)).toBe(true);
    expect(data.at(-4)).toMatchObject({ text: 'Spring sale starts Monday' });
    const completed = data.at(-1)!.response;
    expect(completed).toMatchObject({
      status: 'completed',
      output: [{ id: itemId, content: [{ text: 'Spring sale starts Monday' }] }],
    });
    expect(completed.usage.total_tokens).toBe(completed.usage.input_tokens + completed.usage.output_tokens);
    expect(completed.cost_usd).toBeGreaterThan(0);
    expect(new Set(data.filter((d) => d.response).map((d) => d.response.id))).toEqual(new Set([completed.id]));
    const fetched = await server.call('GET', `/v1/responses/${completed.id}`);
    expect(fetched.body).toEqual(completed);
  });

  test('a stream blocked by the output policy ends with response.failed, its text never sent, nothing saved', async () => {
    const { key } = await newWorkspace();
    const rule = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'No guarantees', kind: 'banned_phrase', phrases: ['guaranteed'], action: 'block' },
    });
    expect(rule.status, rule.text).toBe(201);
    const answer = await create(
      { model: 'sandbox-echo', input: 'Results guaranteed or your money back', stream: true },
      key,
    );
    expect(answer.status, answer.text).toBe(200);
    const data = parseEvents(answer.text).map((e) => JSON.parse(e.data) as Json);
    const last = data.at(-1)!;
    expect(last).toMatchObject({
      type: 'response.failed',
      response: { status: 'failed', error: { code: 'policy_violation' }, thread_id: null },
    });
    expect(schemaErrors('/components/schemas/ResponseStreamEvent', last)).toEqual([]);
    expect(answer.text).not.toContain('guaranteed or');
    expectProblem(await server.call('GET', `/v1/responses/${last.response.id}`, { key }), 404, 'not_found');
  });

  test('store: false saves nothing, and its id cannot be retrieved or continued', async () => {
    const { key } = await newWorkspace();
    const answer = await create({ model: 'sandbox-echo', input: 'not kept', store: false }, key);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({ store: false, thread_id: null });
    expect((await server.call('GET', '/v1/chat/threads', { key })).body.data).toEqual([]);
    expectProblem(await server.call('GET', `/v1/responses/${answer.body.id}`, { key }), 404, 'not_found');
    const next = await create({ model: 'sandbox-echo', input: 'again', previous_response_id: answer.body.id }, key);
    expectProblem(next, 404, 'not_found');
    expect(next.body.error).toMatchObject({
      type: 'invalid_request_error',
      param: 'previous_response_id',
      code: 'not_found',
    });
  });

  test('delete removes the response (then 404) and keeps its thread; deleting the thread deletes its responses', async () => {
    const { key } = await newWorkspace();
    const first = await create({ model: 'sandbox-echo', input: 'one' }, key);
    const second = await create({ model: 'sandbox-echo', input: 'two', previous_response_id: first.body.id }, key);
    const deleted = await server.call('DELETE', `/v1/responses/${first.body.id}`, { key });
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({ id: first.body.id, object: 'response', deleted: true });
    const gone = await server.call('GET', `/v1/responses/${first.body.id}`, { key });
    expectProblem(gone, 404, 'not_found');
    expect(gone.body.error).toMatchObject({ type: 'invalid_request_error', code: 'not_found' });
    expectProblem(await server.call('DELETE', `/v1/responses/${first.body.id}`, { key }), 404, 'not_found');
    expectProblem(await server.call('GET', `/v1/responses/${first.body.id}/input_items`, { key }), 404, 'not_found');
    // The later response still replays the whole conversation.
    const third = await create({ model: 'sandbox-echo', input: 'three', previous_response_id: second.body.id }, key);
    expect(third.body.usage.input_tokens).toBe(
      countPromptTokens([
        { content: 'one' },
        { content: 'one' },
        { content: 'two' },
        { content: 'two' },
        { content: 'three' },
      ]),
    );

    expect((await server.call('DELETE', `/v1/chat/threads/${first.body.thread_id}`, { key })).status).toBe(204);
    expectProblem(await server.call('GET', `/v1/responses/${second.body.id}`, { key }), 404, 'not_found');
    expectProblem(
      await create({ model: 'sandbox-echo', input: 'four', previous_response_id: third.body.id }, key),
      404,
      'not_found',
    );
    // Another workspace's response is not found.
    const other = await newWorkspace();
    const theirs = await create({ model: 'sandbox-echo', input: 'theirs' }, other.key);
    expectProblem(await server.call('GET', `/v1/responses/${theirs.body.id}`, { key }), 404, 'not_found');
    expectProblem(await server.call('DELETE', `/v1/responses/${theirs.body.id}`, { key }), 404, 'not_found');
  });

  test('input items list the request input, newest first by default, in pages with after', async () => {
    const { key } = await newWorkspace();
    const input = ['a', 'b', 'c', 'd', 'e'].map((text, i) =>
      i === 0
        ? { role: 'developer', content: `rule ${text}` }
        : { role: 'user', content: [{ type: 'input_text', text: `turn ${text}` }] },
    );
    const answer = await create({ model: 'sandbox-echo', input }, key);
    expect(answer.status, answer.text).toBe(200);
    const path = `/v1/responses/${answer.body.id}/input_items`;
    const all = await server.call('GET', path, { key });
    expect(all.status, all.text).toBe(200);
    expect(schemaErrors('/components/schemas/ResponseItemList', all.body)).toEqual([]);
    expect(all.body.data.map((item: { content: Array<{ text: string }> }) => item.content[0]!.text)).toEqual([
      'turn e',
      'turn d',
      'turn c',
      'turn b',
      'rule a',
    ]);
    expect(all.body.data[4]).toMatchObject({
      type: 'message',
      role: 'developer',
      status: 'completed',
      content: [{ type: 'input_text', text: 'rule a' }],
    });
    expect(all.body).toMatchObject({
      object: 'list',
      has_more: false,
      first_id: all.body.data[0].id,
      last_id: all.body.data[4].id,
    });

    const page1 = await server.call('GET', `${path}?order=asc&limit=2`, { key });
    expect(page1.body.data.map((i: { content: Array<{ text: string }> }) => i.content[0]!.text)).toEqual([
      'rule a',
      'turn b',
    ]);
    expect(page1.body.has_more).toBe(true);
    const page2 = await server.call('GET', `${path}?order=asc&limit=2&after=${page1.body.last_id}`, { key });
    expect(page2.body.data.map((i: { content: Array<{ text: string }> }) => i.content[0]!.text)).toEqual([
      'turn c',
      'turn d',
    ]);
    const page3 = await server.call('GET', `${path}?order=asc&limit=2&after=${page2.body.last_id}`, { key });
    expect(page3.body).toMatchObject({ has_more: false, data: [{ content: [{ text: 'turn e' }] }] });
    const desc = await server.call('GET', `${path}?limit=2&after=${all.body.data[1].id}`, { key });
    expect(desc.body.data.map((i: { content: Array<{ text: string }> }) => i.content[0]!.text)).toEqual([
      'turn c',
      'turn b',
    ]);

    // A continued response lists only its own input.
    const next = await create({ model: 'sandbox-echo', input: 'only this', previous_response_id: answer.body.id }, key);
    const items = await server.call('GET', `/v1/responses/${next.body.id}/input_items`, { key });
    expect(items.body.data).toHaveLength(1);
    expect(items.body.data[0].content).toEqual([{ type: 'input_text', text: 'only this' }]);
    expectProblem(
      await server.call('GET', `${path}?after=${items.body.data[0].id}`, { key }),
      422,
      'validation_failed',
    );
  });

  test('problems carry OpenAI error objects: unknown model, unknown previous response, unsupported fields', async () => {
    const unknown = await create({ model: 'gpt-5-turbo-preview', input: 'hi' });
    expectProblem(unknown, 404, 'model_not_found');
    expect(unknown.body.error).toMatchObject({
      type: 'invalid_request_error',
      param: 'model',
      code: 'model_not_found',
    });
    const previous = await create({
      model: 'sandbox-echo',
      input: 'hi',
      previous_response_id: 'resp_01JDA4M7Q4B5C6D7E8F9G0H1J2',
    });
    expectProblem(previous, 404, 'not_found');
    expect(previous.body.error.param).toBe('previous_response_id');
    for (const [field, value, param] of [
      ['background', true, 'background'],
      ['truncation', 'auto', 'truncation'],
      ['include', ['file_search_call.results'], 'include'],
      ['tools', [{ type: 'web_search' }], 'tools[0].type'],
      ['conversation', 'conv_123', 'conversation'],
    ] as const) {
      const answer = await create({ model: 'sandbox-echo', input: 'hi', [field]: value });
      expectProblem(answer, 422, 'validation_failed');
      expect(answer.body.error.param, field).toContain(param.split('[')[0]);
    }
    const wrongPart = await create({
      model: 'sandbox-echo',
      input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-123' }] }],
    });
    expectProblem(wrongPart, 422, 'validation_failed');
    const json = await create({
      model: 'sandbox-echo',
      input: 'hi',
      text: { format: { type: 'json_schema', name: 'x', schema: { type: 'object' } } },
    });
    expect(json.status).toBe(200);
  });

  test('a stored response emits chat.message.created for each message; usage rows are in GET /v1/usage', async () => {
    const { key, id: workspaceId } = await newWorkspace();
    const first = await create({ model: 'sandbox-echo', input: 'one two three' }, key);
    const second = await create(
      { model: 'sandbox-writer', input: 'Write about roasts', previous_response_id: first.body.id, stream: true },
      key,
    );
    const completed = JSON.parse(parseEvents(second.text).at(-1)!.data).response;
    await create({ model: 'sandbox-echo', input: 'not stored', store: false }, key);

    const listed = await server.call('GET', '/v1/events?limit=100', { key });
    const recorded = (listed.body.data as Json[]).reverse();
    expect(recorded.map((e) => e.type)).toEqual(Array(4).fill('chat.message.created'));
    for (const event of recorded) expect(asyncApiErrors(event), event.type).toEqual([]);
    expect(recorded.map((e) => e.workspace_id)).toEqual(Array(4).fill(workspaceId));
    expect(recorded.map((e) => [e.data.role, e.data.thread_id])).toEqual([
      ['user', first.body.thread_id],
      ['assistant', first.body.thread_id],
      ['user', first.body.thread_id],
      ['assistant', first.body.thread_id],
    ]);
    expect(recorded[3]!.data.message_id).toBe(completed.output[0].id);

    const report = await server.call('GET', '/v1/usage?group_by=model', { key });
    expect(report.status, report.text).toBe(200);
    expect(report.body.totals.requests).toBe(3);
    const writer = (report.body.data as components['schemas']['UsageBucket'][]).find(
      (b) => b.model === 'sandbox-writer',
    )!;
    expect(writer).toMatchObject({
      requests: 1,
      input_tokens: completed.usage.input_tokens,
      output_tokens: completed.usage.output_tokens,
      cost_usd: completed.cost_usd,
      feature: null,
    });
  });
});

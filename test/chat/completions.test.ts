// Chat completions, threads, the catalogue and usage against the real server on SQLite and PostgreSQL, with the
// built-in sandbox models (no key, no network): the sandbox's documented rules, `n`, `stop`, `max_tokens`, JSON
// mode and JSON schema, streaming with the usage chunk, the problems of bad requests (in OpenAI's shape too),
// threads saved, continued and deleted with their events checked against the AsyncAPI messages, the audit entry,
// and GET /v1/usage summing what every call cost.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { priceOf } from '../../src/features/engine/pricing.ts';
import { countTokens } from '../../src/features/engine/tokens.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { asyncApiErrors } from '../support/asyncapi.ts';
import { expectProblem } from '../support/expect.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { type Json, schemaErrors } from '../support/spec.ts';

const THREAD_ID = /^thr_[0-9A-HJKMNP-TV-Z]{26}$/;
const MESSAGE =
  'Write a launch announcement for our spring sale on single-origin coffee roasts. Spring roasts ship Monday.';

/** Reads a `text/event-stream` answer into its `data:` payloads. */
function events(text: string): string[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) =>
      block
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join('\n'),
    );
}

describe.each(databaseKinds)('chat on %s', (kind) => {
  let server: TestServer;
  let counter = 0;

  beforeAll(async () => {
    server = await startTestServer({ database: kind });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** A workspace of its own, so that the usage and threads of one test are not another's. */
  async function newWorkspace() {
    const created = await createWorkspace(server.platform.db, {
      name: `Chat ${++counter}`,
      region: server.platform.config.region,
      ownerEmail: `o${counter}@test.example`,
      now: new Date(),
    });
    return { key: created.secret, id: created.workspace.id, keyId: created.apiKey.id };
  }

  function complete(body: Record<string, unknown>, key = server.ownerKey): Promise<Answer> {
    return server.call('POST', '/v1/chat/completions', { key, body });
  }

  test('sandbox-writer drafts what the last user message asks for, priced from the catalogue', async () => {
    const answer = await complete({
      model: 'sandbox-writer',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: MESSAGE },
      ],
    });
    expect(answer.status, answer.text).toBe(200);
    expect(schemaErrors('/components/schemas/ChatCompletion', answer.body)).toEqual([]);
    const content = answer.body.choices[0].message.content as string;
    // The rules of src/features/engine/providers/sandbox/draft.ts: an announcement of the topic, with the message's details.
    expect(content).toBe(
      "Introducing our spring sale on single-origin coffee roasts!\n\nWe're excited to share it with you. Spring roasts ship Monday. Find every detail at [link].\n\nQuestions? Reply to this message: we'd love to hear what you think.",
    );
    const { usage } = answer.body;
    expect(usage.prompt_tokens).toBeGreaterThan(20);
    expect(usage.completion_tokens).toBeGreaterThan(10);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    const model = server.platform.services.engine.catalogue.get('sandbox-writer')!;
    expect(answer.body.cost_usd).toBe(
      priceOf(model, { inputTokens: usage.prompt_tokens, cachedInputTokens: 0, outputTokens: usage.completion_tokens }),
    );
    expect(answer.body).toMatchObject({
      object: 'chat.completion',
      model: 'sandbox-writer',
      thread_id: null,
      voice_id: null,
    });
    // Deterministic: the same request answers the same text.
    expect(
      (
        await complete({
          model: 'sandbox-writer',
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: MESSAGE },
          ],
        })
      ).body.choices[0].message.content,
    ).toBe(content);
  });

  test('text that spells a special token of the encoding (<|endoftext|>) is counted as text, streamed or not', async () => {
    const content = 'Summarise this log line: <|endoftext|> then <|im_start|>user, as written.';
    const answer = await complete({ model: 'sandbox-writer', messages: [{ role: 'user', content }] });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.usage.prompt_tokens).toBeGreaterThan(10);
    const streamed = await complete({
      model: 'sandbox-writer',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content }],
    });
    expect(streamed.status, streamed.text).toBe(200);
    const usage = events(streamed.text)
      .filter((data) => data !== '[DONE]')
      .map((data) => JSON.parse(data) as { usage?: { prompt_tokens: number } | null })
      .find((chunk) => chunk.usage);
    expect(usage?.usage?.prompt_tokens).toBe(answer.body.usage.prompt_tokens);
  });

  test('n choices differ (the key terms rotate), each billed; a seed picks the rotation', async () => {
    const answer = await complete({ model: 'sandbox-writer', messages: [{ role: 'user', content: MESSAGE }], n: 3 });
    expect(answer.status, answer.text).toBe(200);
    const texts = answer.body.choices.map((c: { message: { content: string } }) => c.message.content);
    expect(new Set(texts).size).toBe(3);
    expect(answer.body.choices.map((c: { index: number }) => c.index)).toEqual([0, 1, 2]);
    const one = await complete({ model: 'sandbox-writer', messages: [{ role: 'user', content: MESSAGE }] });
    expect(answer.body.usage.prompt_tokens).toBe(3 * one.body.usage.prompt_tokens);
    const seeded = await complete({ model: 'sandbox-writer', messages: [{ role: 'user', content: MESSAGE }], seed: 1 });
    expect(seeded.body.choices[0].message.content).toBe(texts[1]);
  });

  test('stop ends before the first stop sequence; max_tokens cuts with finish_reason length', async () => {
    const stopped = await complete({
      model: 'sandbox-echo',
      messages: [{ role: 'user', content: 'alpha beta gamma delta' }],
      stop: ['gamma', 'zeta'],
    });
    expect(stopped.body.choices[0]).toMatchObject({ message: { content: 'alpha beta ' }, finish_reason: 'stop' });
    const cut = await complete({
      model: 'sandbox-echo',
      messages: [{ role: 'user', content: 'one two three four five six seven eight' }],
      max_tokens: 3,
    });
    expect(cut.body.choices[0]).toMatchObject({ message: { content: 'one two three' }, finish_reason: 'length' });
    expect(cut.body.usage.completion_tokens).toBe(3);
    const newer = await complete({
      model: 'sandbox-echo',
      messages: [{ role: 'user', content: 'one two three four' }],
      max_tokens: 1,
      max_completion_tokens: 2,
    });
    expect(newer.body.choices[0].message.content).toBe('one two');
  });

  test('response_format json_object and json_schema answer valid JSON (the schema followed)', async () => {
    const object = await complete({
      model: 'sandbox-writer',
      messages: [{ role: 'user', content: MESSAGE }],
      response_format: { type: 'json_object' },
    });
    expect(object.status, object.text).toBe(200);
    expect(JSON.parse(object.body.choices[0].message.content)).toMatchObject({
      reply: expect.stringContaining('Introducing our spring sale'),
      key_terms: ['spring', 'roasts', 'launch', 'announcement', 'sale'],
    });
    const schema = {
      type: 'object',
      properties: {
        headline: { type: 'string', maxLength: 40 },
        blurbs: { type: 'array', items: { type: 'string' }, minItems: 2, maxItems: 2 },
        channel: { type: 'string', enum: ['email', 'social'] },
        word_count: { type: 'integer', minimum: 0, maximum: 10 },
        urgent: { type: 'boolean' },
      },
      required: ['headline', 'blurbs', 'channel', 'word_count', 'urgent'],
      additionalProperties: false,
    };
    const structured = await complete({
      model: 'sandbox-writer',
      messages: [{ role: 'user', content: MESSAGE }],
      response_format: { type: 'json_schema', json_schema: { name: 'launch', schema, strict: true } },
    });
    expect(structured.status, structured.text).toBe(200);
    const value = JSON.parse(structured.body.choices[0].message.content);
    const validate = new Ajv2020({ strict: false }).compile(schema);
    expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
    expect(value.headline).toBe('Spring');
  });

  test('a stream sends schema-valid chunks, one role chunk per choice, a usage chunk on request, and [DONE]', async () => {
    const answer = await complete({
      model: 'sandbox-writer',
      messages: [{ role: 'user', content: MESSAGE }],
      stream: true,
      n: 2,
      stream_options: { include_usage: true },
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const data = events(answer.text);
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
    for (const chunk of chunks) expect(schemaErrors('/components/schemas/ChatCompletionChunk', chunk)).toEqual([]);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    const last = chunks.at(-1);
    expect(last.choices).toEqual([]);
    expect(last.usage.total_tokens).toBe(last.usage.prompt_tokens + last.usage.completion_tokens);
    expect(last.cost_usd).toBeGreaterThan(0);
    const whole = await complete({ model: 'sandbox-writer', messages: [{ role: 'user', content: MESSAGE }], n: 2 });
    for (const index of [0, 1]) {
      const mine = chunks.filter((c) => c.choices[0]?.index === index);
      expect(mine.filter((c) => c.choices[0].delta.role === 'assistant')).toHaveLength(1);
      expect(mine.map((c) => c.choices[0].delta.content ?? '').join('')).toBe(
        whole.body.choices[index].message.content,
      );
      expect(mine.at(-1).choices[0].finish_reason).toBe('stop');
    }
    expect(last.usage).toEqual(whole.body.usage);
    // Without include_usage, no usage chunk.
    const plain = events(
      (await complete({ model: 'sandbox-echo', messages: [{ role: 'user', content: 'hi there' }], stream: true })).text,
    );
    expect(plain.slice(0, -1).every((d) => JSON.parse(d).usage === null && JSON.parse(d).choices.length === 1)).toBe(
      true,
    );
  });

  test('bad requests are problems in our shape and OpenAI’s, before anything is generated or billed', async () => {
    const { key } = await newWorkspace();
    const unknown = await complete({ model: 'gpt-nonexistent', messages: [{ role: 'user', content: 'hi' }] }, key);
    expectProblem(unknown, 404, 'model_not_found');
    expect(unknown.body.error).toMatchObject({
      type: 'invalid_request_error',
      param: 'model',
      code: 'model_not_found',
    });
    const unavailable = await complete({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, key);
    expectProblem(unavailable, 422, 'model_unavailable');
    expect(unavailable.body.detail).toContain('OPENAI_API_KEY');
    const overLimit = await complete(
      { model: 'sandbox-echo', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 16_385 },
      key,
    );
    expectProblem(overLimit, 422, 'validation_failed');
    expect(overLimit.body.error.param).toBe('max_completion_tokens');
    const tooLong = await complete(
      {
        model: 'sandbox-echo',
        messages: [{ role: 'user', content: 'word '.repeat(120_000) }],
        max_completion_tokens: 16_000,
      },
      key,
    );
    expectProblem(tooLong, 422, 'context_length_exceeded');
    expect(tooLong.body.error.param).toBe('messages');
    // A long prompt is counted in the text pool, off the event loop: the count is the one made in place (each
    // message's tokens and 3 of framing, 3 that prime the answer).
    const counted = await complete(
      {
        model: 'sandbox-echo',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'word '.repeat(120_000) },
        ],
        max_completion_tokens: 16_000,
      },
      key,
    );
    expectProblem(counted, 422, 'context_length_exceeded');
    const inPlace = 3 + (3 + countTokens('Be brief.')) + (3 + countTokens('word '.repeat(120_000)));
    expect(counted.body.errors).toEqual([{ pointer: '/messages', detail: `holds ${inPlace} tokens` }]);
    expectProblem(
      await complete({ model: 'sandbox-echo', messages: [{ role: 'user', content: 'word '.repeat(130_000) }] }, key),
      422,
      'context_length_exceeded',
    );
    const functions = await complete(
      { model: 'sandbox-echo', messages: [{ role: 'user', content: 'hi' }], functions: [] },
      key,
    );
    expectProblem(functions, 422, 'validation_failed');
    expect(functions.body.error.param).toBe('functions');
    expectProblem(
      await complete(
        {
          model: 'sandbox-echo',
          messages: [{ role: 'user', content: 'hi' }],
          voice_id: 'voc_01JD2Q7F8X3M4N5P6R7S8T9V0W',
        },
        key,
      ),
      404,
      'not_found',
    );
    expectProblem(
      await complete(
        {
          model: 'sandbox-echo',
          messages: [{ role: 'user', content: 'hi' }],
          thread_id: 'thr_01JD2Q7F8X3M4N5P6R7S8T9V0W',
        },
        key,
      ),
      404,
      'not_found',
    );
    const streamed = await complete({ model: 'nope', messages: [{ role: 'user', content: 'hi' }], stream: true }, key);
    expectProblem(streamed, 404, 'model_not_found');
    const viewer = await server.createKey('viewer', { key });
    expectProblem(
      await complete({ model: 'sandbox-echo', messages: [{ role: 'user', content: 'hi' }] }, viewer.secret),
      403,
      'insufficient_role',
    );
    const usage = await server.call('GET', '/v1/usage', { key });
    expect(usage.body.totals.requests).toBe(0);
  });

  test('store saves the exchange; thread_id continues it with the history; list, get and delete with events and audit', async () => {
    const { key, id: workspaceId } = await newWorkspace();
    const first = await complete(
      {
        model: 'sandbox-echo',
        messages: [
          { role: 'developer', content: 'You are terse.' },
          { role: 'user', content: 'First question', name: 'maria' },
        ],
        store: true,
        metadata: { campaign: 'spring' },
      },
      key,
    );
    expect(first.status, first.text).toBe(200);
    const threadId = first.body.thread_id as string;
    expect(threadId).toMatch(THREAD_ID);
    const second = await complete(
      {
        model: 'sandbox-writer',
        messages: [{ role: 'user', content: 'Second question about roasting beans' }],
        thread_id: threadId,
      },
      key,
    );
    expect(second.body.thread_id).toBe(threadId);
    // The stored history went to the model: the prompt counts the four earlier messages too.
    const alone = await complete(
      { model: 'sandbox-writer', messages: [{ role: 'user', content: 'Second question about roasting beans' }] },
      key,
    );
    expect(second.body.usage.prompt_tokens).toBeGreaterThan(alone.body.usage.prompt_tokens);
    // Streams save too, once complete.
    const streamed = await complete(
      { model: 'sandbox-echo', messages: [{ role: 'user', content: 'Third' }], thread_id: threadId, stream: true },
      key,
    );
    expect(events(streamed.text).at(-1)).toBe('[DONE]');

    const thread = await server.call('GET', `/v1/chat/threads/${threadId}`, { key });
    expect(thread.status, thread.text).toBe(200);
    expect(schemaErrors('/components/schemas/ChatThreadWithMessages', thread.body)).toEqual([]);
    expect(thread.body).toMatchObject({
      id: threadId,
      title: 'First question',
      model: 'sandbox-echo',
      message_count: 7,
      metadata: { campaign: 'spring' },
    });
    const messages = thread.body.messages as components['schemas']['ChatMessage'][];
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ['developer', 'You are terse.'],
      ['user', 'First question'],
      ['assistant', 'First question'],
      ['user', 'Second question about roasting beans'],
      ['assistant', second.body.choices[0].message.content],
      ['user', 'Third'],
      ['assistant', 'Third'],
    ]);
    expect(messages[1]!.name).toBe('maria');
    expect(messages[4]).toMatchObject({
      model: 'sandbox-writer',
      usage: second.body.usage,
      cost_usd: second.body.cost_usd,
      finish_reason: 'stop',
    });
    expect(messages[3]).toMatchObject({ model: null, usage: null, cost_usd: null, finish_reason: null });

    const list = await server.call('GET', '/v1/chat/threads?model=sandbox-echo', { key });
    expect(list.body.data.map((t: { id: string }) => t.id)).toEqual([threadId]);
    expect((await server.call('GET', '/v1/chat/threads?model=sandbox-writer', { key })).body.data).toEqual([]);
    const other = await newWorkspace();
    expectProblem(await server.call('GET', `/v1/chat/threads/${threadId}`, { key: other.key }), 404, 'not_found');
    expectProblem(await server.call('DELETE', `/v1/chat/threads/${threadId}`, { key: other.key }), 404, 'not_found');

    expect((await server.call('DELETE', `/v1/chat/threads/${threadId}`, { key })).status).toBe(204);
    expectProblem(await server.call('GET', `/v1/chat/threads/${threadId}`, { key }), 404, 'not_found');
    expectProblem(
      await complete(
        { model: 'sandbox-echo', messages: [{ role: 'user', content: 'again' }], thread_id: threadId },
        key,
      ),
      404,
      'not_found',
    );
    const left = await server.platform.db
      .selectFrom('chat_messages')
      .select('id')
      .where('thread_id', '=', threadId)
      .execute();
    expect(left).toEqual([]);

    const audit = await server.call('GET', '/v1/audit-logs?action=chat_thread.*', { key });
    expect(audit.body.data).toHaveLength(1);
    expect(audit.body.data[0]).toMatchObject({
      action: 'chat_thread.deleted',
      target: { type: 'chat_thread', id: threadId },
    });

    const listed = await server.call('GET', '/v1/events?limit=100', { key });
    const recorded = (listed.body.data as Json[]).reverse();
    expect(recorded.map((e) => e.type)).toEqual([...Array(7).fill('chat.message.created'), 'chat.thread.deleted']);
    for (const event of recorded) expect(asyncApiErrors(event), event.type).toEqual([]);
    expect(recorded.map((e) => e.workspace_id)).toEqual(Array(8).fill(workspaceId));
    expect(recorded.slice(0, 7).map((e) => e.data.message_id)).toEqual(messages.map((m) => m.id));
    expect(recorded[0]!.data).toEqual({
      thread_id: threadId,
      message_id: messages[0]!.id,
      role: 'developer',
      content: 'You are terse.',
      model: 'sandbox-echo',
      voice_id: null,
      tool_calls: null,
      tool_call_id: null,
    });
    expect(recorded[4]!.data).toMatchObject({ role: 'assistant', model: 'sandbox-writer' });
    expect(recorded[7]!.data).toEqual({ thread_id: threadId, deleted_at: expect.any(String) });
  });

  test('a thread holds at most 1,000 messages (409 thread_full)', async () => {
    const { key } = await newWorkspace();
    const many = Array.from({ length: 999 }, (_, i) => ({ role: 'user', content: `m${i}` }));
    const full = await complete({ model: 'sandbox-echo', messages: many, store: true }, key);
    expect(full.status, full.text).toBe(200);
    const again = await complete(
      { model: 'sandbox-echo', messages: [{ role: 'user', content: 'one more' }], thread_id: full.body.thread_id },
      key,
    );
    expectProblem(again, 409, 'thread_full');
  });

  test('GET /v1/models is the whole catalogue in one list, with availability; GET /v1/models/{id}', async () => {
    const list = await server.call('GET', '/v1/models');
    expect(list.status, list.text).toBe(200);
    expect(schemaErrors('/components/schemas/ModelList', list.body)).toEqual([]);
    const models = list.body.data as components['schemas']['Model'][];
    expect(list.body).toMatchObject({ object: 'list', next_cursor: null });
    expect(models.length).toBe(server.platform.services.engine.catalogue.entries.length);
    expect(models.filter((m) => m.available).map((m) => m.id)).toEqual([
      'sandbox-writer',
      'sandbox-echo',
      'sandbox-embedding',
    ]);
    const available = await server.call('GET', '/v1/models?available=true');
    expect(available.body.data.map((m: { id: string }) => m.id)).toEqual([
      'sandbox-writer',
      'sandbox-echo',
      'sandbox-embedding',
    ]);
    const sandbox = await server.call('GET', '/v1/models?provider=sandbox&capability=json_schema');
    expect(sandbox.body.data).toHaveLength(2);
    const one = await server.call('GET', '/v1/models/sandbox-echo');
    expect(one.body).toEqual(models.find((m) => m.id === 'sandbox-echo'));
    expectProblem(await server.call('GET', '/v1/models/gpt-nonexistent'), 404, 'model_not_found');
  });

  test('GET /v1/usage sums every call by day, model, feature and key, with totals and filters', async () => {
    const { key, keyId } = await newWorkspace();
    const editor = await server.createKey('editor', { key });
    const calls = [
      await complete({ model: 'sandbox-echo', messages: [{ role: 'user', content: 'one two three' }] }, key),
      await complete({ model: 'sandbox-writer', messages: [{ role: 'user', content: MESSAGE }], n: 2 }, editor.secret),
      await complete({ model: 'sandbox-echo', messages: [{ role: 'user', content: 'four five' }] }, editor.secret),
    ];
    const cost = (answers: Answer[]) => Math.round(answers.reduce((sum, a) => sum + a.body.cost_usd, 0) * 1e11) / 1e11;
    const report = await server.call('GET', '/v1/usage?group_by=model&group_by=api_key', { key });
    expect(report.status, report.text).toBe(200);
    expect(schemaErrors('/components/schemas/UsageReport', report.body)).toEqual([]);
    expect(report.body.totals).toMatchObject({
      requests: 4,
      input_tokens: calls.reduce((sum, a) => sum + a.body.usage.prompt_tokens, 0),
      output_tokens: calls.reduce((sum, a) => sum + a.body.usage.completion_tokens, 0),
      cost_usd: cost(calls),
    });
    const buckets = report.body.data as components['schemas']['UsageBucket'][];
    expect(buckets).toHaveLength(3);
    expect(buckets.find((b) => b.model === 'sandbox-writer')).toMatchObject({
      api_key_id: editor.id,
      requests: 2,
      cost_usd: calls[1]!.body.cost_usd,
      date: null,
      feature: null,
    });
    expect(buckets.find((b) => b.model === 'sandbox-echo' && b.api_key_id === keyId)).toMatchObject({
      requests: 1,
      input_tokens: calls[0]!.body.usage.prompt_tokens,
    });
    const byDay = await server.call('GET', '/v1/usage?group_by=day&group_by=feature', { key });
    expect(byDay.body.data).toEqual([
      expect.objectContaining({ date: new Date().toISOString().slice(0, 10), feature: 'chat', requests: 4 }),
    ]);
    const filtered = await server.call(`GET`, `/v1/usage?model=sandbox-echo&api_key_id=${editor.id}&group_by=model`, {
      key,
    });
    expect(filtered.body.totals).toMatchObject({ requests: 1, cost_usd: calls[2]!.body.cost_usd });
    expect(
      (await server.call('GET', '/v1/usage?start_date=2020-01-01&end_date=2020-01-31', { key })).body,
    ).toMatchObject({ data: [], totals: { requests: 0, cost_usd: 0 } });
    expectProblem(
      await server.call('GET', '/v1/usage?start_date=2026-01-02&end_date=2026-01-01', { key }),
      422,
      'validation_failed',
    );
    expectProblem(
      await server.call('GET', '/v1/usage?start_date=2024-01-01&end_date=2026-01-01', { key }),
      422,
      'validation_failed',
    );
    expectProblem(await server.call('GET', '/v1/usage?group_by=week', { key }), 422, 'validation_failed');
    expectProblem(await server.call('GET', '/v1/usage', { key: editor.secret }), 403, 'insufficient_role');
  });
});

// Fallback models (`models`, as OpenRouter's) through our API, with the real provider packages in front of fake
// upstreams on loopback: a model whose provider fails before its first token (503, 429) gives way to the next one,
// which answers; the answer, its chunks, the stored thread and the usage rows name the model that answered, and
// `models_tried` the ones that failed. A failure after the first token, a provider's 4xx, and the last model's
// failure are not retried elsewhere. Unknown fallbacks, ones unable to serve the request and `n` over 1 are refused
// before any call; one this server cannot call is skipped. An Idempotency-Key replays the stored answer; the output
// policy checks what a fallback writes. On SQLite and PostgreSQL.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { priceOf } from '../../src/features/engine/pricing.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { expectProblem } from '../support/expect.ts';
import { type FakeProvider, startFakeAnthropic, startFakeOpenAi } from '../support/fake-providers.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { schemaErrors } from '../support/spec.ts';

const CLAUDE = 'claude-haiku-4-5';
/** A Google model: its provider is not configured on the test server. */
const GEMINI = 'gemini-2.5-flash-lite';

describe.each(databaseKinds)('fallback models on %s', (kind) => {
  let openai: FakeProvider;
  let anthropic: FakeProvider;
  let server: TestServer;
  let counter = 0;

  beforeAll(async () => {
    [openai, anthropic] = await Promise.all([startFakeOpenAi(), startFakeAnthropic()]);
    server = await startTestServer({
      database: kind,
      env: {
        OPENAI_API_KEY: 'sk-test-openai',
        OPENAI_BASE_URL: openai.url,
        ANTHROPIC_API_KEY: 'sk-ant-test',
        ANTHROPIC_BASE_URL: anthropic.url,
        // The last model of a list is retried once; the others are not (the next model is their retry).
        PROVIDER_MAX_RETRIES: '1',
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await Promise.all([openai, anthropic].map((fake) => fake?.close()));
  });

  async function newWorkspace() {
    const created = await createWorkspace(server.platform.db, {
      name: `Fallbacks ${++counter}`,
      region: server.platform.config.region,
      now: new Date(),
    });
    return { key: created.secret, workspaceId: created.workspace.id };
  }

  function complete(key: string, body: Record<string, unknown>): Promise<Answer> {
    return server.call('POST', '/v1/chat/completions', { key, body });
  }

  async function usageRows(workspaceId: string) {
    const rows = await server.platform.db
      .selectFrom('usage_records')
      .select(['model', 'input_tokens', 'output_tokens'])
      .where('workspace_id', '=', workspaceId)
      .orderBy('id')
      .execute();
    // PostgreSQL's bigint columns come back as strings.
    return rows.map((row) => ({
      model: row.model,
      input_tokens: Number(row.input_tokens),
      output_tokens: Number(row.output_tokens),
    }));
  }

  /** The JSON of each `data:` event of a chat completion stream but `[DONE]`. */
  function chunksOf(answer: Answer) {
    const data = answer.text
      .split('\n\n')
      .filter(Boolean)
      .map((block) => block.replace(/^data: /, ''));
    expect(data.at(-1)).toBe('[DONE]');
    return data.slice(0, -1).map((d) => JSON.parse(d));
  }

  const model = (id: string) => server.platform.services.engine.catalogue.get(id)!;

  test('a 503 before the first token: the next model answers, once, and is the one named and billed', async () => {
    const { key, workspaceId } = await newWorkspace();
    openai.enqueue({ error: { status: 503, headers: { 'retry-after': '0' } } });
    anthropic.enqueue({ text: 'Spring sale: 20% off every plan', usage: { input: 31, output: 11 } });
    const openaiBefore = openai.requests.length;
    const answer = await complete(key, {
      model: 'gpt-4o-mini',
      models: [CLAUDE],
      messages: [{ role: 'user', content: 'A subject line for the sale' }],
      max_completion_tokens: 60,
    });
    expect(answer.status, answer.text).toBe(200);
    expect(schemaErrors('/components/schemas/ChatCompletion', answer.body)).toEqual([]);
    expect(answer.body.model).toBe(CLAUDE);
    expect(answer.body.choices[0].message.content).toBe('Spring sale: 20% off every plan');
    expect(answer.body.models_tried).toEqual([{ model: 'gpt-4o-mini', code: 'upstream_unavailable', status: 503 }]);
    expect(answer.body.cost_usd).toBe(
      priceOf(model(CLAUDE), { inputTokens: 31, cachedInputTokens: 0, outputTokens: 11 }),
    );
    // Not retried on its own provider (PROVIDER_MAX_RETRIES=1 applies to the last model only).
    expect(openai.requests.length - openaiBefore).toBe(1);
    expect(anthropic.requests.at(-1)!.body).toMatchObject({ model: model(CLAUDE).upstream_id, max_tokens: 60 });
    // The failed call cost nothing and is not recorded; the answer is recorded under the model that gave it.
    expect(await usageRows(workspaceId)).toEqual([{ model: CLAUDE, input_tokens: 31, output_tokens: 11 }]);
  });

  test('an Idempotency-Key replays the stored answer, fallback and all, without calling any model', async () => {
    const { key, workspaceId } = await newWorkspace();
    openai.enqueue({ error: { status: 503 } });
    anthropic.enqueue({ text: 'Answered once', usage: { input: 5, output: 2 } });
    const body = { model: 'gpt-4o-mini', models: [CLAUDE], messages: [{ role: 'user', content: 'Hi' }] };
    const headers = { 'Idempotency-Key': `fallback-${kind}-${counter}` };
    const first = await server.call('POST', '/v1/chat/completions', { key, body, headers });
    expect(first.body).toMatchObject({ model: CLAUDE, models_tried: [{ model: 'gpt-4o-mini' }] });
    const calls = openai.requests.length + anthropic.requests.length;
    const replay = await server.call('POST', '/v1/chat/completions', { key, body, headers });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
    expect(openai.requests.length + anthropic.requests.length).toBe(calls);
    expect(await usageRows(workspaceId)).toHaveLength(1);
  });

  test('without a failure the first model answers and models_tried is empty; without models the answer has no models_tried', async () => {
    const { key } = await newWorkspace();
    openai.enqueue({ text: 'Hello', usage: { input: 3, output: 1 } });
    const answered = await complete(key, {
      model: 'gpt-4o-mini',
      models: [CLAUDE],
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(answered.body).toMatchObject({ model: 'gpt-4o-mini', models_tried: [] });
    openai.enqueue({ text: 'Hello', usage: { input: 3, output: 1 } });
    const plain = await complete(key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] });
    expect(plain.body.model).toBe('gpt-4o-mini');
    expect(plain.body).not.toHaveProperty('models_tried');
  });

  test('streamed: a 429 before the first token falls back; every chunk names the answering model, the first lists the tried one; the thread keeps it', async () => {
    const { key, workspaceId } = await newWorkspace();
    openai.enqueue({ error: { status: 429, headers: { 'retry-after': '20' }, type: 'rate_limit_error' } });
    anthropic.enqueue({ chunks: ['Ends', ' Sunday.'], usage: { input: 12, output: 2 } });
    const answer = await complete(key, {
      model: 'gpt-4o-mini',
      models: [CLAUDE],
      messages: [{ role: 'user', content: 'When does it end?' }],
      stream: true,
      stream_options: { include_usage: true },
      store: true,
    });
    expect(answer.status, answer.text).toBe(200);
    const chunks = chunksOf(answer);
    for (const chunk of chunks) expect(schemaErrors('/components/schemas/ChatCompletionChunk', chunk)).toEqual([]);
    expect(new Set(chunks.map((chunk) => chunk.model))).toEqual(new Set([CLAUDE]));
    expect(chunks[0].models_tried).toEqual([{ model: 'gpt-4o-mini', code: 'upstream_rate_limited', status: 429 }]);
    expect(chunks.slice(1).filter((chunk) => 'models_tried' in chunk)).toEqual([]);
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('Ends Sunday.');
    expect(chunks.at(-1).usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 2 });
    expect(await usageRows(workspaceId)).toEqual([{ model: CLAUDE, input_tokens: 12, output_tokens: 2 }]);
    const thread = await server.call('GET', `/v1/chat/threads/${chunks[0].thread_id}`, { key });
    expect(thread.status, thread.text).toBe(200);
    expect(thread.body.model).toBe(CLAUDE);
    expect(thread.body.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'Ends Sunday.', model: CLAUDE });
  });

  test('a failure after the first token is not retried elsewhere: the stream ends with an error, billed to the model that streamed', async () => {
    const { key, workspaceId } = await newWorkspace();
    openai.enqueue({
      chunks: ['Spring ', 'sale ', 'starts ', 'Monday'],
      cutAfterChunks: 2,
      chunkDelayMs: 5,
      usage: { input: 10, output: 4 },
    });
    const anthropicBefore = anthropic.requests.length;
    const answer = await complete(key, {
      model: 'gpt-4o-mini',
      models: [CLAUDE],
      messages: [{ role: 'user', content: 'Announce it' }],
      stream: true,
    });
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('"content":"Spring "');
    expect(answer.text).toContain('event: error');
    expect(answer.text).toContain('upstream_unavailable');
    expect(answer.text).not.toContain('[DONE]');
    expect(answer.text).toContain('"model":"gpt-4o-mini"');
    expect(anthropic.requests.length).toBe(anthropicBefore);
    const rows = await usageRows(workspaceId);
    expect(rows.map((row) => row.model)).toEqual(['gpt-4o-mini']);
    expect(rows[0]!.output_tokens).toBeGreaterThan(0);
  });

  test('a provider’s 4xx does not fall back; when every model fails, the last one’s problem is the answer and nothing is billed', async () => {
    const { key, workspaceId } = await newWorkspace();
    const anthropicBefore = anthropic.requests.length;
    openai.enqueue({ error: { status: 400, type: 'invalid_request_error', message: 'Invalid value for stop' } });
    const refused = await complete(key, {
      model: 'gpt-4o-mini',
      models: [CLAUDE],
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expectProblem(refused, 502, 'upstream_error');
    expect(refused.body.error).toMatchObject({ code: 'upstream_error' });
    expect(anthropic.requests.length).toBe(anthropicBefore);

    // The last model gets the server's retry (PROVIDER_MAX_RETRIES=1): Anthropic is called twice.
    openai.enqueue({ error: { status: 503 } });
    anthropic.enqueue(
      { error: { status: 529, type: 'overloaded_error', headers: { 'retry-after': '0' } } },
      { error: { status: 529, type: 'overloaded_error', headers: { 'retry-after': '30' } } },
    );
    const down = await complete(key, {
      model: 'gpt-4o-mini',
      models: [CLAUDE],
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
    });
    expectProblem(down, 503, 'upstream_unavailable');
    expect(down.body.detail).toContain(CLAUDE);
    expect(down.headers.get('retry-after')).toBe('30');
    expect(anthropic.requests.length - anthropicBefore).toBe(2);
    expect(await usageRows(workspaceId)).toEqual([]);
  });

  test('a fallback whose provider this server lacks is skipped and listed in its place', async () => {
    const { key } = await newWorkspace();
    openai.enqueue({ error: { status: 500 } });
    anthropic.enqueue({ text: 'From Claude', usage: { input: 4, output: 2 } });
    const answer = await complete(key, {
      model: 'gpt-4o-mini',
      models: [GEMINI, CLAUDE],
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.model).toBe(CLAUDE);
    expect(answer.body.models_tried).toEqual([
      { model: 'gpt-4o-mini', code: 'upstream_unavailable', status: 503 },
      { model: GEMINI, code: 'model_unavailable', status: 422 },
    ]);
  });

  test('OpenRouter’s form: models naming model first, or models alone (its first is the model), in chat completions and responses', async () => {
    const { key } = await newWorkspace();
    const messages = [{ role: 'user', content: 'Hi' }];
    openai.enqueue({ error: { status: 503 } });
    anthropic.enqueue({ text: 'From Claude', usage: { input: 3, output: 2 } });
    const both = await complete(key, { model: 'gpt-4o-mini', models: ['gpt-4o-mini', CLAUDE], messages });
    expect(both.status, both.text).toBe(200);
    expect(both.body).toMatchObject({ model: CLAUDE, models_tried: [{ model: 'gpt-4o-mini', status: 503 }] });

    openai.enqueue({ error: { status: 503 } });
    anthropic.enqueue({ text: 'From Claude', usage: { input: 3, output: 2 } });
    const alone = await complete(key, { models: ['gpt-4o-mini', CLAUDE], messages });
    expect(alone.status, alone.text).toBe(200);
    expect(alone.body).toMatchObject({ model: CLAUDE, models_tried: [{ model: 'gpt-4o-mini', status: 503 }] });

    // A list of the model alone asks for no fallback: the answer is as without one.
    openai.enqueue({ text: 'Hello', usage: { input: 3, output: 1 } });
    const single = await complete(key, { models: ['gpt-4o-mini'], messages, n: 1 });
    expect(single.status, single.text).toBe(200);
    expect(single.body.model).toBe('gpt-4o-mini');
    expect(single.body).not.toHaveProperty('models_tried');

    openai.enqueue({ error: { status: 503 } });
    anthropic.enqueue({ text: 'From Claude', usage: { input: 3, output: 2 } });
    const response = await server.call('POST', '/v1/responses', {
      key,
      body: { models: ['gpt-4o-mini', CLAUDE], input: 'Hi', store: false },
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toMatchObject({ model: CLAUDE, models_tried: [{ model: 'gpt-4o-mini', status: 503 }] });

    // The first of models alone is the model: its problems point at it; without model and models, at /model.
    const unknown = await complete(key, { models: ['gpt-9-ultra', CLAUDE], messages });
    expectProblem(unknown, 404, 'model_not_found');
    expect(unknown.body.errors).toEqual([{ pointer: '/models/0', detail: 'is not a model of the catalogue' }]);
    expect(unknown.body.error.param).toBe('models[0]');
    const neither = await complete(key, { messages });
    expectProblem(neither, 422, 'validation_failed');
    expect(neither.body.errors).toEqual([{ pointer: '/model', detail: 'is required without models' }]);
  });

  test('refused before any call: an unknown fallback, a duplicate, the model itself, one without a capability the request needs, n over 1', async () => {
    const { key } = await newWorkspace();
    const before = openai.requests.length + anthropic.requests.length;
    const messages = [{ role: 'user', content: 'Hi' }];
    const unknown = await complete(key, { model: 'gpt-4o-mini', models: [CLAUDE, 'gpt-9-ultra'], messages });
    expectProblem(unknown, 404, 'model_not_found');
    expect(unknown.body.errors).toEqual([{ pointer: '/models/1', detail: 'is not a model of the catalogue' }]);
    expect(unknown.body.error).toMatchObject({ code: 'model_not_found' });

    const duplicate = await complete(key, { model: 'gpt-4o-mini', models: [CLAUDE, CLAUDE], messages });
    expectProblem(duplicate, 422, 'validation_failed');
    expect(duplicate.body.errors[0].pointer).toBe('/models');

    const itself = await complete(key, { model: 'gpt-4o-mini', models: [CLAUDE, 'gpt-4o-mini'], messages });
    expectProblem(itself, 422, 'validation_failed');
    expect(itself.body.errors[0].pointer).toBe('/models/1');

    const tools = [
      { type: 'function', function: { name: 'get_price', parameters: { type: 'object', properties: {} } } },
    ];
    const noTools = await complete(key, { model: 'gpt-4o-mini', models: ['o1-mini'], messages, tools });
    expectProblem(noTools, 422, 'validation_failed');
    expect(noTools.body.errors).toEqual([
      { pointer: '/models/0', detail: 'o1-mini lacks the tools capability this request needs' },
    ]);

    const embedding = await complete(key, { model: 'gpt-4o-mini', models: ['text-embedding-3-small'], messages });
    expectProblem(embedding, 422, 'validation_failed');
    expect(embedding.body.errors[0].pointer).toBe('/models/0');

    const several = await complete(key, { model: 'gpt-4o-mini', models: [CLAUDE], messages, n: 2 });
    expectProblem(several, 422, 'validation_failed');
    expect(several.body.errors[0].pointer).toBe('/models');
    expect(openai.requests.length + anthropic.requests.length).toBe(before);
  });

  test('the output policy checks what a fallback writes; the audit entry names the model that wrote it', async () => {
    const { key, workspaceId } = await newWorkspace();
    const rule = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'No superlatives', kind: 'banned_phrase', phrases: ['world-class'] },
    });
    expect(rule.status, rule.text).toBe(201);
    openai.enqueue({ error: { status: 503 } });
    anthropic.enqueue({ text: 'Our world-class beans', usage: { input: 6, output: 4 } });
    const blocked = await complete(key, {
      model: 'gpt-4o-mini',
      models: [CLAUDE],
      messages: [{ role: 'user', content: 'Describe the beans' }],
    });
    expectProblem(blocked, 422, 'policy_violation');
    const audit = (await server.call('GET', '/v1/audit-logs', { key })).body
      .data as components['schemas']['AuditLogEntry'][];
    expect(audit.find((entry) => entry.action === 'policy.violation')).toMatchObject({
      details: { model: CLAUDE, blocked_output: 'Our world-class beans' },
    });
    // What the fallback generated was generated: billed under its model.
    expect(await usageRows(workspaceId)).toEqual([{ model: CLAUDE, input_tokens: 6, output_tokens: 4 }]);
  });

  test("a block settled in the fallback's first text still ends its call and bills it", async () => {
    const { key, workspaceId } = await newWorkspace();
    const rule = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'No superlatives', kind: 'banned_phrase', phrases: ['world-class'] },
    });
    expect(rule.status, rule.text).toBe(201);
    openai.enqueue({ error: { status: 503 } });
    // The match is followed by enough text in the same delta for the guard to decide at the first text event.
    anthropic.enqueue({
      text: 'Our world-class beans are roasted daily in small batches by our own team, and shipped the same week. More.',
      usage: { input: 6, output: 24 },
    });
    const blocked = await complete(key, {
      model: 'gpt-4o-mini',
      models: [CLAUDE],
      messages: [{ role: 'user', content: 'Describe the beans' }],
    });
    expectProblem(blocked, 422, 'policy_violation');
    // Billed under the model that wrote it (counted here when the call ended before the provider reported usage).
    expect((await usageRows(workspaceId)).map((row) => row.model)).toEqual([CLAUDE]);
  });

  test('with n = 2, a block in one choice ends the generation at once; the other choice breaking off later is no unhandled failure', async () => {
    const { key, workspaceId } = await newWorkspace();
    const rule = await server.call('POST', '/v1/compliance-rules', {
      key,
      body: { name: 'No superlatives', kind: 'banned_phrase', phrases: ['world-class'] },
    });
    expect(rule.status, rule.text).toBe(201);
    const chunks = [
      'Our world-class beans are roasted daily in small batches by our own team, and shipped the same week. ',
      'More.',
    ];
    openai.enqueue({ chunks, cutAfterChunks: 1, chunkDelayMs: 50 });
    openai.enqueue({ chunks, cutAfterChunks: 1, chunkDelayMs: 50 });
    const blocked = await complete(key, {
      model: 'gpt-4o-mini',
      n: 2,
      messages: [{ role: 'user', content: 'Describe the beans' }],
    });
    expectProblem(blocked, 422, 'policy_violation');
    // Both calls were made and are billed; the server goes on answering.
    expect((await usageRows(workspaceId)).map((row) => row.model)).toEqual(['gpt-4o-mini', 'gpt-4o-mini']);
    const next = await complete(key, { model: 'sandbox-echo', messages: [{ role: 'user', content: 'Still here?' }] });
    expect(next.status, next.text).toBe(200);
  });

  test('Responses API: a fallback answers, streamed or not; the response and its stored copy name it', async () => {
    const { key, workspaceId } = await newWorkspace();
    openai.enqueue({ error: { status: 503 } });
    anthropic.enqueue({ text: 'Spring sale: 20% off.', usage: { input: 40, output: 7 } });
    const answer = await server.call('POST', '/v1/responses', {
      key,
      body: { model: 'gpt-4o-mini', models: [CLAUDE], input: 'Announce the sale' },
    });
    expect(answer.status, answer.text).toBe(200);
    expect(schemaErrors('/components/schemas/Response', answer.body)).toEqual([]);
    expect(answer.body).toMatchObject({
      model: CLAUDE,
      models_tried: [{ model: 'gpt-4o-mini', code: 'upstream_unavailable', status: 503 }],
    });
    expect(answer.body.output[0].content[0].text).toBe('Spring sale: 20% off.');
    const stored = await server.call('GET', `/v1/responses/${answer.body.id}`, { key });
    expect(stored.body).toMatchObject({ model: CLAUDE, models_tried: [{ model: 'gpt-4o-mini' }] });

    openai.enqueue({ error: { status: 502 } });
    anthropic.enqueue({ chunks: ['Ends', ' Sunday.'], usage: { input: 30, output: 2 } });
    const streamed = await server.call('POST', '/v1/responses', {
      key,
      body: {
        model: 'gpt-4o-mini',
        models: [CLAUDE],
        previous_response_id: answer.body.id,
        input: 'When does it end?',
        stream: true,
      },
    });
    expect(streamed.status, streamed.text).toBe(200);
    const events = streamed.text
      .split('\n\n')
      .filter(Boolean)
      .map((block) =>
        JSON.parse(
          block
            .split('\n')
            .find((line) => line.startsWith('data: '))!
            .slice(6),
        ),
      );
    expect(events[0]).toMatchObject({
      type: 'response.created',
      response: { model: CLAUDE, models_tried: [{ model: 'gpt-4o-mini', status: 503 }] },
    });
    expect(events.at(-1)).toMatchObject({
      type: 'response.completed',
      response: { model: CLAUDE, status: 'completed' },
    });
    expect((await usageRows(workspaceId)).map((row) => row.model)).toEqual([CLAUDE, CLAUDE]);
  });

  test('the openai SDK passes `models` through as it is and reads the extension', async () => {
    const { key } = await newWorkspace();
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: key, maxRetries: 0 });
    openai.enqueue({ error: { status: 503 } });
    anthropic.enqueue({ text: 'Hi from Claude', usage: { input: 5, output: 3 } });
    // The SDK sends body fields it does not know as they are (OpenRouter's clients pass `models` this way).
    const completion = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      models: [CLAUDE],
      messages: [{ role: 'user', content: 'Hi' }],
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(completion.model).toBe(CLAUDE);
    expect(completion.choices[0]!.message.content).toBe('Hi from Claude');
    expect((completion as unknown as { models_tried: unknown }).models_tried).toEqual([
      { model: 'gpt-4o-mini', code: 'upstream_unavailable', status: 503 },
    ]);
  });
});

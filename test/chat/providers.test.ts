// Real provider code (@ai-sdk/openai, @ai-sdk/anthropic, @ai-sdk/openai-compatible) in front of fake upstreams on
// loopback that speak each provider's wire format (test/support/fake-providers.ts), through our API: answers and
// streams with the provider's usage (cached tokens priced at the cached price), a thread's history sent upstream,
// the provider's 429 and outages as our problems with its Retry-After, retries, and a client that cuts a stream:
// the upstream call is aborted and only what was generated is billed. On SQLite and PostgreSQL.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { priceOf } from '../../src/features/engine/pricing.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { eventually, expectProblem } from '../support/expect.ts';
import { type FakeProvider, startFakeAnthropic, startFakeOpenAi } from '../support/fake-providers.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { schemaErrors } from '../support/spec.ts';

describe.each(databaseKinds)('providers on %s', (kind) => {
  let openai: FakeProvider;
  let anthropic: FakeProvider;
  let groq: FakeProvider;
  let server: TestServer;
  let counter = 0;

  beforeAll(async () => {
    [openai, anthropic, groq] = await Promise.all([startFakeOpenAi(), startFakeAnthropic(), startFakeOpenAi()]);
    server = await startTestServer({
      database: kind,
      env: {
        OPENAI_API_KEY: 'sk-test-openai',
        OPENAI_BASE_URL: openai.url,
        ANTHROPIC_API_KEY: 'sk-ant-test',
        ANTHROPIC_BASE_URL: anthropic.url,
        GROQ_API_KEY: 'gsk-test',
        GROQ_BASE_URL: groq.url,
        PROVIDER_MAX_RETRIES: '1',
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await Promise.all([openai, anthropic, groq].map((fake) => fake?.close()));
  });

  async function newWorkspace() {
    const created = await createWorkspace(server.platform.db, {
      name: `Providers ${++counter}`,
      region: server.platform.config.region,
      now: new Date(),
    });
    return created.secret;
  }

  function complete(key: string, body: Record<string, unknown>): Promise<Answer> {
    return server.call('POST', '/v1/chat/completions', { key, body });
  }

  const catalogue = () => server.platform.services.engine.catalogue;

  test('the configured providers’ models are available; the others are not', async () => {
    const models = (await server.call('GET', '/v1/models?available=true')).body.data as Array<{ provider: string }>;
    expect(new Set(models.map((m) => m.provider))).toEqual(new Set(['sandbox', 'openai', 'anthropic', 'groq']));
  });

  test('OpenAI: an answer with the provider’s usage, cached tokens priced at the cached price', async () => {
    const key = await newWorkspace();
    openai.enqueue({ text: 'Spring sale: 20% off.', usage: { input: 1200, output: 7, cachedInput: 1000 } });
    const answer = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be upbeat.' },
        { role: 'user', content: 'Announce the sale' },
      ],
      max_completion_tokens: 100,
      temperature: 0.5,
      stop: ['###'],
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.choices[0].message.content).toBe('Spring sale: 20% off.');
    expect(answer.body.usage).toEqual({
      prompt_tokens: 1200,
      completion_tokens: 7,
      total_tokens: 1207,
      prompt_tokens_details: { cached_tokens: 1000 },
    });
    const model = catalogue().get('gpt-4o-mini')!;
    expect(model.pricing.cached_input_per_million_usd).not.toBeNull();
    expect(answer.body.cost_usd).toBe(priceOf(model, { inputTokens: 1200, cachedInputTokens: 1000, outputTokens: 7 }));
    const sent = openai.requests.at(-1)!;
    expect(sent.path).toMatch(/\/chat\/completions$/);
    expect(sent.headers.authorization).toBe('Bearer sk-test-openai');
    expect(sent.body).toMatchObject({ model: 'gpt-4o-mini', temperature: 0.5, stop: ['###'] });
    expect(sent.body.messages).toEqual([
      { role: 'system', content: 'Be upbeat.' },
      { role: 'user', content: 'Announce the sale' },
    ]);
  });

  test('OpenAI: a stream passes the provider’s chunks through, then usage and [DONE]', async () => {
    const key = await newWorkspace();
    openai.enqueue({ chunks: ['Spring', ' is', ' here'], usage: { input: 12, output: 3 } });
    const answer = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(answer.status, answer.text).toBe(200);
    const data = answer.text
      .split('\n\n')
      .filter(Boolean)
      .map((block) => block.replace(/^data: /, ''));
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
    for (const chunk of chunks) expect(schemaErrors('/components/schemas/ChatCompletionChunk', chunk)).toEqual([]);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Spring is here');
    expect(chunks.at(-1).usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 3 });
  });

  test('OpenAI: the Responses API front calls the provider with Chat Completions, the conversation replayed', async () => {
    const key = await newWorkspace();
    openai.enqueue({ text: 'Spring sale: 20% off.', usage: { input: 40, output: 7 } });
    const first = await server.call('POST', '/v1/responses', {
      key,
      body: { model: 'gpt-4o-mini', instructions: 'Be upbeat.', input: 'Announce the sale', max_output_tokens: 100 },
    });
    expect(first.status, first.text).toBe(200);
    expect(first.body.output[0].content[0].text).toBe('Spring sale: 20% off.');
    expect(first.body.usage).toMatchObject({ input_tokens: 40, output_tokens: 7, total_tokens: 47 });
    expect(first.body.cost_usd).toBe(
      priceOf(catalogue().get('gpt-4o-mini')!, { inputTokens: 40, cachedInputTokens: 0, outputTokens: 7 }),
    );
    expect(openai.requests.at(-1)!.path).toMatch(/\/chat\/completions$/);
    expect(openai.requests.at(-1)!.body.messages).toEqual([
      { role: 'system', content: 'Be upbeat.' },
      { role: 'user', content: 'Announce the sale' },
    ]);
    openai.enqueue({ chunks: ['Ends', ' Sunday.'], usage: { input: 30, output: 2 } });
    const next = await server.call('POST', '/v1/responses', {
      key,
      body: { model: 'gpt-4o-mini', previous_response_id: first.body.id, input: 'When does it end?', stream: true },
    });
    expect(next.status, next.text).toBe(200);
    expect(next.text).toContain('event: response.completed');
    // The instructions applied to the first response only; its input and output are replayed.
    expect(openai.requests.at(-1)!.body.messages).toEqual([
      { role: 'user', content: 'Announce the sale' },
      { role: 'assistant', content: 'Spring sale: 20% off.' },
      { role: 'user', content: 'When does it end?' },
    ]);
  });

  test('Anthropic and an OpenAI-compatible provider (Groq) answer through the same engine', async () => {
    const key = await newWorkspace();
    const claude = catalogue().entries.find((m) => m.provider === 'anthropic')!;
    anthropic.enqueue({ text: 'Hello from Claude', usage: { input: 20, output: 4 } });
    const answer = await complete(key, {
      model: claude.id,
      messages: [
        { role: 'system', content: 'Be kind.' },
        { role: 'user', content: 'Hi' },
      ],
      max_completion_tokens: 64,
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.choices[0].message.content).toBe('Hello from Claude');
    expect(answer.body.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 4 });
    const sent = anthropic.requests.at(-1)!;
    expect(sent.headers['x-api-key']).toBe('sk-ant-test');
    expect(sent.body).toMatchObject({
      model: claude.upstream_id,
      max_tokens: 64,
      system: [{ type: 'text', text: 'Be kind.' }],
    });

    anthropic.enqueue({ chunks: ['Str', 'eamed'], usage: { input: 5, output: 2 } });
    const streamed = await complete(key, {
      model: claude.id,
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
    });
    expect(streamed.text).toContain('"content":"Str"');
    expect(streamed.text.trim().endsWith('data: [DONE]')).toBe(true);

    const llama = catalogue().entries.find((m) => m.provider === 'groq')!;
    groq.enqueue({ text: 'Fast answer', usage: { input: 9, output: 2 } });
    const fast = await complete(key, { model: llama.id, messages: [{ role: 'user', content: 'Hi' }] });
    expect(fast.body.choices[0].message.content).toBe('Fast answer');
    expect(groq.requests.at(-1)!.headers.authorization).toBe('Bearer gsk-test');
  });

  test('a thread’s stored messages are sent upstream before the new ones', async () => {
    const key = await newWorkspace();
    openai.enqueue({ text: 'First answer' });
    const first = await complete(key, {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'First question' }],
      store: true,
    });
    openai.enqueue({ text: 'Second answer' });
    await complete(key, {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Second question' }],
      thread_id: first.body.thread_id,
    });
    expect(openai.requests.at(-1)!.body.messages).toEqual([
      { role: 'user', content: 'First question' },
      { role: 'assistant', content: 'First answer' },
      { role: 'user', content: 'Second question' },
    ]);
  });

  test('the provider’s 429 is ours with its Retry-After; outages are 503; a refused key is 502; none is billed', async () => {
    const key = await newWorkspace();
    // PROVIDER_MAX_RETRIES=1: a 429 is tried twice.
    openai.enqueue(
      { error: { status: 429, headers: { 'retry-after': '0' }, type: 'rate_limit_error' } },
      { error: { status: 429, headers: { 'retry-after': '7' }, type: 'rate_limit_error' } },
    );
    const before = openai.requests.length;
    const limited = await complete(key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] });
    expectProblem(limited, 429, 'upstream_rate_limited');
    expect(limited.headers.get('retry-after')).toBe('7');
    expect(limited.body.error).toMatchObject({ type: 'rate_limit_error', code: 'upstream_rate_limited' });
    expect(openai.requests.length - before).toBe(2);

    openai.enqueue(
      { error: { status: 429, headers: { 'retry-after': '0' } } },
      { text: 'Recovered', usage: { input: 3, output: 1 } },
    );
    expect(
      (await complete(key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] })).body.choices[0]
        .message.content,
    ).toBe('Recovered');

    anthropic.enqueue(
      { error: { status: 529, type: 'overloaded_error', headers: { 'retry-after': '0' } } },
      { error: { status: 529, type: 'overloaded_error', headers: { 'retry-after': '30' } } },
    );
    const claude = catalogue().entries.find((m) => m.provider === 'anthropic')!;
    const overloaded = await complete(key, {
      model: claude.id,
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
    });
    expectProblem(overloaded, 503, 'upstream_unavailable');
    expect(overloaded.headers.get('retry-after')).toBe('30');

    openai.enqueue({ error: { status: 401, type: 'invalid_request_error', message: 'Incorrect API key provided' } });
    const refused = await complete(key, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] });
    expectProblem(refused, 502, 'upstream_error');
    expect(refused.body.detail).toContain('Incorrect API key provided');

    const usage = await server.call('GET', '/v1/usage?group_by=model', { key });
    expect(usage.body.totals).toMatchObject({ requests: 1, input_tokens: 3, output_tokens: 1 });
  });

  test('a client that cuts a stream aborts the upstream call and is billed only for what was generated; nothing is saved', async () => {
    const key = await newWorkspace();
    openai.enqueue({ endless: true, chunkDelayMs: 5 });
    const disconnects = openai.disconnects;
    const controller = new AbortController();
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Go on forever' }],
        stream: true,
        store: true,
      }),
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    let received = '';
    while ((received.match(/"content"/g) ?? []).length < 5)
      received += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    await openai.waitForDisconnect(10_000);
    expect(openai.disconnects).toBe(disconnects + 1);
    const usage = await eventually(
      () => server.call('GET', '/v1/usage?group_by=model', { key }),
      (answer) => answer.body.totals.requests === 1,
    );
    expect(usage.body.totals.output_tokens).toBeGreaterThanOrEqual(5);
    expect(usage.body.totals.input_tokens).toBeGreaterThan(0);
    expect(usage.body.totals.cost_usd).toBeGreaterThan(0);
    // The thread created for the stream is dropped as the stream closes, which can end after its usage is recorded.
    await eventually(
      () => server.call('GET', '/v1/chat/threads', { key }),
      (answer) => answer.body.data.length === 0,
    );
  });
});

describe('a provider call that outlasts PROVIDER_TIMEOUT_MS', () => {
  let openai: FakeProvider;
  let server: TestServer;

  beforeAll(async () => {
    openai = await startFakeOpenAi();
    server = await startTestServer({
      database: databaseKinds[0]!,
      env: {
        OPENAI_API_KEY: 'sk-test-openai',
        OPENAI_BASE_URL: openai.url,
        PROVIDER_TIMEOUT_MS: '400',
        PROVIDER_MAX_RETRIES: '0',
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await openai?.close();
  });

  test('is abandoned: the stream ends with an upstream_unavailable error event, the upstream is disconnected, what was generated is billed', async () => {
    const { secret: key } = await createWorkspace(server.platform.db, {
      name: 'Timeouts',
      region: server.platform.config.region,
      now: new Date(),
    });
    openai.enqueue({ endless: true, chunkDelayMs: 20 });
    const disconnects = openai.disconnects;
    const answer = await server.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Go on forever' }], stream: true },
    });
    expect(answer.status).toBe(200);
    const events = answer.text.split('\n\n').filter(Boolean);
    expect(events.filter((event) => event.includes('"content"')).length).toBeGreaterThan(3);
    const last = events.at(-1)!;
    expect(last).toMatch(/^event: error\ndata: /);
    expect(JSON.parse(last.slice(last.indexOf('data: ') + 'data: '.length))).toMatchObject({
      status: 503,
      code: 'upstream_unavailable',
      detail: expect.stringContaining('did not answer in time'),
    });
    await openai.waitForDisconnect(10_000);
    expect(openai.disconnects).toBe(disconnects + 1);
    const usage = await eventually(
      () => server.call('GET', '/v1/usage?group_by=model', { key }),
      (summary) => summary.body.totals.requests === 1,
    );
    expect(usage.body.totals.output_tokens).toBeGreaterThan(3);
  });
});

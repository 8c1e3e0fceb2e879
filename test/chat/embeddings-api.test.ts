// POST /v1/embeddings through the API on SQLite and PostgreSQL: a string and an array, both encodings (the base64
// decoded as little-endian float32 is the float answer), `dimensions`, a provider model in front of a fake OpenAI,
// the limits and errors in OpenAI's error shape, the role, an embedding model refused by chat completions, and the
// usage rows in GET /v1/usage. Then clients unmodified: the `openai` SDK's embeddings.create (which asks for base64
// and decodes it) and the AI SDK's embed / embedMany through createOpenAI pointed at our /v1.
import { createOpenAI } from '@ai-sdk/openai';
import { embed, embedMany } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { sandboxEmbedding } from '../../src/features/engine/providers/sandbox/embedding.ts';
import { countTokens } from '../../src/features/engine/tokens.ts';
import { expectProblem } from '../support/expect.ts';
import { type FakeProvider, fakeEmbedding, startFakeOpenAi } from '../support/fake-providers.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { schemaErrors } from '../support/spec.ts';

/** OpenAI's base64 embedding: little-endian float32. */
function decodeBase64(text: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
}

const float32 = (values: number[]) => Array.from(Float32Array.from(values));

function expectOpenAiError(answer: Answer, status: number, code: string, param: string | null): void {
  expectProblem(answer, status, code);
  expect(answer.body.error, answer.text).toMatchObject({
    code,
    param,
    type:
      status === 403
        ? 'permission_error'
        : status === 429
          ? 'rate_limit_error'
          : status >= 500
            ? 'server_error'
            : 'invalid_request_error',
  });
  expect(schemaErrors('/components/schemas/ChatCompletionProblem', answer.body)).toEqual([]);
}

describe.each(databaseKinds)('POST /v1/embeddings on %s', (kind) => {
  let server: TestServer;
  let openai: FakeProvider;

  beforeAll(async () => {
    openai = await startFakeOpenAi();
    server = await startTestServer({
      database: kind,
      env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: openai.url, PROVIDER_MAX_RETRIES: '0' },
    });
  });
  afterAll(async () => {
    await server?.close();
    await openai?.close();
  });

  const embeddings = (body: Record<string, unknown>, key?: string) =>
    server.call('POST', '/v1/embeddings', { body, ...(key ? { key } : {}) });

  test('a string: one embedding of the built-in model, 256 floats of length 1, free', async () => {
    const answer = await embeddings({ model: 'sandbox-embedding', input: 'How long do refunds take?' });
    expect(answer.status, answer.text).toBe(200);
    expect(schemaErrors('/components/schemas/EmbeddingList', answer.body)).toEqual([]);
    const tokens = countTokens('How long do refunds take?');
    expect(answer.body).toMatchObject({
      object: 'list',
      model: 'sandbox-embedding',
      usage: { prompt_tokens: tokens, total_tokens: tokens },
      cost_usd: 0,
    });
    expect(answer.body.data).toHaveLength(1);
    expect(answer.body.data[0]).toMatchObject({ object: 'embedding', index: 0 });
    expect(answer.body.data[0].embedding).toEqual(float32(sandboxEmbedding('How long do refunds take?')));
  });

  test('an array, both encodings: the base64 decoded as little-endian float32 is the float answer; dimensions', async () => {
    const input = [
      'Refunds are paid within 14 days.',
      'Orders ship within two working days.',
      'Refunds are paid within 14 days.',
    ];
    const floats = await embeddings({ model: 'sandbox-embedding', input, dimensions: 48, encoding_format: 'float' });
    const base64 = await embeddings({ model: 'sandbox-embedding', input, dimensions: 48, encoding_format: 'base64' });
    expect(base64.status, base64.text).toBe(200);
    expect(schemaErrors('/components/schemas/EmbeddingList', base64.body)).toEqual([]);
    expect(floats.body.data.map((item: { index: number }) => item.index)).toEqual([0, 1, 2]);
    for (const [i, item] of base64.body.data.entries()) {
      expect(typeof item.embedding).toBe('string');
      expect(decodeBase64(item.embedding)).toEqual(floats.body.data[i].embedding);
      expect(floats.body.data[i].embedding).toHaveLength(48);
    }
    expect(floats.body.data[0].embedding).toEqual(floats.body.data[2].embedding);
    expect(floats.body.usage).toEqual(base64.body.usage);
  });

  test('a provider model: OpenAI through the engine, dimensions passed through, priced', async () => {
    const answer = await embeddings({
      model: 'text-embedding-3-small',
      input: ['refund policy', 'shipping'],
      dimensions: 16,
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.data.map((item: { embedding: number[] }) => item.embedding)).toEqual([
      float32(fakeEmbedding('refund policy', 16)),
      float32(fakeEmbedding('shipping', 16)),
    ]);
    expect(openai.requests.at(-1)!.body).toMatchObject({ model: 'text-embedding-3-small', dimensions: 16 });
    expect(answer.body.usage.prompt_tokens).toBe(3);
    expect(answer.body.cost_usd).toBeCloseTo(0.00000006, 12);
  });

  test('errors in OpenAI’s shape: chat model, too many inputs, empty string, a token id out of range, unknown and unavailable models, dimensions, too long', async () => {
    expectOpenAiError(await embeddings({ model: 'sandbox-writer', input: 'x' }), 422, 'validation_failed', 'model');
    expectOpenAiError(
      await embeddings({ model: 'sandbox-embedding', input: Array.from({ length: 2049 }, () => 'x') }),
      422,
      'validation_failed',
      'input',
    );
    expectOpenAiError(await embeddings({ model: 'sandbox-embedding', input: '' }), 422, 'validation_failed', 'input');
    expectOpenAiError(
      await embeddings({ model: 'sandbox-embedding', input: ['fine', ''] }),
      422,
      'validation_failed',
      'input[1]',
    );
    expectOpenAiError(await embeddings({ model: 'sandbox-embedding', input: [] }), 422, 'validation_failed', 'input');
    expectOpenAiError(
      await embeddings({ model: 'sandbox-embedding', input: [1212, 100_256] }),
      422,
      'validation_failed',
      'input[1]',
    );
    expectOpenAiError(
      await embeddings({ model: 'sandbox-embedding', input: 'x', encoding_format: 'int8' }),
      422,
      'validation_failed',
      'encoding_format',
    );
    expectOpenAiError(await embeddings({ model: 'text-embedding-4', input: 'x' }), 404, 'model_not_found', 'model');
    const unavailable = await embeddings({ model: 'mistral-embed', input: 'x' });
    expectOpenAiError(unavailable, 422, 'model_unavailable', 'model');
    expect(unavailable.body.detail).toContain('MISTRAL_API_KEY');
    expectOpenAiError(
      await embeddings({ model: 'sandbox-embedding', input: 'x', dimensions: 5000 }),
      422,
      'validation_failed',
      'dimensions',
    );
    expectOpenAiError(
      await embeddings({ model: 'text-embedding-ada-002', input: 'x', dimensions: 512 }),
      422,
      'validation_failed',
      'dimensions',
    );
    const long = await embeddings({ model: 'sandbox-embedding', input: ['ok', 'word '.repeat(9000)] });
    expectOpenAiError(long, 422, 'validation_failed', 'input[1]');
    expect(long.body.errors[0].detail).toMatch(/tokens; sandbox-embedding takes at most 8192 tokens an input$/);
    const single = await embeddings({ model: 'sandbox-embedding', input: 'word '.repeat(9000) });
    expectOpenAiError(single, 422, 'validation_failed', 'input');
    // 300,000 tokens in all at most: 40 inputs of about 8,000 tokens each.
    const total = await embeddings({
      model: 'sandbox-embedding',
      input: Array.from({ length: 40 }, () => 'word '.repeat(7900)),
    });
    expectOpenAiError(total, 422, 'validation_failed', 'input');
    expect(total.body.errors[0].detail).toMatch(/tokens in all; at most 300000 tokens a request$/);
    // One unbroken word of CJK text (a single piece of the encoding) is counted in slices: its count is right.
    const word = await embeddings({ model: 'sandbox-embedding', input: ['x', '漢'.repeat(25_000)] });
    expectOpenAiError(word, 422, 'validation_failed', 'input[1]');
    expect(word.body.errors[0].detail).toBe('is 25000 tokens; sandbox-embedding takes at most 8192 tokens an input');
  });

  test('an embedding model given to chat completions is refused, naming the capability', async () => {
    const answer = await server.call('POST', '/v1/chat/completions', {
      body: { model: 'sandbox-embedding', messages: [{ role: 'user', content: 'hi' }] },
    });
    expectOpenAiError(answer, 422, 'validation_failed', 'model');
    expect(answer.body.errors[0].detail).toBe(
      'sandbox-embedding has no chat capability (it is an embedding model); GET /v1/models?capability=chat lists the chat models',
    );
  });

  test('a provider’s failure is our problem; the role is chat completions’ (editor)', async () => {
    openai.enqueueEmbeddings({ error: { status: 429, headers: { 'retry-after': '12' } } });
    const limited = await embeddings({ model: 'text-embedding-3-large', input: 'x' });
    expectOpenAiError(limited, 429, 'upstream_rate_limited', null);
    expect(limited.headers.get('retry-after')).toBe('12');
    openai.enqueueEmbeddings({ error: { status: 500 } });
    expectOpenAiError(
      await embeddings({ model: 'text-embedding-3-large', input: 'x' }),
      503,
      'upstream_unavailable',
      null,
    );

    const viewer = await server.createKey('viewer');
    expectOpenAiError(
      await embeddings({ model: 'sandbox-embedding', input: 'x' }, viewer.secret),
      403,
      'insufficient_role',
      null,
    );
    const editor = await server.createKey('editor');
    expect((await embeddings({ model: 'sandbox-embedding', input: 'x' }, editor.secret)).status).toBe(200);
  });

  test('GET /v1/models lists the embedding models with their dimensions; each request is a usage row of feature embeddings', async () => {
    const models = await server.call('GET', '/v1/models?capability=embeddings');
    expect(models.status).toBe(200);
    const byId = new Map(models.body.data.map((model: { id: string }) => [model.id, model]));
    expect(byId.get('sandbox-embedding')).toMatchObject({
      available: true,
      capabilities: ['embeddings'],
      dimensions: 256,
      dimensions_range: { min: 1, max: 4096 },
      max_output_tokens: 0,
    });
    expect(byId.get('text-embedding-3-small')).toMatchObject({ available: true, dimensions: 1536 });
    expect(byId.get('mistral-embed')).toMatchObject({ available: false, dimensions_range: null });
    expect(models.body.data.every((model: { capabilities: string[] }) => !model.capabilities.includes('chat'))).toBe(
      true,
    );

    const key = await server.createKey('admin');
    await embeddings({ model: 'sandbox-embedding', input: ['one', 'two'] }, key.secret);
    await embeddings({ model: 'sandbox-embedding', input: 'three four' }, key.secret);
    const usage = await server.call('GET', `/v1/usage?group_by=feature&group_by=model&api_key_id=${key.id}`, {
      key: key.secret,
    });
    expect(usage.status, usage.text).toBe(200);
    expect(usage.body.data).toEqual([
      expect.objectContaining({
        feature: 'embeddings',
        model: 'sandbox-embedding',
        requests: 2,
        input_tokens: countTokens('one') + countTokens('two') + countTokens('three four'),
        output_tokens: 0,
        cost_usd: 0,
      }),
    ]);
    const all = await server.call('GET', '/v1/usage?group_by=feature&feature=embeddings');
    expect(all.body.data[0].requests).toBeGreaterThanOrEqual(5);
  });
});

describe('clients unmodified against POST /v1/embeddings', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  test('openai: embeddings.create (base64 asked for and decoded by the SDK), with dimensions; its errors are its own', async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.ownerKey, maxRetries: 0 });
    const result = await client.embeddings.create({
      model: 'sandbox-embedding',
      input: ['Refunds within 14 days', 'Free shipping'],
      dimensions: 64,
    });
    expect(result.object).toBe('list');
    expect(result.model).toBe('sandbox-embedding');
    expect(result.data.map((item) => item.embedding)).toEqual([
      float32(sandboxEmbedding('Refunds within 14 days', 64)),
      float32(sandboxEmbedding('Free shipping', 64)),
    ]);
    expect(result.usage.prompt_tokens).toBe(countTokens('Refunds within 14 days') + countTokens('Free shipping'));
    const floats = await client.embeddings.create({
      model: 'sandbox-embedding',
      input: 'Free shipping',
      encoding_format: 'float',
    });
    expect(floats.data[0]!.embedding).toEqual(float32(sandboxEmbedding('Free shipping')));

    const error = await client.embeddings
      .create({ model: 'gpt-4o-mini', input: 'x' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect((error as InstanceType<typeof OpenAI.UnprocessableEntityError>).param).toBe('model');
    expect(
      await client.embeddings.create({ model: 'no-such-embedding', input: 'x' }).catch((caught: unknown) => caught),
    ).toBeInstanceOf(OpenAI.NotFoundError);
  });

  test('AI SDK: embed and embedMany with createOpenAI pointed at our /v1', async () => {
    const provider = createOpenAI({ baseURL: `${server.url}/v1`, apiKey: server.ownerKey });
    const model = provider.embedding('sandbox-embedding');
    const one = await embed({ model, value: 'How long do refunds take?', maxRetries: 0 });
    expect(one.embedding).toEqual(float32(sandboxEmbedding('How long do refunds take?')));
    expect(one.usage.tokens).toBe(countTokens('How long do refunds take?'));
    const many = await embedMany({
      model,
      values: ['one', 'two', 'three'],
      maxRetries: 0,
      providerOptions: { openai: { dimensions: 32 } },
    });
    expect(many.embeddings).toEqual(['one', 'two', 'three'].map((text) => float32(sandboxEmbedding(text, 32))));
  });
});

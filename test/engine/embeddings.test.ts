// The engine's embeddings: the built-in sandbox-embedding model's properties (deterministic, unit length, the
// documented algorithm, near for a paraphrase sharing words, far for an unrelated text, `dimensions`), and the real
// provider packages (@ai-sdk/openai, @ai-sdk/google) in front of fake upstreams on loopback that speak their wire
// formats: vectors, dimensions passed through, batches of the provider's size, usage rows, retries, and a provider's
// failures as our problems.
import { embedMany } from 'ai';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { EmbeddingRequest } from '../../src/features/engine/embeddings.ts';
import type { Engine } from '../../src/features/engine/engine.ts';
import { fnv1a, sandboxEmbedding, sandboxFeatures } from '../../src/features/engine/providers/sandbox/embedding.ts';
import { sandboxEmbeddingModel } from '../../src/features/engine/providers/sandbox/embedding-model.ts';
import { countTokens } from '../../src/features/engine/tokens.ts';
import { Problem } from '../../src/platform/problems.ts';
import { type FakeProvider, fakeEmbedding, startFakeGoogle, startFakeOpenAi } from '../support/fake-providers.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const dot = (a: number[], b: number[]) => a.reduce((sum, value, i) => sum + value * b[i]!, 0);
const norm = (a: number[]) => Math.sqrt(dot(a, a));

describe('the built-in sandbox-embedding model', () => {
  test('features: NFKC, lower case, each word and its space-padded trigrams', () => {
    expect(sandboxFeatures('Café, ﬁne!')).toEqual([
      'w:café',
      'g: ca',
      'g:caf',
      'g:afé',
      'g:fé ',
      'w:fine',
      'g: fi',
      'g:fin',
      'g:ine',
      'g:ne ',
    ]);
    expect(sandboxFeatures('a')).toEqual(['w:a', 'g: a ']);
    // A text without letters or digits is one word, itself; white space alone has no feature.
    expect(sandboxFeatures(' ?! ')).toEqual(['w:?!', 'g: ?!', 'g:?! ']);
    expect(sandboxFeatures('   ')).toEqual([]);
  });

  test('FNV-1a 32-bit over UTF-8, the published test vectors', () => {
    expect(fnv1a('')).toBe(0x811c9dc5);
    expect(fnv1a('a')).toBe(0xe40c292c);
    expect(fnv1a('foobar')).toBe(0xbf9cf968);
  });

  test('the vector is the signed bucket counts of the features, L2-normalised', () => {
    const dimensions = 64;
    const expected = new Array<number>(dimensions).fill(0);
    for (const feature of sandboxFeatures('Refunds are paid')) {
      const hash = fnv1a(feature);
      expected[hash % dimensions]! += hash >= 2 ** 31 ? -1 : 1;
    }
    const length = norm(expected);
    const vector = sandboxEmbedding('Refunds are paid', dimensions);
    vector.forEach((value, i) => {
      expect(value).toBeCloseTo(expected[i]! / length, 12);
    });
    expect(norm(vector)).toBeCloseTo(1, 12);
    expect(sandboxEmbedding('   ', 8)).toEqual(new Array(8).fill(0));
  });

  test('deterministic; a paraphrase sharing words is nearer than an unrelated text, and a typo is near', () => {
    const text = 'Refunds are paid to the original payment method within 14 days.';
    expect(sandboxEmbedding(text)).toEqual(sandboxEmbedding(text));
    expect(sandboxEmbedding(text)).toHaveLength(256);
    const paraphrase = 'We pay refunds to your original payment method in 14 days.';
    const unrelated = 'Keep coffee in an airtight container away from light and heat.';
    const typo = 'refnds paymnt';
    const base = sandboxEmbedding(text);
    expect(dot(base, sandboxEmbedding(paraphrase))).toBeGreaterThan(0.5);
    expect(dot(base, sandboxEmbedding(paraphrase))).toBeGreaterThan(dot(base, sandboxEmbedding(unrelated)) + 0.3);
    expect(dot(sandboxEmbedding('refunds payment'), sandboxEmbedding(typo))).toBeGreaterThan(
      dot(sandboxEmbedding('refunds payment'), sandboxEmbedding('shipping times')),
    );
    // Case and Unicode forms do not matter.
    expect(sandboxEmbedding('ＲＥＦＵＮＤＳ')).toEqual(sandboxEmbedding('refunds'));
  });

  test('an AI SDK EmbeddingModelV4: embedMany calls it, with dimensions and usage', async () => {
    const model = sandboxEmbeddingModel('sandbox-embedding');
    const result = await embedMany({ model, values: ['one two', 'three'], providerOptions: {} });
    expect(result.embeddings).toEqual([sandboxEmbedding('one two'), sandboxEmbedding('three')]);
    expect(result.usage.tokens).toBe(3);
    const short = await model.doEmbed({ values: ['one'], dimensions: 3 });
    expect(short.embeddings[0]).toHaveLength(3);
    await expect(model.doEmbed({ values: ['one'], dimensions: 4097 })).rejects.toThrow(
      /dimensions must be an integer from 1 to 4096/,
    );
  });
});

describe('engine.embed', () => {
  let openai: FakeProvider;
  let google: FakeProvider;
  let server: TestServer;
  let engine: Engine;
  const request = (overrides: Partial<EmbeddingRequest>): EmbeddingRequest => ({
    workspaceId: server.workspaceId,
    apiKeyId: server.ownerKeyId,
    feature: 'embeddings',
    model: 'sandbox-embedding',
    inputs: ['hello'],
    signal: new AbortController().signal,
    now: new Date(),
    ...overrides,
  });
  const rowsOf = (model: string) =>
    server.platform.db.selectFrom('usage_records').selectAll().where('model', '=', model).orderBy('id').execute();

  beforeAll(async () => {
    [openai, google] = await Promise.all([startFakeOpenAi(), startFakeGoogle()]);
    server = await startTestServer({
      env: {
        OPENAI_API_KEY: 'sk-test',
        OPENAI_BASE_URL: openai.url,
        GOOGLE_GENERATIVE_AI_API_KEY: 'g-test',
        GOOGLE_BASE_URL: google.url,
        PROVIDER_MAX_RETRIES: '1',
      },
    });
    engine = server.platform.services.engine;
  });
  afterAll(async () => {
    await server?.close();
    await Promise.all([openai?.close(), google?.close()]);
  });

  test('the built-in model: vectors, tokens counted, free, one usage row', async () => {
    const result = await engine.embed(
      request({ inputs: ['Refunds take 14 days.', 'Shipping is free.'], dimensions: 32 }),
    );
    expect(result.vectors).toEqual([
      sandboxEmbedding('Refunds take 14 days.', 32),
      sandboxEmbedding('Shipping is free.', 32),
    ]);
    expect(result.tokens).toBeGreaterThan(0);
    expect(result.costUsd).toBe(0);
    const rows = await rowsOf('sandbox-embedding');
    expect(rows.at(-1)).toMatchObject({
      feature: 'embeddings',
      api_key_id: server.ownerKeyId,
      input_tokens: result.tokens,
      output_tokens: 0,
      cached_input_tokens: 0,
    });
    expect(Number(rows.at(-1)!.cost_usd)).toBe(0);
  });

  test('OpenAI through @ai-sdk/openai: its vectors, dimensions passed through, its usage priced', async () => {
    const before = openai.requests.length;
    const result = await engine.embed(
      request({ model: 'text-embedding-3-small', inputs: ['refunds policy', 'shipping'], dimensions: 64 }),
    );
    const sent = openai.requests.slice(before);
    expect(sent.map((r) => r.path)).toEqual(['/v1/embeddings']);
    expect(sent[0]!.body).toMatchObject({
      model: 'text-embedding-3-small',
      input: ['refunds policy', 'shipping'],
      dimensions: 64,
      encoding_format: 'float',
    });
    expect(sent[0]!.headers.authorization).toBe('Bearer sk-test');
    expect(result.vectors).toEqual([fakeEmbedding('refunds policy', 64), fakeEmbedding('shipping', 64)]);
    // The fake counts a token a word; the price is the catalogue's $0.02 a million.
    expect(result.tokens).toBe(3);
    expect(result.costUsd).toBeCloseTo((3 * 0.02) / 1e6, 15);
    expect((await rowsOf('text-embedding-3-small')).at(-1)).toMatchObject({ feature: 'embeddings', input_tokens: 3 });
  });

  test('Google through @ai-sdk/google: one input (embedContent), many (batchEmbedContents, 100 a call), tokens counted here', async () => {
    const before = google.requests.length;
    const one = await engine.embed(request({ model: 'gemini-embedding-001', inputs: ['refunds'], dimensions: 256 }));
    expect(one.vectors).toEqual([fakeEmbedding('refunds', 256)]);
    const inputs = Array.from({ length: 150 }, (_, i) => `passage number ${i}`);
    const many = await engine.embed(request({ model: 'gemini-embedding-001', inputs }));
    const sent = google.requests.slice(before);
    expect(sent.map((r) => r.path)).toEqual([
      '/v1beta/models/gemini-embedding-001:embedContent',
      '/v1beta/models/gemini-embedding-001:batchEmbedContents',
      '/v1beta/models/gemini-embedding-001:batchEmbedContents',
    ]);
    expect(sent[0]!.body).toMatchObject({ outputDimensionality: 256 });
    expect(sent[1]!.body.requests).toHaveLength(100);
    expect(sent[2]!.body.requests).toHaveLength(50);
    expect(many.vectors).toHaveLength(150);
    expect(many.vectors[149]).toEqual(fakeEmbedding('passage number 149', 3072));
    // Google reports no usage: the engine counts with o200k_base.
    const counted = inputs.reduce((sum, input) => sum + countTokens(input), 0);
    expect(many.tokens).toBe(counted);
    expect(many.costUsd).toBeCloseTo((counted * 0.15) / 1e6, 15);
  });

  test('refused before any call: an unknown model, a chat model, an unavailable provider, dimensions, an input too long', async () => {
    const refused = async (overrides: Partial<EmbeddingRequest>) => {
      const error = await engine.embed(request(overrides)).then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(Problem);
      return error as Problem;
    };
    const before = openai.requests.length;
    expect((await refused({ model: 'text-embedding-9' })).code).toBe('model_not_found');
    const chat = await refused({ model: 'gpt-4o-mini' });
    expect(chat.code).toBe('validation_failed');
    expect(chat.errors).toEqual([
      {
        pointer: '/model',
        detail:
          'gpt-4o-mini has no embeddings capability (it is a chat model); GET /v1/models?capability=embeddings lists the embedding models',
      },
    ]);
    expect((await refused({ model: 'mistral-embed' })).code).toBe('model_unavailable');
    expect((await refused({ model: 'text-embedding-ada-002', dimensions: 512 })).errors).toEqual([
      { pointer: '/dimensions', detail: 'text-embedding-ada-002 always answers 1536 dimensions; leave dimensions out' },
    ]);
    expect((await refused({ model: 'text-embedding-3-small', dimensions: 2000 })).errors).toEqual([
      { pointer: '/dimensions', detail: 'must be from 1 to 1536 for text-embedding-3-small' },
    ]);
    expect((await refused({ model: 'gemini-embedding-001', dimensions: 64 })).errors?.[0]?.pointer).toBe('/dimensions');
    const text = 'word '.repeat(9000);
    const long = await refused({ model: 'text-embedding-3-small', inputs: ['short', text] });
    expect(long.errors).toEqual([
      {
        pointer: '/input/1',
        detail: `is ${countTokens(text)} tokens; text-embedding-3-small takes at most 8192 tokens an input`,
      },
    ]);
    // An embedding model is no chat model either.
    expect(() => engine.model('text-embedding-3-small')).toThrow(Problem);
    expect(openai.requests.length).toBe(before);
  });

  test('a provider failure: retried when retryable, then our problem; nothing is billed for a refused call', async () => {
    const rows = (await rowsOf('text-embedding-3-large')).length;
    openai.enqueueEmbeddings({ error: { status: 503, headers: { 'retry-after': '0' } } });
    const retried = await engine.embed(request({ model: 'text-embedding-3-large', inputs: ['again'] }));
    expect(retried.vectors).toHaveLength(1);

    openai.enqueueEmbeddings(
      { error: { status: 429, headers: { 'retry-after': '0' } } },
      { error: { status: 429, headers: { 'retry-after': '7' } } },
    );
    const limited = await engine
      .embed(request({ model: 'text-embedding-3-large', inputs: ['x'] }))
      .catch((error: unknown) => error as Problem);
    expect(limited).toMatchObject({ code: 'upstream_rate_limited', status: 429 });
    expect((limited as Problem).headers).toEqual({ 'Retry-After': '7' });

    openai.enqueueEmbeddings({ error: { status: 401 } });
    expect(
      await engine
        .embed(request({ model: 'text-embedding-3-large', inputs: ['x'] }))
        .catch((error: unknown) => (error as Problem).code),
    ).toBe('upstream_error');
    // The call that succeeded after its retry is the one row.
    expect((await rowsOf('text-embedding-3-large')).length).toBe(rows + 1);
  });

  test('the AI SDK embedMany on the engine’s own provider model is what the engine answers', async () => {
    const { createOpenAI } = await import('@ai-sdk/openai');
    const direct = await embedMany({
      model: createOpenAI({ apiKey: 'sk-test', baseURL: openai.url }).embedding('text-embedding-3-small'),
      values: ['same text'],
      maxRetries: 0,
    });
    const viaEngine = await engine.embed(request({ model: 'text-embedding-3-small', inputs: ['same text'] }));
    expect(viaEngine.vectors).toEqual(direct.embeddings);
  });
});

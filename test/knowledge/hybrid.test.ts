// Hybrid search through the engine: with OpenAI configured (a fake OpenAI upstream on loopback, whose embeddings are
// letter trigrams) a new knowledge base embeds with text-embedding-3-small; on a fresh server with no key at all, with
// the built-in sandbox-embedding. Either way chunks get their vectors when a source is processed, a search embeds the
// query and fuses both rankings, so a query with typos that full-text search cannot match still finds its passage; the
// embeddings are reported as usage and recorded in GET /v1/usage with the feature `embeddings`. Recall@5 on the help
// centre of knowledge.test.ts stays at 0.9 or better.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually, expectProblem } from '../support/expect.ts';
import { type FakeProvider, startFakeOpenAi } from '../support/fake-providers.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { schemaErrors } from '../support/spec.ts';

const ARTICLES: Record<string, string> = {
  Refunds:
    'Refunds are paid to the original payment method within 14 days of receiving the returned beans. Opened bags can be refunded if the roast was faulty.',
  Shipping:
    'Orders ship within two working days from our roastery in Lisbon. Delivery inside the EU takes three to five days; tracking numbers arrive by email.',
  Subscriptions:
    'A subscription sends fresh coffee every two or four weeks. Pause, skip a delivery or cancel at any time from your account page before the next roast date.',
  Storage:
    'Keep coffee in an airtight container away from light, heat and moisture. Do not store beans in the fridge; condensation ruins the aroma.',
  'Gift cards':
    'Gift cards are delivered by email, never expire and can be spent on any coffee, equipment or subscription.',
};
const ARTICLES_COUNT = Object.keys(ARTICLES).length;
const QUESTIONS: Array<[string, string]> = [
  ['How long until I get my money back?', 'Refunds'],
  ['When will my order be delivered?', 'Shipping'],
  ['Can I pause my subscription?', 'Subscriptions'],
  ['Should I keep coffee in the fridge?', 'Storage'],
  ['Does a gift card expire?', 'Gift cards'],
];

describe.each(databaseKinds)('hybrid knowledge search on %s', (kind) => {
  let server: TestServer;
  let openai: FakeProvider;
  let base: string;

  beforeAll(async () => {
    openai = await startFakeOpenAi();
    server = await startTestServer({
      database: kind,
      env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: openai.url, PROVIDER_MAX_RETRIES: '0' },
    });
    base = (await server.call('POST', '/v1/knowledge-bases', { body: { name: 'Help centre' } })).body.id;
    for (const [title, content] of Object.entries(ARTICLES)) {
      const source = await server.call('POST', `/v1/knowledge-bases/${base}/sources`, {
        body: { type: 'text', title, content },
      });
      await eventually(
        () => server.call('GET', `/v1/knowledge-bases/${base}/sources/${source.body.id}`),
        (got) => got.body.status === 'ready',
        20_000,
      );
    }
  });
  afterAll(async () => {
    await server?.close();
    await openai?.close();
  });

  test('a new knowledge base embeds with text-embedding-3-small when OpenAI is configured', async () => {
    expect((await server.call('GET', `/v1/knowledge-bases/${base}`)).body.embedding_model).toBe(
      'text-embedding-3-small',
    );
  });

  test('chunks are embedded when processed; a search embeds its query and reports the usage', async () => {
    const embedded = await server.platform.db
      .selectFrom('knowledge_chunks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('knowledge_base_id', '=', base)
      .where('embedding', 'is not', null)
      .executeTakeFirstOrThrow();
    expect(Number(embedded.n)).toBe(5);
    expect(openai.requests.filter((request) => request.path === '/v1/embeddings').length).toBeGreaterThanOrEqual(5);

    let found = 0;
    for (const [question, expected] of QUESTIONS) {
      const result = await server.call('POST', `/v1/knowledge-bases/${base}/search`, {
        body: { query: question, top_k: 5 },
      });
      expect(result.status, result.text).toBe(200);
      expect(schemaErrors('/components/schemas/KnowledgeBaseSearchResult', result.body)).toEqual([]);
      expect(result.body.usage.embedding_tokens).toBeGreaterThan(0);
      expect(result.body.usage.cost_usd).toBeGreaterThan(0);
      if (result.body.data.slice(0, 5).some((hit: { title: string }) => hit.title === expected)) found++;
    }
    console.log(`hybrid recall@5 on ${kind}: ${found / QUESTIONS.length}`);
    expect(found / QUESTIONS.length).toBeGreaterThanOrEqual(0.9);

    // The chunks' and the queries' embeddings are billed like any model call, with the feature `embeddings`.
    const usage = await server.call('GET', '/v1/usage?group_by=feature&group_by=model');
    expect(usage.status, usage.text).toBe(200);
    const bucket = usage.body.data.find((b: { feature: string }) => b.feature === 'embeddings');
    expect(bucket).toMatchObject({ model: 'text-embedding-3-small', output_tokens: 0 });
    expect(bucket.requests).toBeGreaterThanOrEqual(ARTICLES_COUNT + QUESTIONS.length);
    expect(bucket.cost_usd).toBeGreaterThan(0);
  });

  test('a query with typos that full-text search cannot match finds its passage by its vector', async () => {
    const result = await server.call('POST', `/v1/knowledge-bases/${base}/search`, {
      body: { query: 'refnds pament', top_k: 3 },
    });
    expect(result.status, result.text).toBe(200);
    expect(result.body.data[0].title).toBe('Refunds');
    expect(result.body.data[0].score).toBeGreaterThan(0);
    // Full-text alone finds nothing for it.
    const { searchChunks } = await import('../../src/features/knowledge/search.ts');
    expect(await searchChunks(server.platform.db, base, 'refnds pament', { topK: 3, minScore: 0 })).toEqual([]);
  });
});

describe.each(databaseKinds)('hybrid knowledge search on a fresh server without any key, on %s', (kind) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ database: kind });
  });
  afterAll(async () => {
    await server?.close();
  });

  test('the built-in sandbox-embedding is the default; its vectors find a passage full-text search cannot', async () => {
    const created = await server.call('POST', '/v1/knowledge-bases', { body: { name: 'Help centre' } });
    expect(created.status, created.text).toBe(201);
    expect(created.body.embedding_model).toBe('sandbox-embedding');
    const base = created.body.id as string;
    for (const [title, content] of Object.entries(ARTICLES)) {
      const source = await server.call('POST', `/v1/knowledge-bases/${base}/sources`, {
        body: { type: 'text', title, content },
      });
      await eventually(
        () => server.call('GET', `/v1/knowledge-bases/${base}/sources/${source.body.id}`),
        (got) => got.body.status === 'ready',
        20_000,
      );
    }
    const embedded = await server.platform.db
      .selectFrom('knowledge_chunks')
      .select('embedding')
      .where('knowledge_base_id', '=', base)
      .execute();
    expect(embedded.length).toBe(ARTICLES_COUNT);
    // 256 float32 values each, the built-in model's default length.
    for (const row of embedded) expect(row.embedding?.byteLength).toBe(256 * 4);

    const result = await server.call('POST', `/v1/knowledge-bases/${base}/search`, {
      body: { query: 'refnds pament', top_k: 3 },
    });
    expect(result.status, result.text).toBe(200);
    expect(schemaErrors('/components/schemas/KnowledgeBaseSearchResult', result.body)).toEqual([]);
    expect(result.body.embedding_model).toBe('sandbox-embedding');
    expect(result.body.data[0].title).toBe('Refunds');
    // Full-text alone finds nothing for it: the score is the vectors' part alone.
    const { searchChunks } = await import('../../src/features/knowledge/search.ts');
    expect(await searchChunks(server.platform.db, base, 'refnds pament', { topK: 3, minScore: 0 })).toEqual([]);
    expect(result.body.data[0].score).toBeGreaterThan(0);
    expect(result.body.data[0].score).toBeLessThanOrEqual(0.5);
    expect(result.body.usage.embedding_tokens).toBeGreaterThan(0);
    expect(result.body.usage.cost_usd).toBe(0);

    let found = 0;
    for (const [question, expected] of QUESTIONS) {
      const answer = await server.call('POST', `/v1/knowledge-bases/${base}/search`, {
        body: { query: question, top_k: 5 },
      });
      if (answer.body.data.some((hit: { title: string }) => hit.title === expected)) found++;
    }
    expect(found / QUESTIONS.length).toBeGreaterThanOrEqual(0.9);

    // Recorded like the rest: the chunks (one call a source) and the searches, at 0.
    const usage = await server.call('GET', '/v1/usage?group_by=feature&group_by=model');
    const bucket = usage.body.data.find((b: { feature: string }) => b.feature === 'embeddings');
    expect(bucket).toMatchObject({
      model: 'sandbox-embedding',
      requests: ARTICLES_COUNT + 1 + QUESTIONS.length,
      output_tokens: 0,
      cost_usd: 0,
    });
    expect(bucket.input_tokens).toBeGreaterThan(0);
  });

  test('an embedding model whose provider is not configured, or that no provider serves, is refused at creation', async () => {
    const openai = await server.call('POST', '/v1/knowledge-bases', {
      body: { name: 'x', embedding_model: 'text-embedding-3-small' },
    });
    expectProblem(openai, 422, 'model_unavailable');
    expect(openai.body.errors).toEqual([
      { pointer: '/embedding_model', detail: 'its provider openai is not configured on this server' },
    ]);
    expect(openai.body.detail).toContain('OPENAI_API_KEY');
    const cohere = await server.call('POST', '/v1/knowledge-bases', {
      body: { name: 'x', embedding_model: 'embed-multilingual-v3.0' },
    });
    expectProblem(cohere, 422, 'model_unavailable');
    expect(cohere.body.errors[0].pointer).toBe('/embedding_model');
    const chosen = await server.call('POST', '/v1/knowledge-bases', {
      body: { name: 'x', embedding_model: 'sandbox-embedding' },
    });
    expect(chosen.status).toBe(201);
  });
});

// The committed model catalogue (src/features/engine/models.json) against its rules: at least 65 language models of at
// least five providers besides the sandbox, the embedding models with their vector lengths, valid and unique ids, the key order, coherent limits, capabilities, dates and
// order, prices that are genai-prices' own (computed here by genai-prices' arithmetic, not the script's), and exactly
// what `npm run catalogue` builds: a stale file, or a price that changed in the price data, fails here.
import { readFileSync } from 'node:fs';
import { calcPrice, findProvider } from '@pydantic/genai-prices';
import { describe, expect, test } from 'vitest';
import {
  buildCatalogue,
  CAPABILITY_ORDER,
  catalogueText,
  compareEntries,
  EMBEDDING_MODELS,
  ID_PATTERN,
  type Listed,
  MODELS,
  OUTPUT,
  PRICES_AS_OF,
  PROVIDER_ORDER,
  prefixedId,
} from '../../scripts/build-model-catalogue.ts';
import type { CatalogueEntry } from '../../src/features/engine/catalogue-entry.ts';
import { schemaErrors } from '../support/spec.ts';

const text = readFileSync(OUTPUT, 'utf8');
const committed = JSON.parse(text) as CatalogueEntry[];
const real = committed.filter((model) => model.provider !== 'sandbox');
const isEmbedding = (model: CatalogueEntry) => model.capabilities.includes('embeddings');
const realLanguage = real.filter((model) => !isEmbedding(model));
const listedOf = (model: CatalogueEntry): Pick<Listed, 'upstream' | 'price_id'> =>
  (isEmbedding(model) ? EMBEDDING_MODELS : MODELS).find(
    (m) => m.provider === model.provider && m.upstream === model.upstream_id,
  )!;

const KEYS = [
  'id',
  'provider',
  'upstream_id',
  'owned_by',
  'name',
  'created',
  'context_window',
  'max_output_tokens',
  'capabilities',
  'pricing',
  'regions',
  'deprecated',
  'deprecation_date',
];
const EMBEDDING_KEYS = [...KEYS, 'dimensions', 'dimensions_range'];
const PRICE_KEYS = ['input_per_million_usd', 'cached_input_per_million_usd', 'output_per_million_usd'];

/** At most 6 decimals, and no float noise. */
const sixDecimals = (value: number) => Number(value.toFixed(6)) === value;

describe('the model catalogue', () => {
  test('is what npm run catalogue builds (rerun it and commit the file when this fails)', () => {
    expect(text).toBe(catalogueText());
    expect(text.endsWith('}\n]\n')).toBe(true);
    expect(text).toBe(`${JSON.stringify(committed, null, 2)}\n`);
    expect(catalogueText()).toBe(catalogueText());
  });

  test('has at least 65 language models of at least 5 providers besides the sandbox models', () => {
    expect(realLanguage.length).toBeGreaterThanOrEqual(65);
    const count = (provider: string) => realLanguage.filter((m) => m.provider === provider).length;
    expect(new Set(realLanguage.map((m) => m.provider)).size).toBeGreaterThanOrEqual(5);
    for (const provider of ['openai', 'anthropic', 'google', 'mistral'])
      expect(count(provider), provider).toBeGreaterThanOrEqual(8);
    for (const provider of ['groq', 'together', 'deepseek'])
      expect(count(provider), provider).toBeGreaterThanOrEqual(1);
    expect(realLanguage.length).toBe(MODELS.length);
    expect(real.length).toBe(MODELS.length + EMBEDDING_MODELS.length);
  });

  test('the embedding models: embeddings only, no output, their vector lengths and the lengths a request may ask for', () => {
    const embedding = committed.filter(isEmbedding);
    expect(embedding.map((m) => m.id)).toEqual([
      'sandbox-embedding',
      'text-embedding-3-large',
      'text-embedding-3-small',
      'text-embedding-ada-002',
      'gemini-embedding-001',
      'mistral-embed',
    ]);
    for (const model of embedding) {
      expect(model.capabilities, model.id).toEqual(['embeddings']);
      expect(model.max_output_tokens, model.id).toBe(0);
      expect(model.pricing.output_per_million_usd, model.id).toBe(0);
      expect(model.dimensions, model.id).toBeGreaterThan(0);
      if (model.dimensions_range)
        expect(
          model.dimensions_range.min <= model.dimensions! && model.dimensions! <= model.dimensions_range.max,
          model.id,
        ).toBe(true);
    }
    const shape = (id: string) => {
      const { dimensions, dimensions_range, context_window } = committed.find((m) => m.id === id)!;
      return { dimensions, dimensions_range, context_window };
    };
    expect(shape('text-embedding-3-small')).toEqual({
      dimensions: 1536,
      dimensions_range: { min: 1, max: 1536 },
      context_window: 8192,
    });
    expect(shape('text-embedding-3-large')).toEqual({
      dimensions: 3072,
      dimensions_range: { min: 1, max: 3072 },
      context_window: 8192,
    });
    expect(shape('text-embedding-ada-002')).toEqual({ dimensions: 1536, dimensions_range: null, context_window: 8192 });
    expect(shape('mistral-embed')).toEqual({ dimensions: 1024, dimensions_range: null, context_window: 8192 });
    expect(shape('sandbox-embedding')).toEqual({
      dimensions: 256,
      dimensions_range: { min: 1, max: 4096 },
      context_window: 8192,
    });
    // No language model claims a vector length.
    for (const model of committed.filter((m) => !isEmbedding(m))) expect('dimensions' in model, model.id).toBe(false);
  });

  test('the sandbox models: two language models at their notional prices, and the free embedding model', () => {
    const sandbox = committed.filter((m) => m.provider === 'sandbox');
    const common = {
      provider: 'sandbox',
      owned_by: 'content-service',
      created: 1795132800,
      context_window: 128000,
      max_output_tokens: 16384,
      capabilities: ['chat', 'streaming', 'vision', 'tools', 'json_mode', 'json_schema', 'logprobs'],
      pricing: { input_per_million_usd: 0.1, cached_input_per_million_usd: null, output_per_million_usd: 0.4 },
      regions: ['eu', 'us'],
      deprecated: false,
      deprecation_date: null,
    };
    expect(sandbox).toEqual([
      { id: 'sandbox-writer', upstream_id: 'sandbox-writer', name: 'Sandbox writer', ...common },
      { id: 'sandbox-echo', upstream_id: 'sandbox-echo', name: 'Sandbox echo', ...common },
      {
        ...common,
        id: 'sandbox-embedding',
        upstream_id: 'sandbox-embedding',
        name: 'Sandbox embedding',
        context_window: 8192,
        max_output_tokens: 0,
        capabilities: ['embeddings'],
        pricing: { input_per_million_usd: 0, cached_input_per_million_usd: null, output_per_million_usd: 0 },
        dimensions: 256,
        dimensions_range: { min: 1, max: 4096 },
      },
    ]);
  });

  test('every entry has exactly the catalogue keys, in order, and is a valid Model of the contract', () => {
    for (const { upstream_id: _upstream, ...model } of committed) {
      expect(Object.keys({ upstream_id: _upstream, ...model }).sort(), model.id).toEqual(
        [...(isEmbedding(model as CatalogueEntry) ? EMBEDDING_KEYS : KEYS)].sort(),
      );
      expect(
        schemaErrors('/components/schemas/Model', { ...model, object: 'model', available: true }),
        model.id,
      ).toEqual([]);
    }
    for (const model of committed) {
      expect(Object.keys(model), model.id).toEqual(isEmbedding(model) ? EMBEDDING_KEYS : KEYS);
      expect(Object.keys(model.pricing), model.id).toEqual(PRICE_KEYS);
    }
  });

  test('ids are unique, valid, and the provider’s own id or <provider>:<upstream id>', () => {
    expect(new Set(committed.map((m) => m.id)).size).toBe(committed.length);
    const firstParty = new Set(
      real.filter((m) => !['groq', 'together', 'openrouter'].includes(m.provider)).map((m) => m.id),
    );
    for (const model of committed) {
      expect(model.id, model.id).toMatch(ID_PATTERN);
      expect(model.id.length, model.id).toBeLessThanOrEqual(100);
      expect(PROVIDER_ORDER, model.id).toContain(model.provider);
      expect(model.upstream_id.length, model.id).toBeGreaterThan(0);
      if (model.provider === 'sandbox') continue;
      if (['openai', 'anthropic', 'google', 'mistral', 'deepseek'].includes(model.provider))
        expect(model.id).toBe(model.upstream_id);
      else if (!ID_PATTERN.test(model.upstream_id))
        expect(model.id).toBe(prefixedId(model.provider, model.upstream_id));
      else
        expect(model.id).toBe(
          firstParty.has(model.upstream_id) ? `${model.provider}:${model.upstream_id}` : model.upstream_id,
        );
    }
    expect(committed.find((m) => m.upstream_id === 'meta-llama/Llama-3.3-70B-Instruct-Turbo')?.id).toBe(
      'together:meta-llama-llama-3.3-70b-instruct-turbo',
    );
    expect(committed.find((m) => m.upstream_id === 'llama-3.3-70b-versatile')?.id).toBe('llama-3.3-70b-versatile');
  });

  test('a host’s model whose id another provider has already is prefixed with the host', () => {
    const clash: Listed = {
      provider: 'groq',
      upstream: 'gpt-4o-mini',
      name: 'x',
      owned_by: 'openai',
      released: '2025-01-01',
      context: 1000,
      output: 100,
      can: [],
      price_id: 'llama-3.1-8b-instant',
    };
    const built = buildCatalogue([clash, ...MODELS.filter((m) => m.upstream === 'gpt-4o-mini')], []);
    expect(built.map((m) => m.id)).toEqual([
      'sandbox-writer',
      'sandbox-echo',
      'sandbox-embedding',
      'gpt-4o-mini',
      'groq:gpt-4o-mini',
    ]);
  });

  test('owned_by, name, regions and deprecation', () => {
    for (const model of committed) {
      expect(model.owned_by, model.id).toMatch(/^[a-z0-9][a-z0-9-]*$/);
      expect(model.name.trim().length, model.id).toBeGreaterThan(0);
      expect(model.regions, model.id).toEqual(['eu', 'us']);
      expect(model.deprecated, model.id).toBe(model.deprecation_date !== null);
      if (model.deprecation_date !== null) {
        expect(model.deprecation_date, model.id).toMatch(/^\d{4}-\d{2}-\d{2}$/);
        expect(new Date(`${model.deprecation_date}T00:00:00Z`).toISOString().slice(0, 10), model.id).toBe(
          model.deprecation_date,
        );
      }
    }
    expect(committed.filter((m) => m.deprecated).length).toBeLessThan(real.length / 2);
  });

  test('limits and release days are in range', () => {
    for (const model of committed) {
      for (const n of [model.created, model.context_window, ...(isEmbedding(model) ? [] : [model.max_output_tokens])])
        expect(Number.isInteger(n) && n > 0, model.id).toBe(true);
      expect(model.context_window, model.id).toBeLessThanOrEqual(10_000_000);
      expect(model.max_output_tokens, model.id).toBeLessThanOrEqual(Math.min(1_000_000, model.context_window));
      expect(model.created, model.id).toBeGreaterThanOrEqual(Date.parse('2022-11-01') / 1000);
      expect(model.created, model.id).toBeLessThan(Date.parse('2027-01-01') / 1000);
      expect(model.created % 86_400, model.id).toBe(0);
    }
  });

  test('capabilities are known, unique, in order; long_context from the window; reasoning for reasoning models; logprobs for OpenAI’s others', () => {
    for (const model of committed) {
      const caps = model.capabilities;
      expect(new Set(caps).size, model.id).toBe(caps.length);
      expect(caps, model.id).toEqual(CAPABILITY_ORDER.filter((c) => caps.includes(c)));
      if (!isEmbedding(model)) expect(caps.slice(0, 2), model.id).toEqual(['chat', 'streaming']);
      expect(caps.includes('long_context'), model.id).toBe(model.context_window >= 200_000);
      const reasoner =
        /^(o\d|gpt-5)/.test(model.id) ||
        /^gemini-(2\.5|3)/.test(model.id) ||
        model.id === 'deepseek-reasoner' ||
        /^claude-(opus|sonnet|haiku)-4|^claude-3-7/.test(model.id);
      if (reasoner) expect(caps, model.id).toContain('reasoning');
      if (/^gpt-(3|4)|^chatgpt-/.test(model.id) || model.id === 'deepseek-chat')
        expect(caps, model.id).not.toContain('reasoning');
      // Log probabilities: OpenAI's models that do not reason, and the sandbox's.
      expect(caps.includes('logprobs'), model.id).toBe(
        (model.provider === 'openai' || model.provider === 'sandbox') &&
          !isEmbedding(model) &&
          !caps.includes('reasoning'),
      );
    }
  });

  test('sorted: the sandbox models (writer, echo, embedding), then providers in their order, newest first, then by id', () => {
    expect([...committed].sort(compareEntries).map((m) => m.id)).toEqual(committed.map((m) => m.id));
    expect(committed.slice(0, 3).map((m) => m.id)).toEqual(['sandbox-writer', 'sandbox-echo', 'sandbox-embedding']);
    const providers = [...new Set(committed.map((m) => m.provider))];
    expect(providers).toEqual(PROVIDER_ORDER.filter((p) => providers.includes(p)));
    for (let i = 4; i < committed.length; i++) {
      const [a, b] = [committed[i - 1]!, committed[i]!];
      if (a.provider === b.provider)
        expect(a.created > b.created || (a.created === b.created && a.id < b.id), `${a.id} before ${b.id}`).toBe(true);
    }
  });

  test('prices are rounded, in range, and exactly genai-prices’ (base tier, cached input where priced)', () => {
    for (const model of committed) {
      const {
        input_per_million_usd: input,
        cached_input_per_million_usd: cached,
        output_per_million_usd: output,
      } = model.pricing;
      for (const price of [input, output, ...(cached === null ? [] : [cached])]) {
        expect(price >= 0 && price <= 1000 && sixDecimals(price), `${model.id} ${price}`).toBe(true);
      }
    }
    // genai-prices' own arithmetic: what 1,000 tokens cost (the base tier of any tiered price), times 1,000.
    const options = (provider: string) => ({ providerId: provider, timestamp: PRICES_AS_OF });
    for (const model of real) {
      const listed = listedOf(model);
      const priceId = listed.price_id ?? listed.upstream;
      const plain = calcPrice({ input_tokens: 1000, output_tokens: 1000 }, priceId, options(model.provider));
      expect(plain, model.id).not.toBeNull();
      expect(plain!.provider.id, model.id).toBe(model.provider);
      expect(findProvider({ providerId: model.provider })!.models, model.id).toContain(plain!.model);
      const fromCache = calcPrice({ input_tokens: 1000, cache_read_tokens: 1000 }, priceId, options(model.provider))!;
      expect(model.pricing, model.id).toEqual({
        input_per_million_usd: Number((plain!.input_price * 1000).toFixed(6)),
        cached_input_per_million_usd:
          plain!.model_price.cache_read_mtok === undefined ? null : Number((fromCache.input_price * 1000).toFixed(6)),
        // An embedding model generates no tokens: its output is not priced.
        output_per_million_usd: isEmbedding(model) ? 0 : Number((plain!.output_price * 1000).toFixed(6)),
      });
      expect(model.pricing.input_per_million_usd, model.id).toBeGreaterThan(0);
      if (!isEmbedding(model)) expect(model.pricing.output_per_million_usd, model.id).toBeGreaterThan(0);
    }
    const price = (id: string) => committed.find((m) => m.id === id)!.pricing;
    expect(price('text-embedding-3-small')).toEqual({
      input_per_million_usd: 0.02,
      cached_input_per_million_usd: null,
      output_per_million_usd: 0,
    });
    expect(price('gpt-4o-mini')).toEqual({
      input_per_million_usd: 0.15,
      cached_input_per_million_usd: 0.075,
      output_per_million_usd: 0.6,
    });
    // Tiered above 200,000 prompt tokens: the base tier.
    expect(price('gemini-2.5-pro')).toEqual({
      input_per_million_usd: 1.25,
      cached_input_per_million_usd: 0.125,
      output_per_million_usd: 10,
    });
  });

  test('a listed model that genai-prices cannot price stops the build, naming the model', () => {
    const unknown: Listed = {
      provider: 'openai',
      upstream: 'no-such-model-anywhere',
      name: 'x',
      owned_by: 'openai',
      released: '2025-01-01',
      context: 1000,
      output: 100,
      can: [],
    };
    expect(() => buildCatalogue([unknown])).toThrow(/model no-such-model-anywhere: genai-prices has no price/);
    // Google's price list falls back to Anthropic's (calcPrice answers a price for google claude-haiku-4-5): that is
    // no price of Google's.
    const borrowed: Listed = { ...unknown, provider: 'google', upstream: 'claude-haiku-4-5' };
    expect(calcPrice({ input_tokens: 1 }, 'claude-haiku-4-5', { providerId: 'google' })).not.toBeNull();
    expect(() => buildCatalogue([borrowed])).toThrow(/model claude-haiku-4-5: genai-prices has no price/);
  });
});

// The committed model catalogue (src/features/engine/models.json) against its rules: at least 65 models of at least
// five providers besides the sandbox, valid and unique ids, coherent limits, capabilities and prices, and exactly
// what `npm run catalogue` builds from the installed @pydantic/genai-prices: a stale file, or a price that changed
// in the price data, fails here.
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { buildCatalogue, catalogueText, OUTPUT, pricesOf } from '../../scripts/build-model-catalogue.ts';
import type { CatalogueEntry } from '../../src/features/engine/catalogue.ts';
import { schemaErrors } from '../support/spec.ts';

const committed = JSON.parse(readFileSync(OUTPUT, 'utf8')) as CatalogueEntry[];
const real = committed.filter((model) => model.provider !== 'sandbox');

describe('the model catalogue', () => {
  test('is what npm run catalogue builds (rerun it and commit the file when this fails)', () => {
    expect(readFileSync(OUTPUT, 'utf8')).toBe(catalogueText());
  });

  test('has at least 65 models of at least 5 providers besides the two sandbox models', () => {
    expect(real.length).toBeGreaterThanOrEqual(65);
    expect(new Set(real.map((m) => m.provider)).size).toBeGreaterThanOrEqual(5);
    expect(committed.filter((m) => m.provider === 'sandbox').map((m) => m.id)).toEqual(['sandbox-writer', 'sandbox-echo']);
  });

  test('every model is a valid Model of the contract, with a unique id', () => {
    expect(new Set(committed.map((m) => m.id)).size).toBe(committed.length);
    for (const { upstream_id: _upstream, ...model } of committed) {
      expect(schemaErrors('/components/schemas/Model', { ...model, object: 'model', available: true }), model.id).toEqual([]);
    }
  });

  test('limits, capabilities and dates are coherent', () => {
    for (const model of committed) {
      expect(model.max_output_tokens, model.id).toBeLessThanOrEqual(model.context_window);
      expect(model.capabilities.slice(0, 2), model.id).toEqual(['chat', 'streaming']);
      expect(model.capabilities.includes('long_context'), model.id).toBe(model.context_window >= 200_000);
      expect(model.deprecated, model.id).toBe(model.deprecation_date !== null);
      expect(model.created, model.id).toBeLessThan(Date.parse('2027-01-01') / 1000);
    }
  });

  test('the prices are genai-prices’ (per million tokens, cached input where the provider prices it)', () => {
    const built = buildCatalogue();
    for (const model of real) {
      const rebuilt = built.find((m) => m.id === model.id)!;
      expect(model.pricing, model.id).toEqual(rebuilt.pricing);
      expect(model.pricing.input_per_million_usd, model.id).toBeGreaterThan(0);
      expect(model.pricing.output_per_million_usd, model.id).toBeGreaterThan(0);
    }
    expect(pricesOf('openai', 'gpt-4o-mini')).toEqual({ input_per_million_usd: 0.15, cached_input_per_million_usd: 0.075, output_per_million_usd: 0.6 });
    expect(() => pricesOf('openai', 'no-such-model-anywhere')).toThrow(/genai-prices has no price/);
  });
});

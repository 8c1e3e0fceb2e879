import type { CatalogueEntry } from './catalogue-entry.ts';
import type { TokenUsage } from './generation.ts';

/** The cost of a call in US dollars, from the model's prices per million tokens. */
export function priceOf(model: CatalogueEntry, usage: TokenUsage): number {
  const {
    input_per_million_usd: input,
    cached_input_per_million_usd: cached,
    output_per_million_usd: output,
  } = model.pricing;
  const uncached = Math.max(0, usage.inputTokens - usage.cachedInputTokens);
  const dollars =
    (uncached * input + usage.cachedInputTokens * (cached ?? input) + usage.outputTokens * output) / 1_000_000;
  // Rounded to a billionth of a cent, so that sums do not show binary floating-point noise.
  return Math.round(dollars * 1e11) / 1e11;
}

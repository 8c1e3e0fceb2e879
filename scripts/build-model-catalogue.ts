// `npm run catalogue`: writes the model catalogue, src/features/engine/models.json (committed), from two sources:
//   - prices: @pydantic/genai-prices, its bundled data (never its remote update), as of PRICES_AS_OF, per million
//     input, cached-input (null when the provider has no such price) and output tokens; tiered prices at their base tier;
//   - limits and capabilities: the table below, from the providers' published model pages, reviewed by hand when a
//     model is added (genai-prices' context window is used when it has one and the table gives none).
// A listed model that genai-prices cannot price stops the script: a refresh never writes a guess.
// The output is deterministic (a fixed date, the table's order), so `test/engine/catalogue.test.ts` can rebuild it and
// compare it with the committed file.
import { writeFileSync } from 'node:fs';
import { calcPrice } from '@pydantic/genai-prices';
import type { CatalogueEntry } from '../src/features/engine/catalogue.ts';

/** The instant whose prices are taken (prices can change with a start date or the time of day: noon UTC is standard). */
export const PRICES_AS_OF = new Date('2026-11-01T12:00:00Z');
export const OUTPUT = new URL('../src/features/engine/models.json', import.meta.url);

type Capability = CatalogueEntry['capabilities'][number];
const CAPABILITY_ORDER: Capability[] = ['chat', 'streaming', 'vision', 'tools', 'json_mode', 'json_schema', 'reasoning', 'long_context', 'embeddings'];

interface Listed {
  provider: CatalogueEntry['provider'];
  upstream: string;
  name: string;
  owned_by: string;
  /** Release day, YYYY-MM-DD. */
  released: string;
  context: number;
  output: number;
  /** Besides chat and streaming, which every model has; long_context is derived from the context window. */
  can: Capability[];
  /** The id genai-prices knows the model by, when it is not the upstream id. */
  price_id?: string;
  deprecation?: string;
}

const VJ: Capability[] = ['vision', 'tools', 'json_mode', 'json_schema'];
const VJR: Capability[] = [...VJ, 'reasoning'];
const TJ: Capability[] = ['tools', 'json_mode'];

// Limits from the providers' model pages (platform.openai.com/docs/models, docs.anthropic.com/en/docs/about-claude/models,
// ai.google.dev/gemini-api/docs/models, docs.mistral.ai, console.groq.com/docs/models, docs.together.ai, api-docs.deepseek.com).
const MODELS: Listed[] = [
  { provider: 'openai', upstream: 'gpt-5.2', name: 'GPT-5.2', owned_by: 'openai', released: '2025-12-11', context: 400_000, output: 128_000, can: VJR },
  { provider: 'openai', upstream: 'gpt-5.1', name: 'GPT-5.1', owned_by: 'openai', released: '2025-11-13', context: 400_000, output: 128_000, can: VJR },
  { provider: 'openai', upstream: 'gpt-5', name: 'GPT-5', owned_by: 'openai', released: '2025-08-07', context: 400_000, output: 128_000, can: VJR },
  { provider: 'openai', upstream: 'gpt-5-mini', name: 'GPT-5 mini', owned_by: 'openai', released: '2025-08-07', context: 400_000, output: 128_000, can: VJR },
  { provider: 'openai', upstream: 'gpt-5-nano', name: 'GPT-5 nano', owned_by: 'openai', released: '2025-08-07', context: 400_000, output: 128_000, can: VJR },
  { provider: 'openai', upstream: 'o3', name: 'o3', owned_by: 'openai', released: '2025-04-16', context: 200_000, output: 100_000, can: VJR },
  { provider: 'openai', upstream: 'o4-mini', name: 'o4-mini', owned_by: 'openai', released: '2025-04-16', context: 200_000, output: 100_000, can: VJR },
  { provider: 'openai', upstream: 'gpt-4.1', name: 'GPT-4.1', owned_by: 'openai', released: '2025-04-14', context: 1_047_576, output: 32_768, can: VJ },
  { provider: 'openai', upstream: 'gpt-4.1-mini', name: 'GPT-4.1 mini', owned_by: 'openai', released: '2025-04-14', context: 1_047_576, output: 32_768, can: VJ },
  { provider: 'openai', upstream: 'gpt-4.1-nano', name: 'GPT-4.1 nano', owned_by: 'openai', released: '2025-04-14', context: 1_047_576, output: 32_768, can: VJ },
  { provider: 'openai', upstream: 'o3-mini', name: 'o3-mini', owned_by: 'openai', released: '2025-01-31', context: 200_000, output: 100_000, can: ['tools', 'json_mode', 'json_schema', 'reasoning'] },
  { provider: 'openai', upstream: 'o1', name: 'o1', owned_by: 'openai', released: '2024-12-17', context: 200_000, output: 100_000, can: VJR },
  { provider: 'openai', upstream: 'gpt-4o', name: 'GPT-4o', owned_by: 'openai', released: '2024-05-13', context: 128_000, output: 16_384, can: VJ },
  { provider: 'openai', upstream: 'gpt-4o-mini', name: 'GPT-4o mini', owned_by: 'openai', released: '2024-07-18', context: 128_000, output: 16_384, can: VJ },
  { provider: 'openai', upstream: 'chatgpt-4o-latest', name: 'ChatGPT-4o', owned_by: 'openai', released: '2024-08-13', context: 128_000, output: 16_384, can: ['vision', 'json_mode'] },
  { provider: 'openai', upstream: 'gpt-4-turbo', name: 'GPT-4 Turbo', owned_by: 'openai', released: '2024-04-09', context: 128_000, output: 4_096, can: ['vision', 'tools', 'json_mode'] },
  { provider: 'openai', upstream: 'gpt-4', name: 'GPT-4', owned_by: 'openai', released: '2023-03-14', context: 8_192, output: 8_192, can: ['tools'] },
  { provider: 'openai', upstream: 'gpt-3.5-turbo', name: 'GPT-3.5 Turbo', owned_by: 'openai', released: '2023-03-01', context: 16_385, output: 4_096, can: TJ },

  // Claude answers JSON through the SDK's tool-based structured output, so every model has json_mode and json_schema.
  { provider: 'anthropic', upstream: 'claude-opus-4-5', name: 'Claude Opus 4.5', owned_by: 'anthropic', released: '2025-11-24', context: 200_000, output: 64_000, can: VJR },
  { provider: 'anthropic', upstream: 'claude-haiku-4-5', name: 'Claude Haiku 4.5', owned_by: 'anthropic', released: '2025-10-15', context: 200_000, output: 64_000, can: VJR },
  { provider: 'anthropic', upstream: 'claude-sonnet-4-5', name: 'Claude Sonnet 4.5', owned_by: 'anthropic', released: '2025-09-29', context: 200_000, output: 64_000, can: VJR },
  { provider: 'anthropic', upstream: 'claude-opus-4-1', name: 'Claude Opus 4.1', owned_by: 'anthropic', released: '2025-08-05', context: 200_000, output: 32_000, can: VJR },
  { provider: 'anthropic', upstream: 'claude-opus-4-0', name: 'Claude Opus 4', owned_by: 'anthropic', released: '2025-05-22', context: 200_000, output: 32_000, can: VJR },
  { provider: 'anthropic', upstream: 'claude-sonnet-4-0', name: 'Claude Sonnet 4', owned_by: 'anthropic', released: '2025-05-22', context: 200_000, output: 64_000, can: VJR },
  { provider: 'anthropic', upstream: 'claude-3-7-sonnet-latest', name: 'Claude Sonnet 3.7', owned_by: 'anthropic', released: '2025-02-24', context: 200_000, output: 64_000, can: VJR },
  { provider: 'anthropic', upstream: 'claude-3-5-haiku-latest', name: 'Claude Haiku 3.5', owned_by: 'anthropic', released: '2024-10-22', context: 200_000, output: 8_192, can: VJ },
  { provider: 'anthropic', upstream: 'claude-3-haiku-20240307', name: 'Claude Haiku 3', owned_by: 'anthropic', released: '2024-03-07', context: 200_000, output: 4_096, can: VJ },

  { provider: 'google', upstream: 'gemini-3-pro-preview', name: 'Gemini 3 Pro (preview)', owned_by: 'google', released: '2025-11-18', context: 1_048_576, output: 65_536, can: VJR },
  { provider: 'google', upstream: 'gemini-2.5-pro', name: 'Gemini 2.5 Pro', owned_by: 'google', released: '2025-06-17', context: 1_048_576, output: 65_536, can: VJR },
  { provider: 'google', upstream: 'gemini-2.5-flash', name: 'Gemini 2.5 Flash', owned_by: 'google', released: '2025-06-17', context: 1_048_576, output: 65_536, can: VJR },
  { provider: 'google', upstream: 'gemini-2.5-flash-lite', name: 'Gemini 2.5 Flash-Lite', owned_by: 'google', released: '2025-07-22', context: 1_048_576, output: 65_536, can: VJR },
  { provider: 'google', upstream: 'gemini-2.0-flash', name: 'Gemini 2.0 Flash', owned_by: 'google', released: '2025-02-05', context: 1_048_576, output: 8_192, can: VJ },
  { provider: 'google', upstream: 'gemini-2.0-flash-lite', name: 'Gemini 2.0 Flash-Lite', owned_by: 'google', released: '2025-02-25', context: 1_048_576, output: 8_192, can: VJ },

  { provider: 'mistral', upstream: 'mistral-large-2512', name: 'Mistral Large 3', owned_by: 'mistral', released: '2025-12-02', context: 262_144, output: 262_144, can: VJ },
  { provider: 'mistral', upstream: 'ministral-14b-2512', name: 'Ministral 3 14B', owned_by: 'mistral', released: '2025-12-02', context: 262_144, output: 262_144, can: VJ },
  { provider: 'mistral', upstream: 'devstral-2512', name: 'Devstral 2', owned_by: 'mistral', released: '2025-12-09', context: 262_144, output: 262_144, can: TJ },
  { provider: 'mistral', upstream: 'mistral-large-2411', name: 'Mistral Large 2.1', owned_by: 'mistral', released: '2024-11-18', context: 131_072, output: 131_072, can: ['tools', 'json_mode', 'json_schema'], price_id: 'mistral-large' },
  { provider: 'mistral', upstream: 'mistral-small-latest', name: 'Mistral Small', owned_by: 'mistral', released: '2025-06-20', context: 131_072, output: 131_072, can: VJ },
  { provider: 'mistral', upstream: 'codestral-latest', name: 'Codestral', owned_by: 'mistral', released: '2025-07-30', context: 256_000, output: 256_000, can: ['tools', 'json_mode', 'json_schema'] },
  { provider: 'mistral', upstream: 'magistral-medium-latest', name: 'Magistral Medium', owned_by: 'mistral', released: '2025-06-10', context: 40_960, output: 40_960, can: ['tools', 'json_mode', 'reasoning'] },
  { provider: 'mistral', upstream: 'magistral-small-latest', name: 'Magistral Small', owned_by: 'mistral', released: '2025-06-10', context: 40_960, output: 40_960, can: ['tools', 'json_mode', 'reasoning'] },
  { provider: 'mistral', upstream: 'pixtral-large-latest', name: 'Pixtral Large', owned_by: 'mistral', released: '2024-11-18', context: 131_072, output: 131_072, can: VJ },
  { provider: 'mistral', upstream: 'pixtral-12b-2409', name: 'Pixtral 12B', owned_by: 'mistral', released: '2024-09-17', context: 131_072, output: 131_072, can: VJ, price_id: 'pixtral-12b' },
  { provider: 'mistral', upstream: 'open-mistral-nemo', name: 'Mistral NeMo', owned_by: 'mistral', released: '2024-07-18', context: 131_072, output: 131_072, can: TJ },
  { provider: 'mistral', upstream: 'ministral-8b-latest', name: 'Ministral 8B', owned_by: 'mistral', released: '2024-10-16', context: 131_072, output: 131_072, can: TJ },
  { provider: 'mistral', upstream: 'ministral-3b-latest', name: 'Ministral 3B', owned_by: 'mistral', released: '2024-10-16', context: 131_072, output: 131_072, can: TJ, price_id: 'ministral-3b' },

  { provider: 'groq', upstream: 'openai/gpt-oss-120b', name: 'GPT-OSS 120B (Groq)', owned_by: 'openai', released: '2025-08-05', context: 131_072, output: 65_536, can: ['tools', 'json_mode', 'json_schema', 'reasoning'] },
  { provider: 'groq', upstream: 'openai/gpt-oss-20b', name: 'GPT-OSS 20B (Groq)', owned_by: 'openai', released: '2025-08-05', context: 131_072, output: 65_536, can: ['tools', 'json_mode', 'json_schema', 'reasoning'] },
  { provider: 'groq', upstream: 'moonshotai/kimi-k2-instruct', name: 'Kimi K2 (Groq)', owned_by: 'moonshotai', released: '2025-07-11', context: 131_072, output: 16_384, can: TJ },
  { provider: 'groq', upstream: 'qwen/qwen3-32b', name: 'Qwen3 32B (Groq)', owned_by: 'alibaba', released: '2025-04-29', context: 131_072, output: 40_960, can: ['tools', 'json_mode', 'reasoning'] },
  { provider: 'groq', upstream: 'meta-llama/llama-4-maverick-17b-128e-instruct', name: 'Llama 4 Maverick (Groq)', owned_by: 'meta', released: '2025-04-05', context: 131_072, output: 8_192, can: VJ },
  { provider: 'groq', upstream: 'meta-llama/llama-4-scout-17b-16e-instruct', name: 'Llama 4 Scout (Groq)', owned_by: 'meta', released: '2025-04-05', context: 131_072, output: 8_192, can: VJ },
  { provider: 'groq', upstream: 'llama-3.3-70b-versatile', name: 'Llama 3.3 70B (Groq)', owned_by: 'meta', released: '2024-12-06', context: 131_072, output: 32_768, can: TJ },
  { provider: 'groq', upstream: 'llama-3.1-8b-instant', name: 'Llama 3.1 8B (Groq)', owned_by: 'meta', released: '2024-07-23', context: 131_072, output: 131_072, can: TJ },
  { provider: 'groq', upstream: 'deepseek-r1-distill-llama-70b', name: 'DeepSeek R1 Distill Llama 70B (Groq)', owned_by: 'deepseek', released: '2025-01-20', context: 131_072, output: 131_072, can: ['tools', 'json_mode', 'reasoning'], deprecation: '2025-10-02' },

  { provider: 'together', upstream: 'meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8', name: 'Llama 4 Maverick (Together)', owned_by: 'meta', released: '2025-04-05', context: 1_048_576, output: 8_192, can: VJ },
  { provider: 'together', upstream: 'meta-llama/Llama-4-Scout-17B-16E-Instruct', name: 'Llama 4 Scout (Together)', owned_by: 'meta', released: '2025-04-05', context: 1_048_576, output: 8_192, can: VJ },
  { provider: 'together', upstream: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', name: 'Llama 3.3 70B Turbo (Together)', owned_by: 'meta', released: '2024-12-06', context: 131_072, output: 8_192, can: TJ },
  { provider: 'together', upstream: 'meta-llama/Meta-Llama-3.1-405B-Instruct-Turbo', name: 'Llama 3.1 405B Turbo (Together)', owned_by: 'meta', released: '2024-07-23', context: 130_815, output: 8_192, can: TJ },
  { provider: 'together', upstream: 'meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo', name: 'Llama 3.1 70B Turbo (Together)', owned_by: 'meta', released: '2024-07-23', context: 131_072, output: 8_192, can: TJ },
  { provider: 'together', upstream: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo', name: 'Llama 3.1 8B Turbo (Together)', owned_by: 'meta', released: '2024-07-23', context: 131_072, output: 8_192, can: TJ },
  { provider: 'together', upstream: 'meta-llama/Meta-Llama-3-70B-Instruct-Turbo', name: 'Llama 3 70B Turbo (Together)', owned_by: 'meta', released: '2024-04-18', context: 8_192, output: 8_192, can: ['json_mode'] },
  { provider: 'together', upstream: 'mistralai/Mixtral-8x22B-Instruct-v0.1', name: 'Mixtral 8x22B (Together)', owned_by: 'mistral', released: '2024-04-17', context: 65_536, output: 8_192, can: ['json_mode'] },
  { provider: 'together', upstream: 'mistralai/Mixtral-8x7B-Instruct-v0.1', name: 'Mixtral 8x7B (Together)', owned_by: 'mistral', released: '2023-12-11', context: 32_768, output: 8_192, can: TJ },

  { provider: 'deepseek', upstream: 'deepseek-chat', name: 'DeepSeek Chat', owned_by: 'deepseek', released: '2025-09-29', context: 128_000, output: 8_192, can: TJ },
  { provider: 'deepseek', upstream: 'deepseek-reasoner', name: 'DeepSeek Reasoner', owned_by: 'deepseek', released: '2025-09-29', context: 128_000, output: 64_000, can: ['json_mode', 'reasoning'] },
];

const SANDBOX_CAPABILITIES: Capability[] = ['chat', 'streaming', 'json_mode', 'json_schema'];

/** The built-in models: free of any provider, priced at a notional rate to show the arithmetic (docs/engine.md). */
const SANDBOX: CatalogueEntry[] = ['sandbox-writer', 'sandbox-echo'].map((id) => ({
  id,
  provider: 'sandbox',
  upstream_id: id,
  owned_by: 'content-service',
  name: id === 'sandbox-writer' ? 'Sandbox writer' : 'Sandbox echo',
  created: 1795132800,
  context_window: 128_000,
  max_output_tokens: 16_384,
  capabilities: SANDBOX_CAPABILITIES,
  pricing: { input_per_million_usd: 0.1, cached_input_per_million_usd: null, output_per_million_usd: 0.4 },
  regions: ['eu', 'us'],
  deprecated: false,
  deprecation_date: null,
}));

/** The catalogue id of an upstream model: itself when it is a valid id, else `<provider>:<lower case, / as ->`. */
function catalogueId(provider: string, upstream: string): string {
  return /^[a-z0-9][a-z0-9._:-]*$/.test(upstream) ? upstream : `${provider}:${upstream.toLowerCase().replace(/\//g, '-')}`;
}

function round(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

/** Prices per million tokens of a model, from genai-prices at PRICES_AS_OF (the base tier: 1,000 tokens, scaled). */
export function pricesOf(provider: string, priceId: string): CatalogueEntry['pricing'] {
  const options = { providerId: provider, timestamp: PRICES_AS_OF };
  const plain = calcPrice({ input_tokens: 1000, output_tokens: 1000 }, priceId, options);
  if (!plain) throw new Error(`genai-prices has no price for ${provider} ${priceId}: give the model a price_id genai-prices knows, or remove it`);
  const cached = calcPrice({ input_tokens: 1000, cache_read_tokens: 1000, output_tokens: 0 }, priceId, options)!;
  return {
    input_per_million_usd: round(plain.input_price * 1000),
    cached_input_per_million_usd: plain.model_price.cache_read_mtok === undefined ? null : round(cached.input_price * 1000),
    output_per_million_usd: round(plain.output_price * 1000),
  };
}

export function buildCatalogue(): CatalogueEntry[] {
  const listed = MODELS.map((model): CatalogueEntry => {
    const capabilities = new Set<Capability>(['chat', 'streaming', ...model.can, ...(model.context >= 200_000 ? (['long_context'] as const) : [])]);
    return {
      id: catalogueId(model.provider, model.upstream),
      provider: model.provider,
      upstream_id: model.upstream,
      owned_by: model.owned_by,
      name: model.name,
      created: Date.parse(`${model.released}T00:00:00Z`) / 1000,
      context_window: model.context,
      max_output_tokens: Math.min(model.output, model.context),
      capabilities: CAPABILITY_ORDER.filter((c) => capabilities.has(c)),
      pricing: pricesOf(model.provider, model.price_id ?? model.upstream),
      regions: ['eu', 'us'],
      deprecated: model.deprecation !== undefined,
      deprecation_date: model.deprecation ?? null,
    };
  });
  const ids = new Set<string>();
  for (const entry of [...SANDBOX, ...listed]) {
    if (ids.has(entry.id)) throw new Error(`model id ${entry.id} is listed twice`);
    ids.add(entry.id);
  }
  return [...SANDBOX, ...listed];
}

export function catalogueText(): string {
  return `${JSON.stringify(buildCatalogue(), null, 2)}\n`;
}

if (import.meta.main) {
  writeFileSync(OUTPUT, catalogueText());
  process.stdout.write(`Wrote ${OUTPUT.pathname}: ${buildCatalogue().length} models\n`);
}

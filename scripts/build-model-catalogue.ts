// `npm run catalogue`: writes the model catalogue, src/features/engine/models.json (committed), from two sources:
//   - prices: @pydantic/genai-prices, its bundled data only (its remote update is never called, so this works offline),
//     the prices in force at PRICES_AS_OF, in US dollars per million input, cached-input (cache read; null when the
//     provider has no such price) and output tokens; a tiered price is taken at its base (lowest-context) tier;
//   - limits and capabilities: the MODELS table below (language models) and EMBEDDING_MODELS (embedding models, with
//     their vector lengths; they generate no tokens, so their output price and max_output_tokens are 0).
// A listed model that genai-prices cannot price stops the script with the model's id: a refresh never writes a guess.
// The output is deterministic (a fixed price date, a total sort order, 2-space JSON with a trailing newline), so
// test/engine/catalogue.test.ts rebuilds it and compares it with the committed file.
//
// To refresh: update @pydantic/genai-prices, move PRICES_AS_OF to the day of the refresh, review the table, then
// `npm run catalogue` and commit models.json with the script.
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { calcPrice, findProvider, type ModelPrice } from '@pydantic/genai-prices';
import { type CatalogueEntry, sandbox } from '../src/features/engine/index.ts';

/** The instant whose prices are taken: prices can change on a start date or with the time of day (noon UTC is the
 *  providers' standard rate, e.g. outside DeepSeek's off-peak hours). Move it when refreshing. */
export const PRICES_AS_OF = new Date('2026-11-24T12:00:00Z');
export const OUTPUT = new URL('../src/features/engine/models.json', import.meta.url);

export type Capability = CatalogueEntry['capabilities'][number];
export type Pricing = CatalogueEntry['pricing'];
export const CAPABILITY_ORDER: readonly Capability[] = [
  'chat',
  'streaming',
  'vision',
  'tools',
  'json_mode',
  'json_schema',
  'reasoning',
  'logprobs',
  'long_context',
  'embeddings',
];
/** The catalogue's order of providers (after the sandbox). */
export const PROVIDER_ORDER = [
  'sandbox',
  'openai',
  'anthropic',
  'google',
  'mistral',
  'groq',
  'together',
  'deepseek',
  'openrouter',
] as const;
export type CatalogueProvider = (typeof PROVIDER_ORDER)[number];
/** Providers that host other publishers' models: their ids give way (`<provider>:`) when they collide. */
const HOSTS: readonly CatalogueProvider[] = ['groq', 'together', 'openrouter'];
export const ID_PATTERN = /^[a-z0-9][a-z0-9._:-]*$/;
export const LONG_CONTEXT = 200_000;

export interface Listed {
  provider: Exclude<CatalogueProvider, 'sandbox'>;
  /** The provider's own model id, as sent upstream. */
  upstream: string;
  name: string;
  /** The publisher. */
  owned_by: string;
  /** Release day, YYYY-MM-DD. */
  released: string;
  context: number;
  output: number;
  /** Besides chat and streaming, which every model has; long_context is derived from the context window. */
  can: Capability[];
  /** The id genai-prices knows the model by, when it is not the upstream id. */
  price_id?: string;
  /** The announced day after which the provider stops serving the model, YYYY-MM-DD. */
  deprecation?: string;
}

const VJ: Capability[] = ['vision', 'tools', 'json_mode', 'json_schema'];
const VJR: Capability[] = [...VJ, 'reasoning'];
const TJ: Capability[] = ['tools', 'json_mode'];
const TJS: Capability[] = [...TJ, 'json_schema'];
const TJSR: Capability[] = [...TJS, 'reasoning'];

// Limits, capabilities, release and retirement days from the providers' published model pages (platform.openai.com/docs/models, docs.anthropic.com/en/docs/about-claude/models, ai.google.dev/gemini-api/docs/models, docs.mistral.ai/getting-started/models, console.groq.com/docs/models, docs.together.ai/docs/serverless-models, api-docs.deepseek.com) and their deprecation pages; reviewed by hand whenever a model is added.
export const MODELS: readonly Listed[] = [
  {
    provider: 'openai',
    upstream: 'gpt-5.2',
    name: 'GPT-5.2',
    owned_by: 'openai',
    released: '2025-12-11',
    context: 400_000,
    output: 128_000,
    can: VJR,
  },
  {
    provider: 'openai',
    upstream: 'gpt-5.1',
    name: 'GPT-5.1',
    owned_by: 'openai',
    released: '2025-11-13',
    context: 400_000,
    output: 128_000,
    can: VJR,
  },
  {
    provider: 'openai',
    upstream: 'gpt-5',
    name: 'GPT-5',
    owned_by: 'openai',
    released: '2025-08-07',
    context: 400_000,
    output: 128_000,
    can: VJR,
  },
  {
    provider: 'openai',
    upstream: 'gpt-5-mini',
    name: 'GPT-5 mini',
    owned_by: 'openai',
    released: '2025-08-07',
    context: 400_000,
    output: 128_000,
    can: VJR,
  },
  {
    provider: 'openai',
    upstream: 'gpt-5-nano',
    name: 'GPT-5 nano',
    owned_by: 'openai',
    released: '2025-08-07',
    context: 400_000,
    output: 128_000,
    can: VJR,
  },
  {
    provider: 'openai',
    upstream: 'o3',
    name: 'o3',
    owned_by: 'openai',
    released: '2025-04-16',
    context: 200_000,
    output: 100_000,
    can: VJR,
  },
  {
    provider: 'openai',
    upstream: 'o4-mini',
    name: 'o4-mini',
    owned_by: 'openai',
    released: '2025-04-16',
    context: 200_000,
    output: 100_000,
    can: VJR,
  },
  {
    provider: 'openai',
    upstream: 'gpt-4.1',
    name: 'GPT-4.1',
    owned_by: 'openai',
    released: '2025-04-14',
    context: 1_047_576,
    output: 32_768,
    can: VJ,
  },
  {
    provider: 'openai',
    upstream: 'gpt-4.1-mini',
    name: 'GPT-4.1 mini',
    owned_by: 'openai',
    released: '2025-04-14',
    context: 1_047_576,
    output: 32_768,
    can: VJ,
  },
  {
    provider: 'openai',
    upstream: 'gpt-4.1-nano',
    name: 'GPT-4.1 nano',
    owned_by: 'openai',
    released: '2025-04-14',
    context: 1_047_576,
    output: 32_768,
    can: VJ,
  },
  {
    provider: 'openai',
    upstream: 'gpt-4.5-preview',
    name: 'GPT-4.5 (preview)',
    owned_by: 'openai',
    released: '2025-02-27',
    context: 128_000,
    output: 16_384,
    can: VJ,
    deprecation: '2025-07-14',
  },
  {
    provider: 'openai',
    upstream: 'o3-mini',
    name: 'o3-mini',
    owned_by: 'openai',
    released: '2025-01-31',
    context: 200_000,
    output: 100_000,
    can: TJSR,
  },
  {
    provider: 'openai',
    upstream: 'o1',
    name: 'o1',
    owned_by: 'openai',
    released: '2024-12-17',
    context: 200_000,
    output: 100_000,
    can: VJR,
  },
  {
    provider: 'openai',
    upstream: 'o1-mini',
    name: 'o1-mini',
    owned_by: 'openai',
    released: '2024-09-12',
    context: 128_000,
    output: 65_536,
    can: ['reasoning'],
    deprecation: '2025-10-27',
  },
  {
    provider: 'openai',
    upstream: 'chatgpt-4o-latest',
    name: 'ChatGPT-4o',
    owned_by: 'openai',
    released: '2024-08-13',
    context: 128_000,
    output: 16_384,
    can: ['vision', 'json_mode'],
    deprecation: '2026-02-17',
  },
  {
    provider: 'openai',
    upstream: 'gpt-4o-mini',
    name: 'GPT-4o mini',
    owned_by: 'openai',
    released: '2024-07-18',
    context: 128_000,
    output: 16_384,
    can: VJ,
  },
  {
    provider: 'openai',
    upstream: 'gpt-4o',
    name: 'GPT-4o',
    owned_by: 'openai',
    released: '2024-05-13',
    context: 128_000,
    output: 16_384,
    can: VJ,
  },
  {
    provider: 'openai',
    upstream: 'gpt-4-turbo',
    name: 'GPT-4 Turbo',
    owned_by: 'openai',
    released: '2024-04-09',
    context: 128_000,
    output: 4_096,
    can: ['vision', 'tools', 'json_mode'],
  },
  {
    provider: 'openai',
    upstream: 'gpt-4',
    name: 'GPT-4',
    owned_by: 'openai',
    released: '2023-03-14',
    context: 8_192,
    output: 8_192,
    can: ['tools'],
  },
  {
    provider: 'openai',
    upstream: 'gpt-3.5-turbo',
    name: 'GPT-3.5 Turbo',
    owned_by: 'openai',
    released: '2023-03-01',
    context: 16_385,
    output: 4_096,
    can: TJ,
  },

  // Claude answers JSON through the SDK's tool-based structured output, so every model has json_mode and json_schema.
  {
    provider: 'anthropic',
    upstream: 'claude-opus-4-5',
    name: 'Claude Opus 4.5',
    owned_by: 'anthropic',
    released: '2025-11-24',
    context: 200_000,
    output: 64_000,
    can: VJR,
  },
  {
    provider: 'anthropic',
    upstream: 'claude-haiku-4-5',
    name: 'Claude Haiku 4.5',
    owned_by: 'anthropic',
    released: '2025-10-15',
    context: 200_000,
    output: 64_000,
    can: VJR,
  },
  {
    provider: 'anthropic',
    upstream: 'claude-sonnet-4-5',
    name: 'Claude Sonnet 4.5',
    owned_by: 'anthropic',
    released: '2025-09-29',
    context: 200_000,
    output: 64_000,
    can: VJR,
  },
  {
    provider: 'anthropic',
    upstream: 'claude-opus-4-1',
    name: 'Claude Opus 4.1',
    owned_by: 'anthropic',
    released: '2025-08-05',
    context: 200_000,
    output: 32_000,
    can: VJR,
  },
  {
    provider: 'anthropic',
    upstream: 'claude-opus-4-0',
    name: 'Claude Opus 4',
    owned_by: 'anthropic',
    released: '2025-05-22',
    context: 200_000,
    output: 32_000,
    can: VJR,
  },
  {
    provider: 'anthropic',
    upstream: 'claude-sonnet-4-0',
    name: 'Claude Sonnet 4',
    owned_by: 'anthropic',
    released: '2025-05-22',
    context: 200_000,
    output: 64_000,
    can: VJR,
  },
  {
    provider: 'anthropic',
    upstream: 'claude-3-7-sonnet-latest',
    name: 'Claude Sonnet 3.7',
    owned_by: 'anthropic',
    released: '2025-02-24',
    context: 200_000,
    output: 64_000,
    can: VJR,
    deprecation: '2026-02-19',
  },
  {
    provider: 'anthropic',
    upstream: 'claude-3-5-haiku-latest',
    name: 'Claude Haiku 3.5',
    owned_by: 'anthropic',
    released: '2024-10-22',
    context: 200_000,
    output: 8_192,
    can: VJ,
    deprecation: '2026-02-19',
  },
  {
    provider: 'anthropic',
    upstream: 'claude-3-haiku-20240307',
    name: 'Claude Haiku 3',
    owned_by: 'anthropic',
    released: '2024-03-07',
    context: 200_000,
    output: 4_096,
    can: VJ,
  },

  {
    provider: 'google',
    upstream: 'gemini-3-pro-preview',
    name: 'Gemini 3 Pro (preview)',
    owned_by: 'google',
    released: '2025-11-18',
    context: 1_048_576,
    output: 65_536,
    can: VJR,
  },
  {
    provider: 'google',
    upstream: 'gemini-3-flash-preview',
    name: 'Gemini 3 Flash (preview)',
    owned_by: 'google',
    released: '2025-12-17',
    context: 1_048_576,
    output: 65_536,
    can: VJR,
  },
  {
    provider: 'google',
    upstream: 'gemini-2.5-pro',
    name: 'Gemini 2.5 Pro',
    owned_by: 'google',
    released: '2025-06-17',
    context: 1_048_576,
    output: 65_536,
    can: VJR,
  },
  {
    provider: 'google',
    upstream: 'gemini-2.5-flash',
    name: 'Gemini 2.5 Flash',
    owned_by: 'google',
    released: '2025-06-17',
    context: 1_048_576,
    output: 65_536,
    can: VJR,
  },
  {
    provider: 'google',
    upstream: 'gemini-2.5-flash-lite',
    name: 'Gemini 2.5 Flash-Lite',
    owned_by: 'google',
    released: '2025-07-22',
    context: 1_048_576,
    output: 65_536,
    can: VJR,
  },
  {
    provider: 'google',
    upstream: 'gemini-2.0-flash',
    name: 'Gemini 2.0 Flash',
    owned_by: 'google',
    released: '2025-02-05',
    context: 1_048_576,
    output: 8_192,
    can: VJ,
  },
  {
    provider: 'google',
    upstream: 'gemini-2.0-flash-lite',
    name: 'Gemini 2.0 Flash-Lite',
    owned_by: 'google',
    released: '2025-02-25',
    context: 1_048_576,
    output: 8_192,
    can: VJ,
  },
  {
    provider: 'google',
    upstream: 'gemini-1.5-pro',
    name: 'Gemini 1.5 Pro',
    owned_by: 'google',
    released: '2024-05-24',
    context: 2_097_152,
    output: 8_192,
    can: VJ,
    deprecation: '2025-09-24',
  },
  {
    provider: 'google',
    upstream: 'gemini-1.5-flash',
    name: 'Gemini 1.5 Flash',
    owned_by: 'google',
    released: '2024-05-24',
    context: 1_048_576,
    output: 8_192,
    can: VJ,
    deprecation: '2025-09-24',
  },

  // Mistral publishes one limit per model (prompt and completion together): the completion may use all of it.
  {
    provider: 'mistral',
    upstream: 'devstral-2512',
    name: 'Devstral 2',
    owned_by: 'mistral',
    released: '2025-12-09',
    context: 262_144,
    output: 262_144,
    can: TJS,
  },
  {
    provider: 'mistral',
    upstream: 'mistral-large-2512',
    name: 'Mistral Large 3',
    owned_by: 'mistral',
    released: '2025-12-02',
    context: 262_144,
    output: 262_144,
    can: VJ,
  },
  {
    provider: 'mistral',
    upstream: 'ministral-14b-2512',
    name: 'Ministral 3 14B',
    owned_by: 'mistral',
    released: '2025-12-02',
    context: 262_144,
    output: 262_144,
    can: VJ,
  },
  {
    provider: 'mistral',
    upstream: 'ministral-8b-latest',
    name: 'Ministral 3 8B',
    owned_by: 'mistral',
    released: '2025-12-02',
    context: 262_144,
    output: 262_144,
    can: VJ,
  },
  {
    provider: 'mistral',
    upstream: 'ministral-3b-2512',
    name: 'Ministral 3 3B',
    owned_by: 'mistral',
    released: '2025-12-02',
    context: 131_072,
    output: 131_072,
    can: VJ,
  },
  {
    provider: 'mistral',
    upstream: 'magistral-medium-2509',
    name: 'Magistral Medium 1.2',
    owned_by: 'mistral',
    released: '2025-09-17',
    context: 131_072,
    output: 131_072,
    can: VJR,
  },
  {
    provider: 'mistral',
    upstream: 'magistral-small-2509',
    name: 'Magistral Small 1.2',
    owned_by: 'mistral',
    released: '2025-09-17',
    context: 131_072,
    output: 131_072,
    can: VJR,
  },
  {
    provider: 'mistral',
    upstream: 'mistral-medium-2508',
    name: 'Mistral Medium 3.1',
    owned_by: 'mistral',
    released: '2025-08-12',
    context: 131_072,
    output: 131_072,
    can: VJ,
  },
  {
    provider: 'mistral',
    upstream: 'codestral-latest',
    name: 'Codestral',
    owned_by: 'mistral',
    released: '2025-07-30',
    context: 256_000,
    output: 256_000,
    can: TJS,
  },
  {
    provider: 'mistral',
    upstream: 'mistral-small-latest',
    name: 'Mistral Small 3.2',
    owned_by: 'mistral',
    released: '2025-06-20',
    context: 131_072,
    output: 131_072,
    can: VJ,
  },
  {
    provider: 'mistral',
    upstream: 'mistral-large-2411',
    name: 'Mistral Large 2.1',
    owned_by: 'mistral',
    released: '2024-11-18',
    context: 131_072,
    output: 131_072,
    can: TJS,
    price_id: 'mistral-large',
  },
  {
    provider: 'mistral',
    upstream: 'pixtral-large-latest',
    name: 'Pixtral Large',
    owned_by: 'mistral',
    released: '2024-11-18',
    context: 131_072,
    output: 131_072,
    can: VJ,
  },
  {
    provider: 'mistral',
    upstream: 'ministral-8b-2410',
    name: 'Ministral 8B (24.10)',
    owned_by: 'mistral',
    released: '2024-10-16',
    context: 131_072,
    output: 131_072,
    can: TJS,
  },
  {
    provider: 'mistral',
    upstream: 'ministral-3b-2410',
    name: 'Ministral 3B (24.10)',
    owned_by: 'mistral',
    released: '2024-10-16',
    context: 131_072,
    output: 131_072,
    can: TJS,
    price_id: 'ministral-3b',
  },
  {
    provider: 'mistral',
    upstream: 'pixtral-12b-2409',
    name: 'Pixtral 12B',
    owned_by: 'mistral',
    released: '2024-09-17',
    context: 131_072,
    output: 131_072,
    can: VJ,
    price_id: 'pixtral-12b',
  },
  {
    provider: 'mistral',
    upstream: 'open-mistral-nemo',
    name: 'Mistral NeMo',
    owned_by: 'mistral',
    released: '2024-07-18',
    context: 131_072,
    output: 131_072,
    can: TJS,
  },

  {
    provider: 'groq',
    upstream: 'moonshotai/kimi-k2-instruct-0905',
    name: 'Kimi K2 0905 (Groq)',
    owned_by: 'moonshotai',
    released: '2025-09-05',
    context: 262_144,
    output: 16_384,
    can: TJS,
  },
  {
    provider: 'groq',
    upstream: 'openai/gpt-oss-120b',
    name: 'GPT-OSS 120B (Groq)',
    owned_by: 'openai',
    released: '2025-08-05',
    context: 131_072,
    output: 65_536,
    can: TJSR,
  },
  {
    provider: 'groq',
    upstream: 'openai/gpt-oss-20b',
    name: 'GPT-OSS 20B (Groq)',
    owned_by: 'openai',
    released: '2025-08-05',
    context: 131_072,
    output: 65_536,
    can: TJSR,
  },
  {
    provider: 'groq',
    upstream: 'qwen/qwen3-32b',
    name: 'Qwen3 32B (Groq)',
    owned_by: 'alibaba',
    released: '2025-04-29',
    context: 131_072,
    output: 40_960,
    can: ['tools', 'json_mode', 'reasoning'],
  },
  {
    provider: 'groq',
    upstream: 'meta-llama/llama-4-maverick-17b-128e-instruct',
    name: 'Llama 4 Maverick (Groq)',
    owned_by: 'meta',
    released: '2025-04-05',
    context: 131_072,
    output: 8_192,
    can: VJ,
  },
  {
    provider: 'groq',
    upstream: 'meta-llama/llama-4-scout-17b-16e-instruct',
    name: 'Llama 4 Scout (Groq)',
    owned_by: 'meta',
    released: '2025-04-05',
    context: 131_072,
    output: 8_192,
    can: VJ,
  },
  {
    provider: 'groq',
    upstream: 'deepseek-r1-distill-llama-70b',
    name: 'DeepSeek R1 Distill Llama 70B (Groq)',
    owned_by: 'deepseek',
    released: '2025-01-20',
    context: 131_072,
    output: 131_072,
    can: ['tools', 'json_mode', 'reasoning'],
    deprecation: '2025-10-02',
  },
  {
    provider: 'groq',
    upstream: 'llama-3.3-70b-versatile',
    name: 'Llama 3.3 70B (Groq)',
    owned_by: 'meta',
    released: '2024-12-06',
    context: 131_072,
    output: 32_768,
    can: TJ,
  },
  {
    provider: 'groq',
    upstream: 'llama-3.1-8b-instant',
    name: 'Llama 3.1 8B (Groq)',
    owned_by: 'meta',
    released: '2024-07-23',
    context: 131_072,
    output: 131_072,
    can: TJ,
  },

  {
    provider: 'together',
    upstream: 'meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8',
    name: 'Llama 4 Maverick (Together)',
    owned_by: 'meta',
    released: '2025-04-05',
    context: 1_048_576,
    output: 8_192,
    can: VJ,
  },
  {
    provider: 'together',
    upstream: 'meta-llama/Llama-4-Scout-17B-16E-Instruct',
    name: 'Llama 4 Scout (Together)',
    owned_by: 'meta',
    released: '2025-04-05',
    context: 1_048_576,
    output: 8_192,
    can: VJ,
  },
  {
    provider: 'together',
    upstream: 'meta-llama/Llama-3.3-70B-Instruct-Turbo',
    name: 'Llama 3.3 70B Turbo (Together)',
    owned_by: 'meta',
    released: '2024-12-06',
    context: 131_072,
    output: 8_192,
    can: TJ,
  },
  {
    provider: 'together',
    upstream: 'meta-llama/Meta-Llama-3.1-405B-Instruct-Turbo',
    name: 'Llama 3.1 405B Turbo (Together)',
    owned_by: 'meta',
    released: '2024-07-23',
    context: 130_815,
    output: 8_192,
    can: TJ,
  },
  {
    provider: 'together',
    upstream: 'meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo',
    name: 'Llama 3.1 70B Turbo (Together)',
    owned_by: 'meta',
    released: '2024-07-23',
    context: 131_072,
    output: 8_192,
    can: TJ,
  },
  {
    provider: 'together',
    upstream: 'meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo',
    name: 'Llama 3.1 8B Turbo (Together)',
    owned_by: 'meta',
    released: '2024-07-23',
    context: 131_072,
    output: 8_192,
    can: TJ,
  },
  {
    provider: 'together',
    upstream: 'meta-llama/Meta-Llama-3-70B-Instruct-Turbo',
    name: 'Llama 3 70B Turbo (Together)',
    owned_by: 'meta',
    released: '2024-04-18',
    context: 8_192,
    output: 8_192,
    can: ['json_mode'],
  },
  {
    provider: 'together',
    upstream: 'mistralai/Mixtral-8x22B-Instruct-v0.1',
    name: 'Mixtral 8x22B (Together)',
    owned_by: 'mistral',
    released: '2024-04-17',
    context: 65_536,
    output: 8_192,
    can: ['json_mode'],
  },
  {
    provider: 'together',
    upstream: 'mistralai/Mixtral-8x7B-Instruct-v0.1',
    name: 'Mixtral 8x7B (Together)',
    owned_by: 'mistral',
    released: '2023-12-11',
    context: 32_768,
    output: 8_192,
    can: TJ,
  },

  {
    provider: 'deepseek',
    upstream: 'deepseek-chat',
    name: 'DeepSeek Chat',
    owned_by: 'deepseek',
    released: '2025-09-29',
    context: 128_000,
    output: 8_192,
    can: TJ,
  },
  {
    provider: 'deepseek',
    upstream: 'deepseek-reasoner',
    name: 'DeepSeek Reasoner',
    owned_by: 'deepseek',
    released: '2025-09-29',
    context: 128_000,
    output: 64_000,
    can: ['json_mode', 'reasoning'],
  },
];

/** An embedding model: what `POST /v1/embeddings` and knowledge bases can use. */
export interface ListedEmbedding {
  provider: 'openai' | 'google' | 'mistral';
  upstream: string;
  name: string;
  owned_by: string;
  /** Release day, YYYY-MM-DD. */
  released: string;
  /** The most tokens of one input. */
  context: number;
  /** The vector's length by default. */
  dimensions: number;
  /** The lengths a request may ask for (passed to the provider), or null when the length is fixed. */
  range: { min: number; max: number } | null;
  price_id?: string;
  deprecation?: string;
}

// From the providers' embedding pages (platform.openai.com/docs/guides/embeddings, ai.google.dev/gemini-api/docs/embeddings,
// docs.mistral.ai/capabilities/embeddings); OpenAI's input limit as its published OpenAPI document states it (8,192
// tokens for all its embedding models). Google's text-embedding-004 is left out: genai-prices has no price for it
// (and Google retires it for gemini-embedding-001).
export const EMBEDDING_MODELS: readonly ListedEmbedding[] = [
  {
    provider: 'openai',
    upstream: 'text-embedding-3-small',
    name: 'Text Embedding 3 Small',
    owned_by: 'openai',
    released: '2024-01-25',
    context: 8_192,
    dimensions: 1536,
    range: { min: 1, max: 1536 },
  },
  {
    provider: 'openai',
    upstream: 'text-embedding-3-large',
    name: 'Text Embedding 3 Large',
    owned_by: 'openai',
    released: '2024-01-25',
    context: 8_192,
    dimensions: 3072,
    range: { min: 1, max: 3072 },
  },
  {
    provider: 'openai',
    upstream: 'text-embedding-ada-002',
    name: 'Text Embedding Ada 002',
    owned_by: 'openai',
    released: '2022-12-15',
    context: 8_192,
    dimensions: 1536,
    range: null,
  },
  {
    provider: 'google',
    upstream: 'gemini-embedding-001',
    name: 'Gemini Embedding 001',
    owned_by: 'google',
    released: '2025-07-14',
    context: 2_048,
    dimensions: 3072,
    range: { min: 128, max: 3072 },
  },
  {
    provider: 'mistral',
    upstream: 'mistral-embed',
    name: 'Mistral Embed',
    owned_by: 'mistral',
    released: '2023-12-11',
    context: 8_192,
    dimensions: 1024,
    range: null,
  },
];

/** The built-in models: served by this server, free of any provider, priced at a notional rate to show the
 *  arithmetic (docs/engine.md); the built-in embedding model is free. */
const SANDBOX: readonly CatalogueEntry[] = [
  ...[
    ['sandbox-writer', 'Sandbox writer'],
    ['sandbox-echo', 'Sandbox echo'],
  ].map(
    ([id, name]): CatalogueEntry => ({
      id: id!,
      provider: 'sandbox',
      upstream_id: id!,
      owned_by: 'content-service',
      name: name!,
      created: 1795132800,
      context_window: 128_000,
      max_output_tokens: 16_384,
      capabilities: ['chat', 'streaming', 'vision', 'tools', 'json_mode', 'json_schema', 'logprobs'],
      pricing: { input_per_million_usd: 0.1, cached_input_per_million_usd: null, output_per_million_usd: 0.4 },
      regions: ['eu', 'us'],
      deprecated: false,
      deprecation_date: null,
    }),
  ),
  {
    id: 'sandbox-embedding',
    provider: 'sandbox',
    upstream_id: 'sandbox-embedding',
    owned_by: 'content-service',
    name: 'Sandbox embedding',
    created: 1795132800,
    context_window: 8_192,
    max_output_tokens: 0,
    capabilities: ['embeddings'],
    pricing: { input_per_million_usd: 0, cached_input_per_million_usd: null, output_per_million_usd: 0 },
    regions: ['eu', 'us'],
    deprecated: false,
    deprecation_date: null,
    dimensions: sandbox.SANDBOX_EMBEDDING_DIMENSIONS,
    dimensions_range: { min: 1, max: sandbox.SANDBOX_EMBEDDING_MAX_DIMENSIONS },
  },
];

/** A price rounded to 6 decimals, without float noise (0.15000000000000002 is 0.15). */
export function round6(value: number): number {
  return Number(value.toFixed(6));
}

/** One price of a model as genai-prices holds it: a number, or tiers whose base is the lowest-context price. */
function basePrice(value: ModelPrice[string]): number | undefined {
  if (value === undefined || value === null) return undefined;
  return typeof value === 'number' ? value : value.base;
}

/** Prices per million tokens of a model, from genai-prices' bundled data at PRICES_AS_OF. Throws, naming the model,
 *  when genai-prices has no price for it at that provider. */
export function pricesOf(id: string, provider: string, priceId: string, embedding = false): Pricing {
  const fail = (why: string): never => {
    throw new Error(
      `model ${id}: genai-prices ${why} for ${provider} ${priceId}; give the model a price_id genai-prices knows, or remove it`,
    );
  };
  const known = findProvider({ providerId: provider });
  const result = calcPrice({ input_tokens: 1, output_tokens: 1 }, priceId, {
    providerId: provider,
    timestamp: PRICES_AS_OF,
  });
  // A provider's fallback (Google's falls back to Anthropic's list) would price another provider's model: not this one.
  if (!known || !result || result.provider.id !== provider || !known.models.includes(result.model))
    return fail('has no price');
  const input = basePrice(result.model_price.input_mtok);
  // An embedding model generates no tokens: only its input is priced.
  const output = embedding ? 0 : basePrice(result.model_price.output_mtok);
  if (input === undefined || output === undefined) return fail('has no input or output token price');
  const cached = basePrice(result.model_price.cache_read_mtok);
  return {
    input_per_million_usd: round6(input),
    cached_input_per_million_usd: cached === undefined ? null : round6(cached),
    output_per_million_usd: round6(output),
  };
}

/** The order of the catalogue: the sandbox models first (writer, echo: the default one leads), then the providers in
 *  PROVIDER_ORDER, each newest first, then by id. */
export function compareEntries(a: CatalogueEntry, b: CatalogueEntry): number {
  const rank = (entry: CatalogueEntry) => PROVIDER_ORDER.indexOf(entry.provider as CatalogueProvider);
  const sandboxRank = (entry: CatalogueEntry) => SANDBOX.findIndex((s) => s.id === entry.id);
  if (a.provider === 'sandbox' && b.provider === 'sandbox') return sandboxRank(a) - sandboxRank(b);
  return rank(a) - rank(b) || b.created - a.created || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** `<provider>:<upstream id in lower case, / as ->`: the id of a model whose upstream id is not a valid id. */
export function prefixedId(provider: string, upstream: string): string {
  return `${provider}:${upstream.toLowerCase().replace(/\//g, '-')}`;
}

function embeddingEntry(model: ListedEmbedding): CatalogueEntry {
  return {
    id: model.upstream,
    provider: model.provider,
    upstream_id: model.upstream,
    owned_by: model.owned_by,
    name: model.name,
    created: Date.parse(`${model.released}T00:00:00Z`) / 1000,
    context_window: model.context,
    max_output_tokens: 0,
    capabilities: ['embeddings'],
    pricing: pricesOf(model.upstream, model.provider, model.price_id ?? model.upstream, true),
    regions: ['eu', 'us'],
    deprecated: model.deprecation !== undefined,
    deprecation_date: model.deprecation ?? null,
    dimensions: model.dimensions,
    dimensions_range: model.range,
  };
}

export function buildCatalogue(
  models: readonly Listed[] = MODELS,
  embeddingModels: readonly ListedEmbedding[] = EMBEDDING_MODELS,
): CatalogueEntry[] {
  const taken = new Set<string>(SANDBOX.map((entry) => entry.id));
  // First-party ids first, so that a host's model is the one that gives way when two ids collide.
  const firstPartyFirst = [...models].sort(
    (a, b) => Number(HOSTS.includes(a.provider)) - Number(HOSTS.includes(b.provider)),
  );
  const listed = firstPartyFirst.map((model): CatalogueEntry => {
    let id = ID_PATTERN.test(model.upstream) ? model.upstream : prefixedId(model.provider, model.upstream);
    if (taken.has(id) && HOSTS.includes(model.provider) && !id.startsWith(`${model.provider}:`))
      id = `${model.provider}:${id}`;
    if (taken.has(id)) throw new Error(`model ${id} is listed twice`);
    if (id.length > 100 || !ID_PATTERN.test(id)) throw new Error(`model ${id}: not a valid catalogue id`);
    taken.add(id);
    const capabilities = new Set<Capability>(['chat', 'streaming', ...model.can]);
    if (model.context >= LONG_CONTEXT) capabilities.add('long_context');
    // OpenAI's Chat Completions gives log probabilities for its models that do not reason; it refuses them for the
    // others (and the AI SDK drops the parameter for them). No other provider here passes them on.
    if (model.provider === 'openai' && !model.can.includes('reasoning')) capabilities.add('logprobs');
    return {
      id,
      provider: model.provider,
      upstream_id: model.upstream,
      owned_by: model.owned_by,
      name: model.name,
      created: Date.parse(`${model.released}T00:00:00Z`) / 1000,
      context_window: model.context,
      max_output_tokens: Math.min(model.output, model.context),
      capabilities: CAPABILITY_ORDER.filter((c) => capabilities.has(c)),
      pricing: pricesOf(id, model.provider, model.price_id ?? model.upstream),
      regions: ['eu', 'us'],
      deprecated: model.deprecation !== undefined,
      deprecation_date: model.deprecation ?? null,
    };
  });
  const embeddings = embeddingModels.map((model) => {
    const entry = embeddingEntry(model);
    if (taken.has(entry.id)) throw new Error(`model ${entry.id} is listed twice`);
    if (!ID_PATTERN.test(entry.id)) throw new Error(`model ${entry.id}: not a valid catalogue id`);
    taken.add(entry.id);
    return entry;
  });
  return [...SANDBOX, ...listed, ...embeddings].sort(compareEntries);
}

export function catalogueText(
  models: readonly Listed[] = MODELS,
  embeddingModels: readonly ListedEmbedding[] = EMBEDDING_MODELS,
): string {
  return `${JSON.stringify(buildCatalogue(models, embeddingModels), null, 2)}\n`;
}

if (import.meta.main) {
  const path = fileURLToPath(OUTPUT);
  mkdirSync(new URL('.', OUTPUT), { recursive: true });
  const text = catalogueText();
  writeFileSync(path, text);
  const counts = new Map<string, number>();
  for (const entry of JSON.parse(text) as CatalogueEntry[])
    counts.set(entry.provider, (counts.get(entry.provider) ?? 0) + 1);
  process.stdout.write(
    `Wrote ${path}: ${[...counts.values()].reduce((a, b) => a + b, 0)} models (${[...counts].map(([p, n]) => `${p} ${n}`).join(', ')})\n`,
  );
}

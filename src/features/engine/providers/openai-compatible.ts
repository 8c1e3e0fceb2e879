// The services that speak OpenAI's API, through @ai-sdk/openai-compatible: hosted ones enabled by their key (Groq,
// Together, DeepSeek, OpenRouter), and self-hosted servers enabled by their base URL (Ollama, vLLM, LM Studio), whose
// models the operator names in `<NAME>_MODELS` (catalogue id `<name>:<model>`, free, with the configured context
// window).
import { createRequire } from 'node:module';
import type { EmbeddingModelV4, LanguageModelV4 } from '@ai-sdk/provider';
import { type HostedSettings, hosted, type Provider, type ProviderName, positiveInteger, url } from './provider.ts';
import { upstreamFetch } from './upstream-fetch.ts';

// Loaded when a model is first built, or by loadProviderPackages: a process loads only its providers' packages.
const load = () =>
  createRequire(import.meta.url)('@ai-sdk/openai-compatible') as typeof import('@ai-sdk/openai-compatible');

/** A self-hosted OpenAI-compatible server's settings: the models the operator named, and their context window. */
export interface SelfHostedSettings {
  apiKey: string | undefined;
  baseUrl: string;
  models: string[];
  contextWindow: number;
}

/** The chat model `id` of the service `name` at `baseURL`. */
function chatModel(name: string, apiKey: string | undefined, baseURL: string, id: string): LanguageModelV4 {
  return load()
    .createOpenAICompatible({
      name,
      apiKey,
      baseURL,
      fetch: upstreamFetch,
      includeUsage: true,
      supportsStructuredOutputs: true,
    })
    .chatModel(id);
}

function embeddingModel(name: string, apiKey: string | undefined, baseURL: string, id: string): EmbeddingModelV4 {
  return load().createOpenAICompatible({ name, apiKey, baseURL, fetch: upstreamFetch }).embeddingModel(id);
}

/** An OpenAI-compatible service (Groq, Together…): the compatible package at its own base URL. */
function compatible(
  name: string,
  keyVariable: string,
  baseUrlVariable: string,
  defaultBaseUrl: string,
): Provider<HostedSettings> {
  return hosted(keyVariable, baseUrlVariable, {
    languageModel: ({ apiKey, baseUrl }, id) => chatModel(name, apiKey, baseUrl ?? defaultBaseUrl, id),
    embeddingModel: ({ apiKey, baseUrl }, id) => embeddingModel(name, apiKey, baseUrl ?? defaultBaseUrl, id),
    load,
  });
}

/** A self-hosted model's catalogue id: lower case, `/` as `-`, after the provider's name. */
export function selfHostedId(provider: string, model: string): string {
  return `${provider}:${model.toLowerCase().replace(/\//g, '-')}`.slice(0, 100);
}

/** A self-hosted OpenAI-compatible server (Ollama, vLLM, LM Studio): enabled by its base URL, its models named in
 *  `<NAME>_MODELS` (catalogue id `<name>:<model>`, free, with the configured context window). */
function selfHosted(name: ProviderName, prefix: string): Provider<SelfHostedSettings> {
  const modelsVariable = `${prefix}_MODELS`;
  const baseUrlVariable = `${prefix}_BASE_URL`;
  return {
    enabledBy: `${baseUrlVariable} and ${modelsVariable}`,
    read(env, fail) {
      const baseUrl = url(env, baseUrlVariable, fail);
      if (!baseUrl) return undefined;
      const models = (env[modelsVariable] ?? '')
        .split(',')
        .map((model) => model.trim())
        .filter(Boolean);
      for (const model of models) {
        if (!/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,80}$/.test(model))
          fail(`${modelsVariable}: ${model} is not a model name (letters, digits, . _ : / -)`);
      }
      const contextWindow = positiveInteger(env, `${prefix}_CONTEXT_WINDOW`, 8192, 10_000_000, fail);
      return { apiKey: env[`${prefix}_API_KEY`] || undefined, baseUrl, models, contextWindow };
    },
    languageModel: ({ apiKey, baseUrl }, id) => chatModel(name, apiKey, baseUrl, id),
    embeddingModel: ({ apiKey, baseUrl }, id) => embeddingModel(name, apiKey, baseUrl, id),
    load,
    models: ({ models, contextWindow }) =>
      models.map((model) => ({
        id: selfHostedId(name, model),
        provider: name,
        upstream_id: model,
        owned_by: name,
        name: `${model} (${name})`,
        created: 0,
        context_window: contextWindow,
        max_output_tokens: contextWindow,
        capabilities: ['chat', 'streaming', 'json_mode'],
        pricing: { input_per_million_usd: 0, cached_input_per_million_usd: null, output_per_million_usd: 0 },
        regions: ['eu', 'us'],
        deprecated: false,
        deprecation_date: null,
      })),
  };
}

export const groq = compatible('groq', 'GROQ_API_KEY', 'GROQ_BASE_URL', 'https://api.groq.com/openai/v1');
export const together = compatible('together', 'TOGETHER_API_KEY', 'TOGETHER_BASE_URL', 'https://api.together.xyz/v1');
export const deepseek = compatible('deepseek', 'DEEPSEEK_API_KEY', 'DEEPSEEK_BASE_URL', 'https://api.deepseek.com/v1');
export const openrouter = compatible(
  'openrouter',
  'OPENROUTER_API_KEY',
  'OPENROUTER_BASE_URL',
  'https://openrouter.ai/api/v1',
);
export const ollama = selfHosted('ollama', 'OLLAMA');
export const vllm = selfHosted('vllm', 'VLLM');
export const lmstudio = selfHosted('lmstudio', 'LMSTUDIO');

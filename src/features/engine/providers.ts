// The AI providers, as a registry in which each provider owns its settings: the variables that configure it (the
// README's configuration table), read from the environment when the engine is built, and how it builds the AI SDK
// models of its catalogue entries. A hosted provider is enabled by its key, a self-hosted server by its base URL, the
// local provider by its model file; the sandbox always is. Every base URL can be overridden, which is how tests put a
// fake upstream on loopback in front of the real provider code. Features never build a model themselves: the engine
// does, through here. A provider is added here, with its models in the catalogue.
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename } from 'node:path';
import type { EmbeddingModelV4, LanguageModelV4 } from '@ai-sdk/provider';
import type { components } from '../../../generated/openapi.ts';
import type { CatalogueEntry } from './catalogue.ts';
import { localModel } from './local.ts';
import { sandboxModel } from './sandbox.ts';
import { sandboxEmbeddingModel } from './sandbox-embedding.ts';
import { upstreamFetch } from './upstream-fetch.ts';

const require = createRequire(import.meta.url);
/**
 * The providers' packages, each loaded when a model of a provider that uses it is first built, or by
 * loadProviderPackages: a process loads the packages of the providers it is configured for, not all of them.
 */
const packages = {
  anthropic: () => require('@ai-sdk/anthropic') as typeof import('@ai-sdk/anthropic'),
  google: () => require('@ai-sdk/google') as typeof import('@ai-sdk/google'),
  mistral: () => require('@ai-sdk/mistral') as typeof import('@ai-sdk/mistral'),
  openai: () => require('@ai-sdk/openai') as typeof import('@ai-sdk/openai'),
  compatible: () => require('@ai-sdk/openai-compatible') as typeof import('@ai-sdk/openai-compatible'),
};

export type ProviderName = components['schemas']['ModelProvider'];
export type Environment = Readonly<Record<string, string | undefined>>;
/** Reports a variable whose value does not parse: a configuration error at start. */
export type Fail = (message: string) => never;

/** One provider of the registry. */
interface Provider<Settings> {
  /** What to set to make it available (the `model_unavailable` problem names it); null: always available. */
  enabledBy: string | null;
  /** Its settings from the environment, or undefined when the environment does not configure it. */
  read(env: Environment, fail: Fail): Settings | undefined;
  languageModel(settings: Settings, upstreamId: string): LanguageModelV4;
  /** Its embedding models; a provider without any has none. */
  embeddingModel?(settings: Settings, upstreamId: string): EmbeddingModelV4;
  /** The models it adds to the catalogue beside the committed ones: those the operator named. */
  models?(settings: Settings): CatalogueEntry[];
  /** Loads its package (loadProviderPackages). */
  load?(): unknown;
}

/** A hosted provider's or an OpenAI-compatible service's settings. */
export interface HostedSettings {
  apiKey: string;
  /** The overridden base URL, if any. */
  baseUrl: string | undefined;
}

/** A self-hosted OpenAI-compatible server's settings: the models the operator named, and their context window. */
export interface SelfHostedSettings {
  apiKey: string | undefined;
  baseUrl: string;
  models: string[];
  contextWindow: number;
}

/** The `local` provider: one GGUF file, run in this process by node-llama-cpp. */
export interface LocalSettings {
  modelPath: string;
  /** The model's catalogue id is `local:<name>`. */
  name: string;
  /** The largest context (prompt and answer) of a call, in tokens: the catalogue's context window. */
  contextSize: number;
  /** CPU threads per call; undefined lets llama.cpp choose (every core). */
  threads: number | undefined;
}

function positiveInteger(env: Environment, name: string, fallback: number, max: number, fail: Fail): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > max)
    fail(`${name} must be an integer from 0 to ${max}, got ${raw}`);
  return value;
}

function url(env: Environment, name: string, fail: Fail): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  try {
    const parsed = new URL(raw);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http');
  } catch {
    fail(`${name} must be an http or https URL, got ${raw}`);
  }
  return raw.replace(/\/$/, '');
}

/** A provider with a package of its own, enabled by its key (`<NAME>_API_KEY`) at an overridable base URL. */
function hosted(
  keyVariable: string,
  baseUrlVariable: string,
  build: {
    languageModel(settings: HostedSettings, id: string): LanguageModelV4;
    embeddingModel?(settings: HostedSettings, id: string): EmbeddingModelV4;
    load(): unknown;
  },
): Provider<HostedSettings> {
  return {
    enabledBy: keyVariable,
    read(env, fail) {
      const baseUrl = url(env, baseUrlVariable, fail);
      const apiKey = env[keyVariable];
      return apiKey ? { apiKey, baseUrl } : undefined;
    },
    ...build,
  };
}

/** An OpenAI-compatible service (Groq, Together…): the compatible package at its own base URL. */
function compatible(
  name: string,
  keyVariable: string,
  baseUrlVariable: string,
  defaultBaseUrl: string,
): Provider<HostedSettings> {
  return hosted(keyVariable, baseUrlVariable, {
    languageModel: ({ apiKey, baseUrl }, id) =>
      packages
        .compatible()
        .createOpenAICompatible({
          name,
          apiKey,
          baseURL: baseUrl ?? defaultBaseUrl,
          fetch: upstreamFetch,
          includeUsage: true,
          supportsStructuredOutputs: true,
        })
        .chatModel(id),
    embeddingModel: ({ apiKey, baseUrl }, id) =>
      packages
        .compatible()
        .createOpenAICompatible({ name, apiKey, baseURL: baseUrl ?? defaultBaseUrl, fetch: upstreamFetch })
        .embeddingModel(id),
    load: packages.compatible,
  });
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
    languageModel: ({ apiKey, baseUrl }, id) =>
      packages
        .compatible()
        .createOpenAICompatible({
          name,
          apiKey,
          baseURL: baseUrl,
          fetch: upstreamFetch,
          includeUsage: true,
          supportsStructuredOutputs: true,
        })
        .chatModel(id),
    embeddingModel: ({ apiKey, baseUrl }, id) =>
      packages
        .compatible()
        .createOpenAICompatible({ name, apiKey, baseURL: baseUrl, fetch: upstreamFetch })
        .embeddingModel(id),
    load: packages.compatible,
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

/** A self-hosted model's catalogue id: lower case, `/` as `-`, after the provider's name. */
export function selfHostedId(provider: string, model: string): string {
  return `${provider}:${model.toLowerCase().replace(/\//g, '-')}`.slice(0, 100);
}

const local: Provider<LocalSettings> = {
  enabledBy: 'LOCAL_MODEL_PATH',
  read(env, fail) {
    const modelPath = env.LOCAL_MODEL_PATH;
    if (!modelPath) return undefined;
    // Checked at start: a mistyped path is a configuration error now, not a 503 at the first call.
    let isFile = false;
    try {
      isFile = statSync(modelPath).isFile();
    } catch {
      // not there, or not readable: the same message
    }
    if (!isFile) fail(`LOCAL_MODEL_PATH must name a GGUF model file, got ${modelPath}`);
    const name =
      env.LOCAL_MODEL_NAME ||
      basename(modelPath)
        .replace(/\.gguf$/i, '')
        .toLowerCase();
    if (!/^[a-z0-9][a-z0-9._-]{0,80}$/.test(name))
      fail(`LOCAL_MODEL_NAME must be lower-case letters, digits, . _ - (from the file name when unset), got ${name}`);
    const contextSize = positiveInteger(env, 'LOCAL_MODEL_CONTEXT_SIZE', 4096, 1_048_576, fail);
    if (contextSize < 256) fail(`LOCAL_MODEL_CONTEXT_SIZE must be at least 256, got ${contextSize}`);
    const threads = positiveInteger(env, 'LOCAL_MODEL_THREADS', 0, 256, fail);
    return { modelPath, name, contextSize, threads: threads || undefined };
  },
  languageModel: ({ modelPath, contextSize, threads }, id) => localModel(modelPath, id, { contextSize, threads }),
  models: ({ name, contextSize }) => [
    {
      id: `local:${name}`,
      provider: 'local',
      upstream_id: name,
      owned_by: 'local',
      name: `${name} (local GGUF)`,
      created: 0,
      context_window: contextSize,
      max_output_tokens: contextSize,
      // JSON mode and JSON schemas are grammars that constrain llama.cpp's sampling (src/features/engine/local.ts).
      capabilities: ['chat', 'streaming', 'json_mode', 'json_schema'],
      pricing: { input_per_million_usd: 0, cached_input_per_million_usd: null, output_per_million_usd: 0 },
      regions: ['eu', 'us'],
      deprecated: false,
      deprecation_date: null,
    },
  ],
};

const sandbox: Provider<Record<string, never>> = {
  enabledBy: null,
  read: () => ({}),
  languageModel: (_settings, id) => sandboxModel(id),
  embeddingModel: (_settings, id) => sandboxEmbeddingModel(id),
};

/** Every provider of the catalogue. */
const registry = {
  sandbox,
  openai: hosted('OPENAI_API_KEY', 'OPENAI_BASE_URL', {
    // Chat Completions (not the Responses API): every OpenAI chat model speaks it, and so does our own wire format.
    languageModel: ({ apiKey, baseUrl }, id) =>
      packages.openai().createOpenAI({ apiKey, baseURL: baseUrl, fetch: upstreamFetch }).chat(id),
    embeddingModel: ({ apiKey, baseUrl }, id) =>
      packages.openai().createOpenAI({ apiKey, baseURL: baseUrl, fetch: upstreamFetch }).embedding(id),
    load: packages.openai,
  }),
  anthropic: hosted('ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', {
    languageModel: ({ apiKey, baseUrl }, id) =>
      packages.anthropic().createAnthropic({ apiKey, baseURL: baseUrl, fetch: upstreamFetch })(id),
    load: packages.anthropic,
  }),
  google: hosted('GOOGLE_GENERATIVE_AI_API_KEY', 'GOOGLE_BASE_URL', {
    languageModel: ({ apiKey, baseUrl }, id) =>
      packages.google().createGoogleGenerativeAI({ apiKey, baseURL: baseUrl, fetch: upstreamFetch })(id),
    embeddingModel: ({ apiKey, baseUrl }, id) =>
      packages.google().createGoogleGenerativeAI({ apiKey, baseURL: baseUrl, fetch: upstreamFetch }).embeddingModel(id),
    load: packages.google,
  }),
  mistral: hosted('MISTRAL_API_KEY', 'MISTRAL_BASE_URL', {
    languageModel: ({ apiKey, baseUrl }, id) =>
      packages.mistral().createMistral({ apiKey, baseURL: baseUrl, fetch: upstreamFetch })(id),
    embeddingModel: ({ apiKey, baseUrl }, id) =>
      packages.mistral().createMistral({ apiKey, baseURL: baseUrl, fetch: upstreamFetch }).embeddingModel(id),
    load: packages.mistral,
  }),
  groq: compatible('groq', 'GROQ_API_KEY', 'GROQ_BASE_URL', 'https://api.groq.com/openai/v1'),
  together: compatible('together', 'TOGETHER_API_KEY', 'TOGETHER_BASE_URL', 'https://api.together.xyz/v1'),
  deepseek: compatible('deepseek', 'DEEPSEEK_API_KEY', 'DEEPSEEK_BASE_URL', 'https://api.deepseek.com/v1'),
  openrouter: compatible('openrouter', 'OPENROUTER_API_KEY', 'OPENROUTER_BASE_URL', 'https://openrouter.ai/api/v1'),
  ollama: selfHosted('ollama', 'OLLAMA'),
  vllm: selfHosted('vllm', 'VLLM'),
  lmstudio: selfHosted('lmstudio', 'LMSTUDIO'),
  local,
} satisfies { [P in ProviderName]: unknown };

type Registry = typeof registry;
type SettingsOf<P extends ProviderName> = Registry[P] extends Provider<infer S> ? S : never;

/** The providers the environment configures, each with its settings, and the limits of every call. */
export interface ProvidersConfig {
  /** A provider absent here is not available. */
  configured: { [P in ProviderName]?: SettingsOf<P> };
  /** How long one model call may take in all before it is abandoned (`upstream_unavailable`). */
  timeoutMs: number;
  /** How often a call the provider calls retryable (429, 5xx, connection errors) is tried again. */
  maxRetries: number;
  /** The image bytes of requests this process holds at once (images.ts, readImages). */
  imageBytesInFlight: number;
}

/** Reads every provider's settings from the environment; `fail` reports a value that does not parse. */
export function loadProvidersConfig(env: Environment, fail: Fail): ProvidersConfig {
  const configured: Record<string, unknown> = {};
  for (const [name, provider] of Object.entries(registry) as [ProviderName, Provider<unknown>][]) {
    const settings = provider.read(env, fail);
    if (settings !== undefined) configured[name] = settings;
  }
  return {
    configured: configured as ProvidersConfig['configured'],
    timeoutMs: positiveInteger(env, 'PROVIDER_TIMEOUT_MS', 300_000, 3_600_000, fail) || 300_000,
    maxRetries: positiveInteger(env, 'PROVIDER_MAX_RETRIES', 2, 10, fail),
    imageBytesInFlight: positiveInteger(env, 'IMAGE_BYTES_IN_FLIGHT', 256 * 1024 * 1024, 64 * 1024 ** 3, fail),
  };
}

/** The variable a user sets to make a provider available (the `model_unavailable` problem names it). */
export function enablingVariable(provider: ProviderName): string | null {
  return registry[provider].enabledBy;
}

function providerOf<P extends ProviderName>(
  config: ProvidersConfig,
  provider: P,
): { definition: Provider<SettingsOf<P>>; settings: SettingsOf<P> } {
  const settings = config.configured[provider];
  if (settings === undefined) throw new Error(`provider ${provider} is not configured`);
  return { definition: registry[provider] as unknown as Provider<SettingsOf<P>>, settings: settings as SettingsOf<P> };
}

/** The AI SDK model that serves `upstreamId` at `provider`; the provider must be configured. */
export function languageModel(config: ProvidersConfig, provider: ProviderName, upstreamId: string): LanguageModelV4 {
  const { definition, settings } = providerOf(config, provider);
  return definition.languageModel(settings, upstreamId);
}

/** The AI SDK embedding model that serves `upstreamId` at `provider`; the provider must be configured. */
export function embeddingModel(config: ProvidersConfig, provider: ProviderName, upstreamId: string): EmbeddingModelV4 {
  const { definition, settings } = providerOf(config, provider);
  if (!definition.embeddingModel) throw new Error(`${provider} serves no embedding model`);
  return definition.embeddingModel(settings, upstreamId);
}

/** Loads the packages of the configured providers, so that their first call does not wait for that. */
export function loadProviderPackages(config: ProvidersConfig): void {
  for (const name of Object.keys(config.configured) as ProviderName[]) (registry[name] as Provider<unknown>).load?.();
}

/** The models the configured providers add to the catalogue (self-hosted servers' and the local file's). */
export function configuredModels(config: ProvidersConfig): CatalogueEntry[] {
  return (Object.entries(config.configured) as [ProviderName, unknown][]).flatMap(
    ([name, settings]) => (registry[name] as Provider<unknown>).models?.(settings) ?? [],
  );
}

// The AI providers this server can call, read once from the environment (the README's configuration table), and the
// AI SDK language or embedding model of a catalogue entry. A provider is enabled by its key (or, for self-hosted servers, by its
// base URL); every base URL can be overridden, which is how tests put a fake upstream on loopback in front of the
// real provider code. Features never build a model themselves: the engine does, through here.
import { statSync } from 'node:fs';
import { basename } from 'node:path';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createMistral } from '@ai-sdk/mistral';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { EmbeddingModelV4, LanguageModelV4 } from '@ai-sdk/provider';
import type { components } from '../../../generated/openapi.ts';
import { localModel } from './local.ts';
import { sandboxModel } from './sandbox.ts';
import { sandboxEmbeddingModel } from './sandbox-embedding.ts';

export type ProviderName = components['schemas']['ModelProvider'];

/** The providers that serve models of their own (SDK packages) or any OpenAI-compatible service. */
interface HostedProvider {
  kind: 'openai' | 'anthropic' | 'google' | 'mistral' | 'compatible';
  /** The variable that enables it. */
  keyVariable: string;
  baseUrlVariable: string;
  /** Where an OpenAI-compatible service answers when its base URL is not overridden. */
  defaultBaseUrl?: string;
}

/** Self-hosted OpenAI-compatible servers: enabled by their base URL, their models named in `<NAME>_MODELS`. */
interface SelfHostedProvider {
  kind: 'self-hosted';
  baseUrlVariable: string;
  keyVariable: string;
  modelsVariable: string;
  contextWindowVariable: string;
}

export const providerTable = {
  openai: { kind: 'openai', keyVariable: 'OPENAI_API_KEY', baseUrlVariable: 'OPENAI_BASE_URL' },
  anthropic: { kind: 'anthropic', keyVariable: 'ANTHROPIC_API_KEY', baseUrlVariable: 'ANTHROPIC_BASE_URL' },
  google: { kind: 'google', keyVariable: 'GOOGLE_GENERATIVE_AI_API_KEY', baseUrlVariable: 'GOOGLE_BASE_URL' },
  mistral: { kind: 'mistral', keyVariable: 'MISTRAL_API_KEY', baseUrlVariable: 'MISTRAL_BASE_URL' },
  groq: { kind: 'compatible', keyVariable: 'GROQ_API_KEY', baseUrlVariable: 'GROQ_BASE_URL', defaultBaseUrl: 'https://api.groq.com/openai/v1' },
  together: { kind: 'compatible', keyVariable: 'TOGETHER_API_KEY', baseUrlVariable: 'TOGETHER_BASE_URL', defaultBaseUrl: 'https://api.together.xyz/v1' },
  deepseek: { kind: 'compatible', keyVariable: 'DEEPSEEK_API_KEY', baseUrlVariable: 'DEEPSEEK_BASE_URL', defaultBaseUrl: 'https://api.deepseek.com/v1' },
  openrouter: { kind: 'compatible', keyVariable: 'OPENROUTER_API_KEY', baseUrlVariable: 'OPENROUTER_BASE_URL', defaultBaseUrl: 'https://openrouter.ai/api/v1' },
  ollama: { kind: 'self-hosted', baseUrlVariable: 'OLLAMA_BASE_URL', keyVariable: 'OLLAMA_API_KEY', modelsVariable: 'OLLAMA_MODELS', contextWindowVariable: 'OLLAMA_CONTEXT_WINDOW' },
  vllm: { kind: 'self-hosted', baseUrlVariable: 'VLLM_BASE_URL', keyVariable: 'VLLM_API_KEY', modelsVariable: 'VLLM_MODELS', contextWindowVariable: 'VLLM_CONTEXT_WINDOW' },
  lmstudio: { kind: 'self-hosted', baseUrlVariable: 'LMSTUDIO_BASE_URL', keyVariable: 'LMSTUDIO_API_KEY', modelsVariable: 'LMSTUDIO_MODELS', contextWindowVariable: 'LMSTUDIO_CONTEXT_WINDOW' },
} as const satisfies Record<Exclude<ProviderName, 'sandbox' | 'local'>, HostedProvider | SelfHostedProvider>;

type ConfigurableProvider = keyof typeof providerTable;

/** One configured provider: what the environment said. */
export interface ProviderSettings {
  apiKey: string | undefined;
  baseUrl: string | undefined;
  /** Self-hosted providers: the models the operator named, and their context window. */
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

export interface ProvidersConfig {
  /** The configured providers; a provider absent here is not available. */
  enabled: Partial<Record<ConfigurableProvider, ProviderSettings>>;
  /** The local model, when `LOCAL_MODEL_PATH` names one. */
  local: LocalSettings | undefined;
  /** How long one model call may take in all before it is abandoned (`upstream_unavailable`). */
  timeoutMs: number;
  /** How often a call the provider calls retryable (429, 5xx, connection errors) is tried again. */
  maxRetries: number;
}

/** The variable a user sets to make a provider available (the `model_unavailable` problem names it). */
export function enablingVariable(provider: ProviderName): string | null {
  if (provider === 'sandbox') return null;
  if (provider === 'local') return 'LOCAL_MODEL_PATH';
  const entry = providerTable[provider];
  return entry.kind === 'self-hosted' ? `${entry.baseUrlVariable} and ${entry.modelsVariable}` : entry.keyVariable;
}

function positiveInteger(env: NodeJS.ProcessEnv, name: string, fallback: number, max: number, fail: (message: string) => never): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > max) fail(`${name} must be an integer from 0 to ${max}, got ${raw}`);
  return value;
}

function url(env: NodeJS.ProcessEnv, name: string, fail: (message: string) => never): string | undefined {
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

/** Reads the providers' variables; `fail` reports a value that does not parse (a configuration error at start). */
export function loadProvidersConfig(env: NodeJS.ProcessEnv, fail: (message: string) => never): ProvidersConfig {
  const enabled: ProvidersConfig['enabled'] = {};
  for (const [name, entry] of Object.entries(providerTable) as [ConfigurableProvider, HostedProvider | SelfHostedProvider][]) {
    const apiKey = env[entry.keyVariable] || undefined;
    const baseUrl = url(env, entry.baseUrlVariable, fail);
    if (entry.kind === 'self-hosted') {
      if (!baseUrl) continue;
      const models = (env[entry.modelsVariable] ?? '')
        .split(',')
        .map((model) => model.trim())
        .filter(Boolean);
      for (const model of models) {
        if (!/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,80}$/.test(model)) fail(`${entry.modelsVariable}: ${model} is not a model name (letters, digits, . _ : / -)`);
      }
      const contextWindow = positiveInteger(env, entry.contextWindowVariable, 8192, 10_000_000, fail);
      enabled[name] = { apiKey, baseUrl, models, contextWindow };
    } else if (apiKey) {
      enabled[name] = { apiKey, baseUrl, models: [], contextWindow: 0 };
    }
  }
  return {
    enabled,
    local: loadLocalSettings(env, fail),
    timeoutMs: positiveInteger(env, 'PROVIDER_TIMEOUT_MS', 300_000, 3_600_000, fail) || 300_000,
    maxRetries: positiveInteger(env, 'PROVIDER_MAX_RETRIES', 2, 10, fail),
  };
}

function loadLocalSettings(env: NodeJS.ProcessEnv, fail: (message: string) => never): LocalSettings | undefined {
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
  const name = env.LOCAL_MODEL_NAME || basename(modelPath).replace(/\.gguf$/i, '').toLowerCase();
  if (!/^[a-z0-9][a-z0-9._-]{0,80}$/.test(name)) fail(`LOCAL_MODEL_NAME must be lower-case letters, digits, . _ - (from the file name when unset), got ${name}`);
  const contextSize = positiveInteger(env, 'LOCAL_MODEL_CONTEXT_SIZE', 4096, 1_048_576, fail);
  if (contextSize < 256) fail(`LOCAL_MODEL_CONTEXT_SIZE must be at least 256, got ${contextSize}`);
  const threads = positiveInteger(env, 'LOCAL_MODEL_THREADS', 0, 256, fail);
  return { modelPath, name, contextSize, threads: threads || undefined };
}

/** The AI SDK model that serves `upstreamId` at `provider`; the provider must be enabled (or be the sandbox). */
export function languageModel(config: ProvidersConfig, provider: ProviderName, upstreamId: string): LanguageModelV4 {
  if (provider === 'sandbox') return sandboxModel(upstreamId);
  if (provider === 'local') {
    if (!config.local) throw new Error('the local provider is not configured');
    return localModel(config.local.modelPath, upstreamId, { contextSize: config.local.contextSize, threads: config.local.threads });
  }
  const settings = config.enabled[provider];
  if (!settings) throw new Error(`provider ${provider} is not configured`);
  const { apiKey, baseUrl } = settings;
  const entry: HostedProvider | SelfHostedProvider = providerTable[provider];
  switch (entry.kind) {
    case 'openai':
      // Chat Completions (not the Responses API): every OpenAI chat model speaks it, and so does our own wire format.
      return createOpenAI({ apiKey, baseURL: baseUrl }).chat(upstreamId);
    case 'anthropic':
      return createAnthropic({ apiKey, baseURL: baseUrl })(upstreamId);
    case 'google':
      return createGoogleGenerativeAI({ apiKey, baseURL: baseUrl })(upstreamId);
    case 'mistral':
      return createMistral({ apiKey, baseURL: baseUrl })(upstreamId);
    case 'compatible':
    case 'self-hosted':
      return createOpenAICompatible({
        name: provider,
        apiKey,
        baseURL: baseUrl ?? (entry.kind === 'compatible' ? entry.defaultBaseUrl : undefined) ?? '',
        includeUsage: true,
        supportsStructuredOutputs: true,
      }).chatModel(upstreamId);
  }
}

/** The AI SDK embedding model that serves `upstreamId` at `provider`; the provider must be enabled (or be the sandbox). */
export function embeddingModel(config: ProvidersConfig, provider: ProviderName, upstreamId: string): EmbeddingModelV4 {
  if (provider === 'sandbox') return sandboxEmbeddingModel(upstreamId);
  if (provider === 'local') throw new Error('the local provider serves no embedding model');
  const settings = config.enabled[provider];
  if (!settings) throw new Error(`provider ${provider} is not configured`);
  const { apiKey, baseUrl } = settings;
  const entry: HostedProvider | SelfHostedProvider = providerTable[provider];
  switch (entry.kind) {
    case 'openai':
      return createOpenAI({ apiKey, baseURL: baseUrl }).embedding(upstreamId);
    case 'google':
      return createGoogleGenerativeAI({ apiKey, baseURL: baseUrl }).embeddingModel(upstreamId);
    case 'mistral':
      return createMistral({ apiKey, baseURL: baseUrl }).embeddingModel(upstreamId);
    case 'anthropic':
      throw new Error('anthropic serves no embedding model');
    case 'compatible':
    case 'self-hosted':
      return createOpenAICompatible({ name: provider, apiKey, baseURL: baseUrl ?? (entry.kind === 'compatible' ? entry.defaultBaseUrl : undefined) ?? '' }).embeddingModel(upstreamId);
  }
}

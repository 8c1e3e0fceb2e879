// The AI providers, as a registry in which each provider owns its settings: the variables that configure it (the
// README's configuration table), read from the environment when the engine is built, and how it builds the AI SDK
// models of its catalogue entries. A hosted provider is enabled by its key, a self-hosted server by its base URL, the
// local provider by its model file; the sandbox always is. Every base URL can be overridden, which is how tests put a
// fake upstream on loopback in front of the real provider code. Features never build a model themselves: the engine
// does, through here. A provider is a file (or a folder) beside this one, listed here, with its models in the catalogue.
import type { EmbeddingModelV4, LanguageModelV4 } from '@ai-sdk/provider';
import type { CatalogueEntry } from '../catalogue-entry.ts';
import { anthropic } from './anthropic.ts';
import { google } from './google.ts';
import { local } from './local.ts';
import { mistral } from './mistral.ts';
import { openai } from './openai.ts';
import { deepseek, groq, lmstudio, ollama, openrouter, together, vllm } from './openai-compatible.ts';
import { wireChat } from './openai-wire/index.ts';
import { type Environment, type Fail, type Provider, type ProviderName, positiveInteger } from './provider.ts';
import { sandbox } from './sandbox/provider.ts';

/** Every provider of the catalogue. */
const registry = {
  sandbox,
  // The services that speak OpenAI's Chat Completions chat through our lean client (openai-wire/).
  openai: wireChat('openai', openai),
  anthropic,
  google,
  mistral,
  groq: wireChat('groq', groq),
  together: wireChat('together', together),
  deepseek: wireChat('deepseek', deepseek),
  openrouter: wireChat('openrouter', openrouter),
  ollama: wireChat('ollama', ollama),
  vllm: wireChat('vllm', vllm),
  lmstudio: wireChat('lmstudio', lmstudio),
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

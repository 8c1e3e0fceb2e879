// What a provider of the registry (registry.ts) is: what enables it, how it reads its settings from the environment,
// how it builds the AI SDK models of its catalogue entries. Each provider is a file (or a folder) beside this one.
import type { EmbeddingModelV4, LanguageModelV4 } from '@ai-sdk/provider';
import type { components } from '../../../../generated/openapi.ts';
import type { CatalogueEntry } from '../catalogue-entry.ts';

export type ProviderName = components['schemas']['ModelProvider'];
export type Environment = Readonly<Record<string, string | undefined>>;
/** Reports a variable whose value does not parse: a configuration error at start. */
export type Fail = (message: string) => never;

/** One provider of the registry. */
export interface Provider<Settings> {
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

export function positiveInteger(env: Environment, name: string, fallback: number, max: number, fail: Fail): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > max)
    fail(`${name} must be an integer from 0 to ${max}, got ${raw}`);
  return value;
}

export function url(env: Environment, name: string, fail: Fail): string | undefined {
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
export function hosted(
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

// The lean client of OpenAI's Chat Completions (model.ts) as the language models of the providers that speak it:
// OpenAI, Groq, Together, DeepSeek, OpenRouter, Ollama, vLLM and LM Studio. `wireChat` keeps a provider's settings,
// embeddings and catalogue (its own file beside this folder) and builds its chat models here instead of through
// the official package (docs/decisions.md, "A lean client for OpenAI's wire").
import type { LanguageModelV4 } from '@ai-sdk/provider';
import type { Provider } from '../provider.ts';
import { OpenAiWireChatModel, type WireSettings } from './model.ts';

export { OpenAiWireChatModel, type WireSettings } from './model.ts';

/** The services that speak the wire, with their dialect and, for the hosted ones, the API's default base URL. */
const services = {
  openai: { dialect: 'openai', baseUrl: 'https://api.openai.com/v1' },
  groq: { dialect: 'compatible', baseUrl: 'https://api.groq.com/openai/v1' },
  together: { dialect: 'compatible', baseUrl: 'https://api.together.xyz/v1' },
  deepseek: { dialect: 'compatible', baseUrl: 'https://api.deepseek.com/v1' },
  openrouter: { dialect: 'compatible', baseUrl: 'https://openrouter.ai/api/v1' },
  ollama: { dialect: 'compatible', baseUrl: undefined },
  vllm: { dialect: 'compatible', baseUrl: undefined },
  lmstudio: { dialect: 'compatible', baseUrl: undefined },
} as const satisfies Record<string, { dialect: WireSettings['dialect']; baseUrl: string | undefined }>;

export type WireService = keyof typeof services;

/** The chat model `id` of `service` at `baseUrl` (its default when undefined). */
export function wireChatModel(
  service: WireService,
  settings: { apiKey: string | undefined; baseUrl: string | undefined; fetch?: typeof globalThis.fetch },
  id: string,
): LanguageModelV4 {
  const { dialect, baseUrl } = services[service];
  const url = settings.baseUrl ?? baseUrl;
  if (url === undefined) throw new Error(`${service} has no base URL`);
  return new OpenAiWireChatModel(id, {
    dialect,
    name: service,
    baseUrl: url,
    apiKey: settings.apiKey,
    fetch: settings.fetch,
  });
}

/** `provider` with its chat models built by the lean client. */
export function wireChat<S extends { apiKey: string | undefined; baseUrl: string | undefined }>(
  service: WireService,
  provider: Provider<S>,
): Provider<S> {
  return { ...provider, languageModel: (settings, id) => wireChatModel(service, settings, id) };
}

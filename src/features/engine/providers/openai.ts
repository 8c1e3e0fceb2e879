// OpenAI, through @ai-sdk/openai: enabled by OPENAI_API_KEY, at OPENAI_BASE_URL when set.
import { createRequire } from 'node:module';
import { hosted } from './provider.ts';
import { upstreamFetch } from './upstream-fetch.ts';

// Loaded when a model is first built, or by loadProviderPackages: a process loads only its providers' packages.
const load = () => createRequire(import.meta.url)('@ai-sdk/openai') as typeof import('@ai-sdk/openai');

export const openai = hosted('OPENAI_API_KEY', 'OPENAI_BASE_URL', {
  // Chat Completions (not the Responses API): every OpenAI chat model speaks it, and so does our own wire format.
  languageModel: ({ apiKey, baseUrl }, id) =>
    load().createOpenAI({ apiKey, baseURL: baseUrl, fetch: upstreamFetch }).chat(id),
  embeddingModel: ({ apiKey, baseUrl }, id) =>
    load().createOpenAI({ apiKey, baseURL: baseUrl, fetch: upstreamFetch }).embedding(id),
  load,
});

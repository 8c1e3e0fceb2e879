// Mistral, through @ai-sdk/mistral: enabled by MISTRAL_API_KEY, at MISTRAL_BASE_URL when set.
import { createRequire } from 'node:module';
import { hosted } from './provider.ts';
import { upstreamFetch } from './upstream-fetch.ts';

// Loaded when a model is first built, or by loadProviderPackages: a process loads only its providers' packages.
const load = () => createRequire(import.meta.url)('@ai-sdk/mistral') as typeof import('@ai-sdk/mistral');

export const mistral = hosted('MISTRAL_API_KEY', 'MISTRAL_BASE_URL', {
  languageModel: ({ apiKey, baseUrl }, id) =>
    load().createMistral({ apiKey, baseURL: baseUrl, fetch: upstreamFetch })(id),
  embeddingModel: ({ apiKey, baseUrl }, id) =>
    load().createMistral({ apiKey, baseURL: baseUrl, fetch: upstreamFetch }).embeddingModel(id),
  load,
});

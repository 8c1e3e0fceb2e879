// Google's Gemini API, through @ai-sdk/google: enabled by GOOGLE_GENERATIVE_AI_API_KEY, at GOOGLE_BASE_URL when set.
import { createRequire } from 'node:module';
import { hosted } from './provider.ts';
import { upstreamFetch } from './upstream-fetch.ts';

// Loaded when a model is first built, or by loadProviderPackages: a process loads only its providers' packages.
const load = () => createRequire(import.meta.url)('@ai-sdk/google') as typeof import('@ai-sdk/google');

export const google = hosted('GOOGLE_GENERATIVE_AI_API_KEY', 'GOOGLE_BASE_URL', {
  languageModel: ({ apiKey, baseUrl }, id) =>
    load().createGoogleGenerativeAI({ apiKey, baseURL: baseUrl, fetch: upstreamFetch })(id),
  embeddingModel: ({ apiKey, baseUrl }, id) =>
    load().createGoogleGenerativeAI({ apiKey, baseURL: baseUrl, fetch: upstreamFetch }).embeddingModel(id),
  load,
});

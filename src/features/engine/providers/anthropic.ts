// Anthropic, through @ai-sdk/anthropic: enabled by ANTHROPIC_API_KEY, at ANTHROPIC_BASE_URL when set. No embeddings.
import { createRequire } from 'node:module';
import { hosted } from './provider.ts';
import { upstreamFetch } from './upstream-fetch.ts';

// Loaded when a model is first built, or by loadProviderPackages: a process loads only its providers' packages.
const load = () => createRequire(import.meta.url)('@ai-sdk/anthropic') as typeof import('@ai-sdk/anthropic');

export const anthropic = hosted('ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', {
  languageModel: ({ apiKey, baseUrl }, id) =>
    load().createAnthropic({ apiKey, baseURL: baseUrl, fetch: upstreamFetch })(id),
  load,
});

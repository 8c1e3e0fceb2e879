// The engine feature: the content engine that every feature writing text calls (engine.ts), the model catalogue it
// serves (GET /v1/models), and the usage it records (GET /v1/usage). Three rooms: the generation pipeline (this
// folder), the providers (providers/, one file or folder each) and the style library (style/).
import type { Feature } from '../../platform/feature.ts';
import { withOpenAiErrorNaming } from '../../platform/openai-errors.ts';
import { usage } from './migrations/007_usage.ts';
import { usageRecordsProject } from './migrations/026_usage_records_project.ts';
import { modelHandlers } from './models.ts';
import { engineMetrics } from './observability.ts';
import { loadEncoding } from './tokens.ts';
import { usageHandlers } from './usage.ts';

export const engineFeature = {
  name: 'engine',
  handlers: { ...modelHandlers, ...usageHandlers },
  migrations: { '007_usage': usage, '026_usage_records_project': usageRecordsProject },
  // OpenAI SDKs' `models.retrieve` reads OpenAI's `error` object; OpenAI names the model of the path `model`.
  metrics: engineMetrics,
  problemShapes: { getModel: withOpenAiErrorNaming({ 'path/id': 'model' }) },
  // Every generation counts tokens (the context-window check, the sandbox models), and a configured provider's first
  // call would load its package: the first call would wait for these.
  preload: (platform) => {
    loadEncoding();
    platform.services.engine.loadProviderPackages();
  },
} satisfies Feature;

// The model catalogue and the providers, built once per process by src/services.ts.
export { Catalogue } from './catalogue.ts';
export type { CatalogueEntry } from './catalogue-entry.ts';
// Tokens as the engine counts them (the knowledge feature sizes its chunks with them).
export * as tokens from './counting.ts';
// Limits of the engine's inputs that the chat feature checks before a call, to answer OpenAI's errors.
export { MAX_TOKENS_PER_CALL } from './embeddings.ts';
// The public API: what other features and the entry points use (docs/server.md, "Dependency rules").
// The engine and its call: every feature that writes text or embeds goes through it, with these shapes.
export { Engine } from './engine.ts';
// Log probabilities of generated tokens, as the engine's events carry them (each wire writes them its own way).
export type {
  EngineMessage,
  FinishReason,
  Generated,
  GenerationEvent,
  GenerationRequest,
  TokenLogprob,
  TokenUsage,
} from './generation.ts';
// Retrieved passages as the engine's grounding writes them into a prompt (chatbots answer from them).
export { passagesBlock } from './grounding.ts';
export { IMAGE_LIMITS } from './images.ts';
export { certainLogprobs } from './logprobs.ts';
// Middleware: how the voices, policy and limits features take part in every call without the engine importing them.
export type { Admission, EngineMiddleware, ModelCall } from './middleware.ts';
export type { ProvidersConfig } from './providers/registry.ts';
export { loadProvidersConfig } from './providers/registry.ts';
// The sandbox provider: the tasks a feature's prompt can ask it for, and its embedding sizes (the catalogue script).
export * as sandbox from './providers/sandbox/index.ts';
// Typed refusals: each wire places what the engine refuses (the output budget, the prompt) at its own field.
export type { RefusalFields } from './refusal.ts';
export { placed } from './refusal.ts';
// Style measurement: the voices feature trains, describes and checks a voice with the measures the sandbox writes to.
export * as style from './style/index.ts';

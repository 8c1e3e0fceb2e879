// Engine middleware: what features add to every generation without the engine knowing them, the way the AI SDK's
// language-model middleware does (transform the call's parameters, wrap its stream). The voices feature's middleware
// puts a brand voice's instructions before the messages; the policy feature's checks every word that comes out. The
// engine runs each `transform` in the order given (before the context window is checked, so added instructions
// count), then wraps the events so that the first middleware is the outermost.
import type { JSONValue } from '@ai-sdk/provider';
import type { CatalogueEntry } from './catalogue.ts';
import type { GenerationEvent, GenerationRequest } from './engine.ts';

/** The brand voice a generation is written in, as the voice middleware resolved it (what the policy needs of it). */
export interface GenerationVoice {
  id: string;
  name: string;
  bannedPhrases: string[];
}

/**
 * A generation as the middleware see it: the request (whose messages a transform may change) and its model (the
 * request's `model`; with fallback models, the one that answers is named by the first event, `type: 'model'`).
 */
export interface PreparedGeneration {
  request: GenerationRequest;
  model: CatalogueEntry;
  /** Set by the voice middleware when the request names a voice. */
  voice: GenerationVoice | null;
  /**
   * Options for the provider, by provider name, merged into the call's `providerOptions`: how a middleware tells a
   * provider more than the messages say (the voice's sliders for the sandbox models, docs/engine.md).
   */
  providerOptions: Record<string, Record<string, JSONValue>>;
}

export interface EngineMiddleware {
  /** In logs and errors. */
  name: string;
  /** Changes the generation before any call (may throw a Problem to refuse it). */
  transform?(generation: PreparedGeneration): Promise<PreparedGeneration>;
  /** Wraps the generation's events (may hold text back, change it, or end the generation with a Problem). */
  wrap?(events: AsyncGenerator<GenerationEvent>, generation: PreparedGeneration): Promise<AsyncGenerator<GenerationEvent>>;
}

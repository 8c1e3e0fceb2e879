// Engine middleware: what features add to every generation without the engine knowing them, the way the AI SDK's
// language-model middleware does (transform the call's parameters, wrap its stream). The voices feature's middleware
// puts a brand voice's instructions before the messages; the policy feature's checks every word that comes out. The
// engine runs each `transform` in the order given (before the context window is checked, so added instructions
// count), then each `admit` (the spend limits refuse a call before it is made, and settle it once its usage is
// recorded), then wraps the events so that the first middleware is the outermost.
import type { JSONValue } from '@ai-sdk/provider';
import type { CatalogueEntry } from './catalogue-entry.ts';
import type { GenerationEvent, GenerationRequest } from './generation.ts';

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

/** A model call about to be made, as `admit` sees it: who it is for and the most it may cost. */
export interface ModelCall {
  workspaceId: string;
  apiKeyId: string | null;
  projectId: string | null;
  /** An upper bound of the call's cost (its prompt and all of its `max_tokens`, of every choice, at the model's
   *  prices), computed when asked: counting an embedding request's tokens is work a workspace without limits skips. */
  maxCostUsd(): number;
  now: Date;
}

/** Who a call is for, before its cost is known. */
export type CallCaller = Omit<ModelCall, 'maxCostUsd'>;

/** A call admitted by a middleware: `settle` runs once its usage is recorded, whatever happened to it. */
export interface Admission {
  settle(): Promise<void>;
}

export interface EngineMiddleware {
  /** In logs and errors. */
  name: string;
  /** Changes the generation before any call (may throw a Problem to refuse it). */
  transform?(generation: PreparedGeneration): Promise<PreparedGeneration>;
  /**
   * Admits a call (a generation's or an embedding's) before the provider is called, once its cost can be bounded:
   * throws a Problem to refuse it; what it returns is settled after the call's usage is recorded.
   */
  admit?(call: ModelCall): Promise<Admission | null>;
  /**
   * Refuses, before a request's costly preparation (reading its images), a call that `admit` would refuse whatever it
   * costs: one whose limit is already spent. It reserves nothing; `admit` still decides.
   */
  precheck?(caller: CallCaller): Promise<void>;
  /** Wraps the generation's events (may hold text back, change it, or end the generation with a Problem). */
  wrap?(
    events: AsyncGenerator<GenerationEvent>,
    generation: PreparedGeneration,
  ): Promise<AsyncGenerator<GenerationEvent>>;
}

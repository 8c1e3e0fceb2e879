// What a generation is, as features see it: the request (messages as parts, tools, sampling settings), the events of
// its stream and the answer collected from them. The Engine (engine.ts) takes and gives these; providers never see them.
import type { JSONSchema7, JSONValue } from '@ai-sdk/provider';
import type { components } from '../../../generated/openapi.ts';
import type { AuditOrigin } from '../../platform/audit.ts';
import type { CatalogueEntry } from './catalogue-entry.ts';

export type UsageFeature = components['schemas']['UsageFeature'];
/** A model tried before the one that answered, and the problem it failed with (or `model_unavailable`: skipped). */
export type ModelTried = components['schemas']['ModelTried'];
export type FinishReason = 'stop' | 'length' | 'content_filter' | 'tool_calls';

/** A function the model may call (OpenAI's `tools[].function`). */
export interface EngineTool {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object; `{ type: 'object', properties: {} }` when the caller gave none. */
  parameters: JSONSchema7;
  strict?: boolean;
}

export type EngineToolChoice = 'auto' | 'none' | 'required' | { name: string };

/** A tool call the model made; `arguments` is the JSON text the model wrote (OpenAI's `function.arguments`). */
export interface EngineToolCall {
  id: string;
  name: string;
  arguments: string;
}

export type EngineContentPart =
  | { type: 'text'; text: string }
  /** `data`: the bytes (from a data: URL, or fetched) or the https URL when passed to the provider as it is. */
  | { type: 'image'; data: Uint8Array | URL; mediaType: string; detail?: 'auto' | 'low' | 'high' };

export type EngineMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | EngineContentPart[] }
  | { role: 'assistant'; content: string; toolCalls?: EngineToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

export interface GenerationRequest {
  workspaceId: string;
  /** The API key the call is made with (usage by key); null for work no key started. */
  apiKeyId: string | null;
  feature: UsageFeature;
  /** A catalogue id. */
  model: string;
  /**
   * Catalogue ids to try in order when `model` fails before its first event with a rate limit or an outage (see
   * "Fallbacks" in docs/engine.md); a first entry that is `model` itself is the list's whole order (OpenRouter's form),
   * not a fallback. With any fallback, the first event names the model that answers.
   */
  fallbackModels?: string[];
  /**
   * The fallback models are a default (a project's), not the request's own: one that cannot serve this request (the
   * request's model, a capability missing, too small, no longer in the catalogue) is left out instead of refused.
   */
  fallbackModelsDefault?: boolean;
  messages: EngineMessage[];
  voiceId?: string | null;
  /** The project the output is for (its compliance rules apply too); null for none. */
  projectId?: string | null;
  /** The member who asked (the audit.policy.violation event's `user_id`); null for a service key or a visitor. */
  userId?: string | null;
  /** Who asked, for the audit entry of a blocked output; the engine itself (`system`) when not given. */
  origin?: AuditOrigin;
  /** Defaults to what is left of the context window, at most the model's output limit. */
  maxOutputTokens?: number | null;
  temperature?: number | null;
  topP?: number | null;
  presencePenalty?: number | null;
  frequencyPenalty?: number | null;
  seed?: number | null;
  stop?: string[];
  responseFormat?: { type: 'text' } | { type: 'json'; schema?: JSONSchema7; name?: string; description?: string };
  reasoningEffort?: 'minimal' | 'low' | 'medium' | 'high' | null;
  /** Alternative answers: the provider is called once for each. */
  n?: number;
  /** Functions the model may call. */
  tools?: EngineTool[];
  /** Default 'auto' when tools are given. */
  toolChoice?: EngineToolChoice;
  /** Whether the model may call several tools in one answer; default true. */
  parallelToolCalls?: boolean;
  /**
   * The log probabilities of the answer's tokens, with this many alternatives at each position (0 to 20); null or
   * absent for none. Needs a model with the `logprobs` capability.
   */
  logprobs?: number | null;
  /** Options for the provider, by provider name (`sandbox.task`: what the sandbox models write, docs/engine.md).
   *  Merged into the call's: the request's first, then what the middleware set, then the engine's own. */
  providerOptions?: Record<string, Record<string, JSONValue>>;
  /** How often a call the provider calls retryable is tried again; the server's PROVIDER_MAX_RETRIES when not given
   *  (a workflow step gives 0: its retries are the workflow's). */
  maxRetries?: number;
  signal: AbortSignal;
  now: Date;
}

export interface TokenUsage {
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
}

export type GenerationEvent =
  /** Only for a request with fallback models, and first: the model that answers, and those that failed before it. */
  | { type: 'model'; model: CatalogueEntry; tried: ModelTried[] }
  /** Text of a choice; with `logprobs` asked, the tokens it completes (a token may end in a later event's text). */
  | { type: 'text'; choice: number; text: string; logprobs?: TokenLogprob[] }
  /** A tool call begins: its position among the choice's calls (from 0), id and function name. */
  | { type: 'tool-call-start'; choice: number; index: number; id: string; name: string }
  /** The next fragment of a tool call's JSON arguments (append to the previous ones). */
  | { type: 'tool-call-delta'; choice: number; index: number; argumentsDelta: string }
  /** A tool call is complete (after its start and deltas): the whole arguments text. */
  | { type: 'tool-call'; choice: number; index: number; id: string; name: string; arguments: string }
  /** The end of a choice; with `logprobs` asked, tokens no text event carried (the provider gave them last). */
  | { type: 'finish'; choice: number; finishReason: FinishReason; logprobs?: TokenLogprob[] }
  /** The last event: the usage of every call together, and its cost. */
  | { type: 'usage'; usage: TokenUsage; costUsd: number };

export interface Generated {
  /** The model that answered: the request's, or with fallback models the one of them that did. */
  model: CatalogueEntry;
  /** With fallback models: those tried before the one that answered. */
  modelsTried?: ModelTried[];
  /** `logprobs`: the tokens of the text when the request asked for them, else null. */
  choices: { text: string; finishReason: FinishReason; toolCalls: EngineToolCall[]; logprobs: TokenLogprob[] | null }[];
  usage: TokenUsage;
  costUsd: number;
}

// Log probabilities of generated tokens, in the shape of OpenAI's Chat Completions (`logprobs.content`): logprobs.ts
// reads them from any provider.
/** A token the model could have written at a position. */
export interface TopLogprob {
  /** The text, or `bytes:` and the bytes escaped for bytes that are not whole characters (tokenText). */
  token: string;
  /** The natural logarithm of its probability: -9999 to 0. */
  logprob: number;
  /** Its UTF-8 bytes; null when the provider says it has none. */
  bytes: number[] | null;
}

/** A token the model wrote, and the most likely tokens at its position. */
export interface TokenLogprob extends TopLogprob {
  topLogprobs: TopLogprob[];
}

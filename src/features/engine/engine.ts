// The content engine: the one way a feature generates text. `engine.stream(request)` picks the model from the
// catalogue, refuses what cannot work before any call (unknown or unavailable model, a prompt over the context
// window; the same for the fallback models a request may name, tried in turn when a model's provider fails before its
// first token), runs the middleware that features registered (src/features/engine/middleware.ts: the brand voice,
// the output policy), calls the provider's AI SDK model (retrying what the provider calls retryable), streams the
// text of each of the `n` choices, and records the usage of every call, priced from the catalogue, when it ends:
// finished, failed or abandoned by its client (billed for what was generated).
// Features never call a provider SDK; they read the events below. The engine imports no feature.
//
// It calls the AI SDK's language models directly (`doStream`, the provider packages' own interface) rather than
// through `streamText`: our calls are single steps, and streamText's layers of web streams cost more than the
// provider call itself (`npm run bench:chat` measures the path).
import { setTimeout as sleep } from 'node:timers/promises';
import { APICallError, type EmbeddingModelV4, type JSONSchema7, type JSONValue, type LanguageModelV4, type LanguageModelV4CallOptions, type LanguageModelV4Prompt } from '@ai-sdk/provider';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { components } from '../../../generated/openapi.ts';
import type { AuditOrigin } from '../../platform/audit.ts';
import type { Metrics, ProviderOutcome } from '../../platform/metrics.ts';
import { providerSpan } from '../../platform/telemetry.ts';
import { Problem, validationFailed } from '../../platform/problems.ts';
import type { Database } from '../../storage/schema.ts';
import { Catalogue, type CatalogueEntry } from './catalogue.ts';
import { imageInfo, imageTokens } from './image-info.ts';
import { LocalContextExceeded } from './local.ts';
import { embedWith, type EmbeddingRequest, type Embeddings } from './embeddings.ts';
import type { Admission, EngineMiddleware, ModelCall, PreparedGeneration } from './middleware.ts';
import { recordUsage } from './usage-records.ts';
import { embeddingModel, languageModel, type ProvidersConfig } from './providers.ts';
import { countPromptTokens, countTokens } from './tokens.ts';

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
   * "Fallbacks" in docs/engine.md). With any, the first event names the model that answers.
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
  | { type: 'text'; choice: number; text: string }
  /** A tool call begins: its position among the choice's calls (from 0), id and function name. */
  | { type: 'tool-call-start'; choice: number; index: number; id: string; name: string }
  /** The next fragment of a tool call's JSON arguments (append to the previous ones). */
  | { type: 'tool-call-delta'; choice: number; index: number; argumentsDelta: string }
  /** A tool call is complete (after its start and deltas): the whole arguments text. */
  | { type: 'tool-call'; choice: number; index: number; id: string; name: string; arguments: string }
  | { type: 'finish'; choice: number; finishReason: FinishReason }
  /** The last event: the usage of every call together, and its cost. */
  | { type: 'usage'; usage: TokenUsage; costUsd: number };

export interface Generated {
  /** The model that answered: the request's, or with fallback models the one of them that did. */
  model: CatalogueEntry;
  /** With fallback models: those tried before the one that answered. */
  modelsTried?: ModelTried[];
  choices: { text: string; finishReason: FinishReason; toolCalls: EngineToolCall[] }[];
  usage: TokenUsage;
  costUsd: number;
}

/** A call as the middleware's `admit` sees it: who makes it, and a bound of its cost, computed when asked. */
function modelCall(request: { workspaceId: string; apiKeyId: string | null; projectId?: string | null; now: Date }, maxCostUsd: () => number): ModelCall {
  return { workspaceId: request.workspaceId, apiKeyId: request.apiKeyId, projectId: request.projectId ?? null, maxCostUsd, now: request.now };
}

/** The cost of a call in US dollars, from the model's prices per million tokens. */
export function priceOf(model: CatalogueEntry, usage: TokenUsage): number {
  const { input_per_million_usd: input, cached_input_per_million_usd: cached, output_per_million_usd: output } = model.pricing;
  const uncached = Math.max(0, usage.inputTokens - usage.cachedInputTokens);
  const dollars = (uncached * input + usage.cachedInputTokens * (cached ?? input) + usage.outputTokens * output) / 1_000_000;
  // Rounded to a billionth of a cent, so that sums do not show binary floating-point noise.
  return Math.round(dollars * 1e11) / 1e11;
}

function finishReasonOf(reason: string, calledTools: boolean): FinishReason {
  if (reason === 'length') return 'length';
  if (reason === 'content-filter') return 'content_filter';
  // A choice that called tools waits for their results, whatever the provider says (OpenAI answers `stop` when
  // tool_choice names the function): clients loop on `tool_calls`.
  if (reason === 'tool-calls' || calledTools) return 'tool_calls';
  return 'stop';
}

/** A message as text, for its token count: its text, its tool calls' names and arguments. */
function countedText(message: EngineMessage): string {
  if (message.role === 'assistant') return message.content + (message.toolCalls ?? []).map((call) => call.name + call.arguments).join('');
  if (typeof message.content === 'string') return message.content;
  return message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** The prompt tokens of the images, by OpenAI's rule for its vision models (image-info.ts; an image of unknown size counts 85). */
function promptImageTokens(messages: EngineMessage[]): number {
  let total = 0;
  for (const message of messages) {
    if (message.role !== 'user' || typeof message.content === 'string') continue;
    for (const part of message.content) if (part.type === 'image') total += imageTokens(part.data instanceof URL ? null : imageInfo(part.data), part.detail);
  }
  return total;
}

/** The request's tools as the provider gets them: none when the caller offered none, or chose `none` for a model without tools. */
function toolsOf(request: GenerationRequest, model: CatalogueEntry): EngineTool[] {
  if (request.toolChoice === 'none' && !model.capabilities.includes('tools')) return [];
  return request.tools ?? [];
}

/** Seconds to wait that the provider asked for (`retry-after`, `retry-after-ms`), if it did. */
function retryAfterSeconds(headers: Record<string, string> | undefined): string | undefined {
  if (!headers) return undefined;
  const ms = Number(headers['retry-after-ms']);
  if (Number.isFinite(ms) && ms >= 0) return String(Math.ceil(ms / 1000));
  const raw = headers['retry-after'];
  if (raw === undefined) return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return String(Math.ceil(seconds));
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : String(Math.max(0, Math.ceil((date - Date.now()) / 1000)));
}

/** A provider's failure as our problem: rate limits and outages keep their `Retry-After`; never a 500. */
export function upstreamProblem(error: unknown, model: CatalogueEntry, timedOut: boolean): Problem {
  const cause = error;
  const who = `The provider of ${model.id} (${model.provider})`;
  if (timedOut) return new Problem('upstream_unavailable', `${who} did not answer in time.`);
  if (cause instanceof LocalContextExceeded) {
    return new Problem('context_length_exceeded', `This model's maximum context length is ${cause.contextSize} tokens; the messages alone are ${cause.promptTokens}.`, {
      errors: [{ pointer: '/messages', detail: `are ${cause.promptTokens} tokens long` }],
    });
  }
  if (!APICallError.isInstance(cause)) {
    const message = cause instanceof Error ? cause.message : String(cause);
    return new Problem('upstream_unavailable', `${who} could not be reached: ${message}`.slice(0, 2000));
  }
  const status = cause.statusCode;
  const retryAfter = retryAfterSeconds(cause.responseHeaders);
  const headers: Record<string, string> = retryAfter === undefined ? {} : { 'Retry-After': retryAfter };
  const wait = retryAfter === undefined ? '' : `; retry in ${retryAfter} seconds`;
  // A successful answer whose stream broke (the connection cut mid-way) is an outage, not a refusal of the request.
  if (status !== undefined && status < 400) return new Problem('upstream_unavailable', `${who} broke off its answer: ${cause.message}`.slice(0, 2000));
  if (status === 429) return new Problem('upstream_rate_limited', `${who} is rate limiting this service${wait}.`, { headers });
  if (status === undefined || status >= 500 || status === 408) {
    return new Problem('upstream_unavailable', `${who} is unavailable (${status ?? 'no answer'})${wait}.`, { headers });
  }
  return new Problem('upstream_error', `${who} failed: ${status} ${cause.message}`.slice(0, 2000));
}

/** Merges the events of several producers in the order they come. */
async function* merge<T>(sources: AsyncIterable<T>[], onStop?: () => void): AsyncGenerator<T> {
  if (sources.length === 1) return yield* sources[0]!;
  const iterators = sources.map((source) => source[Symbol.asyncIterator]());
  const pending = new Map<number, Promise<{ index: number; step: IteratorResult<T> }>>();
  const pull = (index: number) => {
    const next = iterators[index]!.next().then((step) => ({ index, step }));
    // A reader that stops early leaves this pull unawaited: its failure must not be an unhandled rejection.
    next.catch(() => {});
    pending.set(index, next);
  };
  iterators.forEach((_, index) => pull(index));
  let finished = false;
  try {
    while (pending.size > 0) {
      const { index, step } = await Promise.race(pending.values());
      if (step.done) pending.delete(index);
      else {
        pull(index);
        yield step.value;
      }
    }
    finished = true;
  } finally {
    // The reader stopped early: the producers still running are stopped rather than waited for (a `return()` waits
    // for a producer's next event).
    if (!finished) onStop?.();
    await Promise.allSettled(iterators.map((iterator) => iterator.return?.()));
  }
}

export interface EngineOptions {
  providers: ProvidersConfig;
  db: Kysely<Database>;
  logger: Logger;
  /** Where provider calls, their latency and the tokens and cost of every call are counted (GET /metrics). */
  metrics: Metrics;
  /** What features add to every generation (src/features/engine/middleware.ts), in the order they apply. */
  middleware?: EngineMiddleware[];
}

export class Engine {
  readonly catalogue: Catalogue;
  readonly #config: ProvidersConfig;
  readonly #db: Kysely<Database>;
  readonly #logger: Logger;
  readonly #metrics: Metrics;
  readonly #middleware: EngineMiddleware[];
  readonly #models = new Map<string, LanguageModelV4>();
  readonly #embeddingModels = new Map<string, EmbeddingModelV4>();

  constructor(options: EngineOptions) {
    this.#config = options.providers;
    this.#db = options.db;
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    this.#middleware = options.middleware ?? [];
    this.catalogue = new Catalogue(options.providers);
  }

  /** The model of a request, or the problem of an unknown one, one without the capability, or an unavailable one. */
  model(id: string, capability: 'chat' | 'embeddings' = 'chat'): CatalogueEntry {
    const model = this.catalogue.get(id);
    if (!model) throw new Problem('model_not_found', `No model ${id} in the catalogue; GET /v1/models lists them.`, { errors: [{ pointer: '/model', detail: 'is not a model of the catalogue' }] });
    if (!model.capabilities.includes(capability)) {
      const kind = model.capabilities.includes('embeddings') ? 'an embedding model' : 'a chat model';
      throw validationFailed([{ pointer: '/model', detail: `${id} has no ${capability} capability (it is ${kind}); GET /v1/models?capability=${capability} lists the ${capability === 'chat' ? 'chat' : 'embedding'} models` }]);
    }
    if (!this.catalogue.available(model)) {
      throw new Problem(
        'model_unavailable',
        `The model ${id} is served by ${model.provider}, which is not configured on this server: set ${this.catalogue.enablingVariable(model)}, or use an available model (GET /v1/models?available=true).`,
        { errors: [{ pointer: '/model', detail: `its provider ${model.provider} is not configured on this server` }] },
      );
    }
    return model;
  }

  /**
   * Checks the request and returns its events: text and finish events of each choice as they come, then one usage
   * event. What can be refused without a call (the model, the voice, the context window) throws here; a provider's
   * failure throws from the iteration, before the first event when the call fails at once.
   */
  async stream(request: GenerationRequest): Promise<AsyncGenerator<GenerationEvent>> {
    const model = this.model(request.model);
    if (request.maxOutputTokens != null && request.maxOutputTokens > model.max_output_tokens) {
      throw validationFailed([{ pointer: '/max_completion_tokens', detail: `must be at most ${model.max_output_tokens}, the output limit of ${model.id}` }]);
    }
    checkCapabilities(model, request);
    const fallbacks = request.fallbackModels ?? [];
    if (fallbacks.length > 0 && (request.n ?? 1) > 1) throw validationFailed([{ pointer: '/models', detail: 'cannot be combined with n over 1: the choices of one answer come from one model' }]);
    let generation: PreparedGeneration = { request: { ...request, messages: [...request.messages] }, model, voice: null, providerOptions: {} };
    for (const middleware of this.#middleware) if (middleware.transform) generation = await middleware.transform(generation);
    const { messages } = generation.request;
    const first = this.#fit(model, request, messages);
    if (!first) {
      const promptTokens = this.#promptTokens(model, request, messages);
      throw new Problem(
        'context_length_exceeded',
        `This model's maximum context length is ${model.context_window} tokens; the messages and max_completion_tokens need ${promptTokens + Math.max(1, request.maxOutputTokens ?? 1)}.`,
        { errors: [{ pointer: '/messages', detail: `are ${promptTokens} tokens long` }] },
      );
    }
    let events: AsyncGenerator<GenerationEvent>;
    let admissions: Admission[] = [];
    if (fallbacks.length === 0) {
      const n = request.n ?? 1;
      admissions = await this.#admit(modelCall(request, () => n * priceOf(model, { inputTokens: first.promptTokens, cachedInputTokens: 0, outputTokens: first.maxOutputTokens })));
      const call = { ...generation.request, maxOutputTokens: first.maxOutputTokens };
      const choices = Array.from({ length: n }, (_, choice) => this.#call(model, call, generation.providerOptions, choice, first.promptTokens));
      events = this.#withUsage(model, request, choices, admissions);
    } else {
      const candidates = [
        first,
        ...fallbacks.flatMap((id, i) => {
          try {
            return [this.#fallback(id, i, request, messages)];
          } catch (error) {
            if (request.fallbackModelsDefault) return [];
            throw error;
          }
        }),
      ];
      events = this.#withFallbacks(candidates, generation);
    }
    try {
      // The first middleware is the outermost: it sees the events as the others left them.
      for (const middleware of this.#middleware.toReversed()) if (middleware.wrap) events = await middleware.wrap(events, generation);
    } catch (error) {
      await this.#settle(admissions);
      throw error;
    }
    return events;
  }

  /** The prompt's tokens as the model counts them: the messages, the images, the tools it is offered. */
  #promptTokens(model: CatalogueEntry, request: GenerationRequest, messages: EngineMessage[]): number {
    const tools = toolsOf(request, model);
    return countPromptTokens(messages.map((message) => ({ content: countedText(message) }))) + promptImageTokens(messages) + (tools.length > 0 ? countTokens(JSON.stringify(tools)) : 0);
  }

  /** The model with the room the request leaves it (its output limit), or null when the request does not fit its context window. */
  #fit(model: CatalogueEntry, request: GenerationRequest, messages: EngineMessage[]): Candidate | null {
    const promptTokens = this.#promptTokens(model, request, messages);
    const room = model.context_window - promptTokens;
    const maxOutputTokens = request.maxOutputTokens ?? Math.min(model.max_output_tokens, room);
    return room < 1 || maxOutputTokens > room ? null : { model, promptTokens, maxOutputTokens };
  }

  /**
   * Fallback model `i` of the request, checked as the request's model is, the problem pointing at `/models/<i>`: not
   * in the catalogue, not a chat model, or unable to serve the request (a capability it needs, the output limit, the
   * context window) is refused; one this server cannot call is skipped (a list names models for any deployment).
   */
  #fallback(id: string, i: number, request: GenerationRequest, messages: EngineMessage[]): Candidate | ModelTried {
    const pointer = `/models/${i}`;
    const model = this.catalogue.get(id);
    if (!model) throw new Problem('model_not_found', `No model ${id} in the catalogue; GET /v1/models lists them.`, { errors: [{ pointer, detail: 'is not a model of the catalogue' }] });
    const refuse = (detail: string) => validationFailed([{ pointer, detail }]);
    if (id === request.model) throw refuse(`${id} is the request's model; a fallback is another model`);
    if (!model.capabilities.includes('chat')) throw refuse(`${id} has no chat capability; GET /v1/models?capability=chat lists the chat models`);
    if (!this.catalogue.available(model)) return { model: id, code: 'model_unavailable', status: 422 };
    const missing = missingCapability(model, request);
    if (missing) throw refuse(`${id} lacks the ${missing} capability this request needs`);
    if (request.maxOutputTokens != null && request.maxOutputTokens > model.max_output_tokens) throw refuse(`${id} writes at most ${model.max_output_tokens} tokens, fewer than max_completion_tokens`);
    const fit = this.#fit(model, request, messages);
    if (!fit) throw refuse(`${id} has a context window of ${model.context_window} tokens, too small for this request`);
    return fit;
  }

  /**
   * Calls the candidates in order until one gives its first event: a candidate that fails before it with a rate limit
   * or an outage (after no retries: the next model is the retry; the last one gets the server's retries) gives way to
   * the next. What one streamed is the client's, so a failure after its first event ends the generation.
   */
  async *#withFallbacks(candidates: (Candidate | ModelTried)[], generation: PreparedGeneration): AsyncGenerator<GenerationEvent> {
    const { request } = generation;
    const tried: ModelTried[] = [];
    const lastCallable = candidates.findLastIndex((candidate) => 'promptTokens' in candidate);
    for (const [i, candidate] of candidates.entries()) {
      // A model this server cannot call is listed as skipped, in its place.
      if (!('promptTokens' in candidate)) {
        tried.push(candidate);
        continue;
      }
      const { model, promptTokens, maxOutputTokens } = candidate;
      const last = i === lastCallable;
      const call = {
        ...generation.request,
        maxOutputTokens,
        maxRetries: last ? request.maxRetries : 0,
        reasoningEffort: model.capabilities.includes('reasoning') ? request.reasoningEffort : null,
      };
      // Each attempt is admitted under the spend limits at its own model's prices (a refusal is not a fallback's cause).
      const admissions = await this.#admit(modelCall(request, () => priceOf(model, { inputTokens: promptTokens, cachedInputTokens: 0, outputTokens: maxOutputTokens })));
      const events = this.#withUsage(model, request, [this.#call(model, call, generation.providerOptions, 0, promptTokens)], admissions);
      let first: IteratorResult<GenerationEvent>;
      try {
        first = await events.next();
      } catch (error) {
        if (last || request.signal.aborted || !(error instanceof Problem) || !FALLBACK_CODES.has(error.code)) throw error;
        this.#logger.info({ model: model.id, code: error.code }, 'a model failed before its first token; trying the next one');
        tried.push({ model: model.id, code: error.code, status: error.status });
        continue;
      }
      // Closed whatever its reader does: a reader that stops at one of the first two events (the policy blocking the
      // first text) must still end the call and record its usage.
      try {
        yield { type: 'model', model, tried };
        if (first.done) return;
        yield first.value;
        yield* events;
      } finally {
        await events.return(undefined);
      }
      return;
    }
  }

  /** Embeds texts (embeddings.ts): one vector per input, the tokens and their cost; records one usage row. */
  async embed(request: EmbeddingRequest): Promise<Embeddings> {
    const model = this.model(request.model, 'embeddings');
    const admissions = await this.#admit(modelCall(request, () => priceOf(model, { inputTokens: request.inputs.reduce((sum, input) => sum + countTokens(input), 0), cachedInputTokens: 0, outputTokens: 0 })));
    try {
      return await embedWith({ config: this.#config, db: this.#db, logger: this.#logger, metrics: this.#metrics, embeddingModel: (entry) => this.#embeddingModel(entry) }, model, request);
    } finally {
      await this.#settle(admissions);
    }
  }

  /** Runs every middleware's `admit` in order; when one refuses, those already admitted are settled. */
  async #admit(call: ModelCall): Promise<Admission[]> {
    const admissions: Admission[] = [];
    try {
      for (const middleware of this.#middleware) {
        const admission = await middleware.admit?.(call);
        if (admission) admissions.push(admission);
      }
    } catch (error) {
      await this.#settle(admissions);
      throw error;
    }
    return admissions;
  }

  /** Settles admitted calls; a failure is logged, never the call's (its answer is not withheld for bookkeeping). */
  async #settle(admissions: Admission[]): Promise<void> {
    for (const admission of admissions) {
      try {
        await admission.settle();
      } catch (error) {
        this.#logger.error({ err: error }, 'a model call admitted under a spend limit could not be settled');
      }
    }
  }

  /** The whole answer at once (the events of `stream`, collected). */
  async generate(request: GenerationRequest): Promise<Generated> {
    let model = this.model(request.model);
    let modelsTried: ModelTried[] | undefined;
    const choices = Array.from({ length: request.n ?? 1 }, () => ({ text: '', finishReason: 'stop' as FinishReason, toolCalls: [] as EngineToolCall[] }));
    let usage: TokenUsage = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 };
    let costUsd = 0;
    for await (const event of await this.stream(request)) {
      if (event.type === 'model') ({ model, tried: modelsTried } = event);
      else if (event.type === 'text') choices[event.choice]!.text += event.text;
      else if (event.type === 'finish') choices[event.choice]!.finishReason = event.finishReason;
      else if (event.type === 'tool-call') choices[event.choice]!.toolCalls[event.index] = { id: event.id, name: event.name, arguments: event.arguments };
      else if (event.type === 'usage') ({ usage, costUsd } = event);
    }
    if (request.signal.aborted) throw new Problem('internal_error', 'The client closed the connection before the answer was complete; nothing was saved.');
    return { model, ...(modelsTried ? { modelsTried } : {}), choices, usage, costUsd };
  }

  /** Runs the calls of every choice, then records each call's usage (whatever happened), settles the call's
   *  admissions, and sends the sum. */
  async *#withUsage(model: CatalogueEntry, request: GenerationRequest, calls: CallRun[], admissions: Admission[]): AsyncGenerator<GenerationEvent> {
    let completed = false;
    try {
      yield* merge(
        calls.map((call) => call.events),
        () => calls.forEach((call) => call.stop()),
      );
      completed = true;
    } finally {
      const usages = calls.map((call) => call.usage());
      const total = usages.reduce<TokenUsage>(
        (sum, u) => ({ inputTokens: sum.inputTokens + u.inputTokens, cachedInputTokens: sum.cachedInputTokens + u.cachedInputTokens, outputTokens: sum.outputTokens + u.outputTokens }),
        { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 },
      );
      const costs = usages.map((u) => priceOf(model, u));
      await recordUsage({ db: this.#db, logger: this.#logger, metrics: this.#metrics }, model, request, usages.map((usage, i) => ({ usage, costUsd: costs[i]! })));
      await this.#settle(admissions);
      // A generation its client abandoned ends without a usage event: what it cost is recorded, nothing else follows.
      if (completed && !request.signal.aborted) yield { type: 'usage', usage: total, costUsd: Math.round(costs.reduce((a, b) => a + b, 0) * 1e11) / 1e11 };
    }
  }

  /** The provider's model of a catalogue entry, built once (a provider object per call cost as much as the call). */
  #languageModel(entry: CatalogueEntry): LanguageModelV4 {
    let model = this.#models.get(entry.id);
    if (!model) this.#models.set(entry.id, (model = languageModel(this.#config, entry.provider, entry.upstream_id)));
    return model;
  }

  #embeddingModel(entry: CatalogueEntry): EmbeddingModelV4 {
    let model = this.#embeddingModels.get(entry.id);
    if (!model) this.#embeddingModels.set(entry.id, (model = embeddingModel(this.#config, entry.provider, entry.upstream_id)));
    return model;
  }

  #call(model: CatalogueEntry, request: GenerationRequest & { maxOutputTokens: number }, extra: PreparedGeneration['providerOptions'], choice: number, promptTokens: number): CallRun {
    const timeout = AbortSignal.timeout(this.#config.timeoutMs);
    // Stopped when the generation's reader stopped reading the other choices' events (merge).
    const stopped = new AbortController();
    const signal = AbortSignal.any([request.signal, timeout, stopped.signal]);
    let reported: TokenUsage | undefined;
    let generated = '';
    let started = false;
    let refused = false;
    const format = request.responseFormat;
    const tools = toolsOf(request, model);
    const parallelToolCalls = request.parallelToolCalls ?? true;
    const offersTools = tools.length > 0;
    // Per provider: the request's options, then the middleware's over them.
    const merged: Record<string, Record<string, JSONValue>> = { ...request.providerOptions };
    for (const [provider, values] of Object.entries(extra)) merged[provider] = { ...merged[provider], ...values };
    const options: LanguageModelV4CallOptions = {
      prompt: toPrompt(request.messages),
      maxOutputTokens: request.maxOutputTokens,
      // The validator fills in OpenAI's defaults (top_p 1, penalties 0): they mean "unset", and sent as values they
      // make providers without them (Anthropic) warn on every call.
      temperature: request.temperature ?? undefined,
      topP: request.topP === 1 ? undefined : (request.topP ?? undefined),
      presencePenalty: request.presencePenalty || undefined,
      frequencyPenalty: request.frequencyPenalty || undefined,
      seed: request.seed ?? undefined,
      stopSequences: request.stop,
      responseFormat: format?.type === 'json' ? format : undefined,
      tools: offersTools ? tools.map((tool) => ({ type: 'function' as const, name: tool.name, description: tool.description, inputSchema: tool.parameters, strict: tool.strict })) : undefined,
      toolChoice: offersTools ? toolChoiceOf(request.toolChoice ?? 'auto') : undefined,
      providerOptions: {
        ...merged,
        sandbox: { ...merged.sandbox, choice, ...(offersTools ? { parallelToolCalls } : {}) },
        ...(request.reasoningEffort || offersTools
          ? { openai: { ...merged.openai, ...(request.reasoningEffort ? { reasoningEffort: request.reasoningEffort } : {}), ...(offersTools ? { parallelToolCalls } : {}) } }
          : {}),
        ...(offersTools && !parallelToolCalls ? { anthropic: { ...merged.anthropic, disableParallelToolUse: true } } : {}),
      },
      abortSignal: signal,
    };
    const languageModel = this.#languageModel(model);
    const maxRetries = request.maxRetries ?? this.#config.maxRetries;
    const logger = this.#logger;
    const metrics = this.#metrics;
    // What the call used: what the provider reported; else, for a call cut short, the prompt and what was generated,
    // counted here. A call never made, or that the provider refused before it generated anything, costs nothing.
    const usage = (): TokenUsage =>
      reported ?? (started && !refused ? { inputTokens: promptTokens, cachedInputTokens: 0, outputTokens: countTokens(generated) } : { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 });
    const events = (async function* (): AsyncGenerator<GenerationEvent> {
      started = true;
      const startedAt = performance.now();
      const span = providerSpan({ operation: 'chat', provider: model.provider, model: model.id, maxTokens: request.maxOutputTokens, temperature: request.temperature });
      let firstTokenSeen = false;
      /** The first text or tool call of the call: its time to first token. */
      const firstToken = () => {
        if (firstTokenSeen) return;
        firstTokenSeen = true;
        metrics.firstToken(model.id, (performance.now() - startedAt) / 1000);
      };
      // Unless the call ends otherwise, its consumer stopped reading before the end: the client went away.
      let outcome: ProviderOutcome = 'aborted';
      /** The tool calls of this choice by the provider's id: their index and the arguments streamed so far. */
      const calls = new Map<string, { index: number; name: string; streamed: string }>();
      const startCall = (id: string, name: string): GenerationEvent => {
        calls.set(id, { index: calls.size, name, streamed: '' });
        return { type: 'tool-call-start', choice, index: calls.size - 1, id, name };
      };
      try {
        const { stream } = await withRetries(() => languageModel.doStream(options), maxRetries, signal);
        for await (const part of stream) {
          if (part.type === 'text-delta') {
            if (part.delta === '') continue;
            firstToken();
            generated += part.delta;
            yield { type: 'text', choice, text: part.delta };
          } else if (part.type === 'tool-input-start') {
            firstToken();
            if (!calls.has(part.id)) yield startCall(part.id, part.toolName);
          } else if (part.type === 'tool-input-delta') {
            const call = calls.get(part.id);
            if (!call || part.delta === '') continue;
            call.streamed += part.delta;
            generated += part.delta;
            yield { type: 'tool-call-delta', choice, index: call.index, argumentsDelta: part.delta };
          } else if (part.type === 'tool-call') {
            // Providers that send only the finished call (or finish it with more than they streamed) still give
            // their arguments as fragments first, so that joined fragments are always the call's arguments.
            firstToken();
            if (!calls.has(part.toolCallId)) yield startCall(part.toolCallId, part.toolName);
            const call = calls.get(part.toolCallId)!;
            const rest = part.input.startsWith(call.streamed) ? part.input.slice(call.streamed.length) : '';
            if (rest !== '') {
              call.streamed += rest;
              generated += rest;
              yield { type: 'tool-call-delta', choice, index: call.index, argumentsDelta: rest };
            }
            const args = rest === '' && call.streamed !== part.input ? call.streamed : part.input;
            yield { type: 'tool-call', choice, index: call.index, id: part.toolCallId, name: call.name, arguments: args };
          } else if (part.type === 'finish') {
            const { inputTokens, outputTokens } = part.usage;
            if (inputTokens.total !== undefined || outputTokens.total !== undefined) {
              reported = {
                inputTokens: inputTokens.total ?? promptTokens,
                cachedInputTokens: inputTokens.cacheRead ?? 0,
                outputTokens: outputTokens.total ?? countTokens(generated),
              };
            }
            const finishReason = finishReasonOf(part.finishReason.unified, calls.size > 0);
            span.finishReason(finishReason);
            yield { type: 'finish', choice, finishReason };
          } else if (part.type === 'response-metadata' && part.modelId) {
            span.responseModel(part.modelId);
          } else if (part.type === 'error') {
            throw part.error;
          } else if (part.type === 'stream-start' && part.warnings.length > 0) {
            logger.debug({ warnings: part.warnings, provider: model.provider, model: model.id }, 'the provider ignored part of a request');
          }
        }
        outcome = 'ok';
      } catch (error) {
        if (request.signal.aborted || stopped.signal.aborted) return;
        refused = generated === '';
        const problem = error instanceof Problem ? error : upstreamProblem(error, model, timeout.aborted);
        outcome = providerOutcome(problem, timeout.aborted);
        span.fail(problem, problem.code);
        throw problem;
      } finally {
        metrics.providerCall(model.id, model.provider, outcome, (performance.now() - startedAt) / 1000);
        span.end(() => ({ usage: usage(), costUsd: priceOf(model, usage()) }));
      }
    })();
    return {
      events,
      stop: () => stopped.abort(),
      usage,
    };
  }
}

/** How a call that failed ended, for the metrics, from the problem it is answered with. */
export function providerOutcome(problem: Problem, timedOut: boolean): ProviderOutcome {
  if (timedOut) return 'timeout';
  if (problem.code === 'upstream_rate_limited') return 'rate_limited';
  if (problem.code === 'upstream_unavailable') return 'unavailable';
  if (problem.code === 'context_length_exceeded') return 'refused';
  return 'upstream_error';
}

/** The failures worth trying another model for: the provider's rate limit and its outages (5xx, timeout, no connection). */
const FALLBACK_CODES = new Set(['upstream_rate_limited', 'upstream_unavailable']);

/** A model of a generation, with what it leaves for the answer. */
interface Candidate {
  model: CatalogueEntry;
  promptTokens: number;
  maxOutputTokens: number;
}

/** A capability the request needs that the model lacks (tools it might call, images, a JSON answer), or null. */
function missingCapability(model: CatalogueEntry, request: GenerationRequest): string | null {
  const has = (capability: CatalogueEntry['capabilities'][number]) => model.capabilities.includes(capability);
  if ((request.tools ?? []).length > 0 && request.toolChoice !== 'none' && !has('tools')) return 'tools';
  const images = request.messages.some((message) => message.role === 'user' && typeof message.content !== 'string' && message.content.some((part) => part.type === 'image'));
  if (images && !has('vision')) return 'vision';
  const format = request.responseFormat;
  if (format?.type === 'json' && format.schema && !has('json_schema')) return 'json_schema';
  if (format?.type === 'json' && !format.schema && !has('json_mode')) return 'json_mode';
  return null;
}

/** A model without `tools` given tools it might call, or without `vision` given an image: refused before any call. */
function checkCapabilities(model: CatalogueEntry, request: GenerationRequest): void {
  const tools = request.tools ?? [];
  if (tools.length > 0 && request.toolChoice !== 'none' && !model.capabilities.includes('tools')) {
    throw validationFailed([{ pointer: '/tools', detail: `are not supported by ${model.id} (it lacks the tools capability)` }]);
  }
  if (model.capabilities.includes('vision')) return;
  request.messages.forEach((message, i) => {
    if (message.role !== 'user' || typeof message.content === 'string') return;
    const j = message.content.findIndex((part) => part.type === 'image');
    if (j >= 0) throw validationFailed([{ pointer: `/messages/${i}/content/${j}`, detail: `is an image, which ${model.id} does not read (it lacks the vision capability)` }]);
  });
}

function toolChoiceOf(choice: EngineToolChoice): NonNullable<LanguageModelV4CallOptions['toolChoice']> {
  return typeof choice === 'string' ? { type: choice } : { type: 'tool', toolName: choice.name };
}

/** A tool call's arguments as the prompt takes them (a JSON value); text that is not JSON is passed as a string. */
function argumentsValue(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The AI SDK's prompt of our messages: tool calls as `tool-call` parts, results as `tool-result` parts, images as files. */
function toPrompt(messages: EngineMessage[]): LanguageModelV4Prompt {
  const toolNames = new Map<string, string>();
  const prompt: LanguageModelV4Prompt = [];
  for (const message of messages) {
    if (message.role === 'system') {
      prompt.push({ role: 'system', content: message.content });
    } else if (message.role === 'user') {
      const parts = typeof message.content === 'string' ? [{ type: 'text' as const, text: message.content }] : message.content;
      prompt.push({
        role: 'user',
        content: parts.map((part) =>
          part.type === 'text'
            ? { type: 'text', text: part.text }
            : {
                type: 'file',
                data: part.data instanceof URL ? { type: 'url', url: part.data } : { type: 'data', data: part.data },
                mediaType: part.mediaType,
                ...(part.detail ? { providerOptions: { openai: { imageDetail: part.detail } } } : {}),
              },
        ),
      });
    } else if (message.role === 'assistant') {
      const calls = message.toolCalls ?? [];
      for (const call of calls) toolNames.set(call.id, call.name);
      prompt.push({
        role: 'assistant',
        content: [
          ...(message.content !== '' || calls.length === 0 ? [{ type: 'text' as const, text: message.content }] : []),
          ...calls.map((call) => ({ type: 'tool-call' as const, toolCallId: call.id, toolName: call.name, input: argumentsValue(call.arguments) })),
        ],
      });
    } else {
      const result = { type: 'tool-result' as const, toolCallId: message.toolCallId, toolName: toolNames.get(message.toolCallId) ?? '', output: { type: 'text' as const, value: message.content } };
      // The results of one answer's calls go together, as providers expect them (Anthropic in one user turn).
      const last = prompt.at(-1);
      if (last?.role === 'tool') last.content.push(result);
      else prompt.push({ role: 'tool', content: [result] });
    }
  }
  return prompt;
}

/** How long to wait before retry `attempt` (from 0): the provider's `retry-after(-ms)` when it asks for under a minute, else 2 s, 4 s, 8 s… */
function retryDelayMs(error: APICallError, attempt: number): number {
  const seconds = retryAfterSeconds(error.responseHeaders);
  const asked = seconds === undefined ? NaN : Number(seconds) * 1000;
  return asked >= 0 && asked <= 60_000 ? asked : 2000 * 2 ** attempt;
}

/**
 * Starts a call, trying again what the provider calls retryable (429, 5xx, a connection that failed) up to
 * `maxRetries` times. Only the start of a call is retried: a stream that broke after its first token is not restarted.
 */
export async function withRetries<T>(start: () => PromiseLike<T>, maxRetries: number, signal: AbortSignal): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (attempt >= maxRetries || signal.aborted || !APICallError.isInstance(error) || !error.isRetryable) throw error;
      await sleep(retryDelayMs(error, attempt), undefined, { signal });
    }
  }
}

interface CallRun {
  events: AsyncGenerator<GenerationEvent>;
  /** Ends the call where it is (its reader went away): what it generated is billed, nothing is thrown. */
  stop(): void;
  usage(): TokenUsage;
}

declare module '../../platform/context.ts' {
  interface Services {
    /** The content engine: every generation of every feature goes through it. */
    engine: Engine;
  }
}

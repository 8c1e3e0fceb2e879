// The content engine: the one way a feature generates text. `engine.stream(request)` picks the model from the
// catalogue, refuses what cannot work before any call (unknown or unavailable model, a prompt over the context
// window; the same for the fallback models a request may name, tried in turn when a model's provider fails before its
// first token), runs the middleware that features registered (src/features/engine/middleware.ts: the brand voice,
// the output policy), calls the provider's AI SDK model (retrying what the provider calls retryable), streams the
// text of each of the `n` choices, and records the usage of every call, priced from the catalogue, when it ends:
// finished, failed or abandoned by its client (billed for what was generated).
// Features never call a provider SDK; they read the events of generation.ts. The engine imports no feature.
//
// It calls the AI SDK's language models directly (`doStream`, the provider packages' own interface) rather than
// through `streamText`: our calls are single steps, and streamText's layers of web streams cost more than the
// provider call itself (`npm run bench:chat` measures the path).
import type {
  EmbeddingModelV4,
  JSONValue,
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamPart,
  SharedV4ProviderMetadata,
} from '@ai-sdk/provider';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Metrics, ProviderOutcome } from '../../platform/metrics.ts';
import { Problem, validationFailed } from '../../platform/problems.ts';
import { providerSpan } from '../../platform/telemetry.ts';
import type { Database } from '../../storage/schema.ts';
import { checkCapabilities, missingCapability } from './capabilities.ts';
import { Catalogue, type CatalogueEntry } from './catalogue.ts';
import { type EmbeddingRequest, type Embeddings, embedWith } from './embeddings.ts';
import { finishReasonOf } from './finish-reason.ts';
import type {
  EngineMessage,
  EngineToolCall,
  FinishReason,
  Generated,
  GenerationEvent,
  GenerationRequest,
  ModelTried,
  TokenUsage,
} from './generation.ts';
import { ImageBudget } from './image-budget.ts';
import { type EngineImagePart, type ImageSource, readImages } from './images.ts';
import { chatLogprobsOf, logprobsOf, type TokenLogprob } from './logprobs.ts';
import { merge } from './merge.ts';
import type { Admission, CallCaller, EngineMiddleware, ModelCall, PreparedGeneration } from './middleware.ts';
import { priceOf } from './pricing.ts';
import { toolChoiceOf, toolsOf, toPrompt } from './prompt.ts';
import { providerOutcome, upstreamProblem } from './provider-problems.ts';
import { embeddingModel, languageModel, loadProviderPackages, type ProvidersConfig } from './providers.ts';
import { contextExceeded, overOutputLimit } from './refusal.ts';
import { withRetries } from './retries.ts';
import { countTokensEach, lengthOf, OFF_LOOP_CHARS } from './text-pool.ts';
import { countedText, countPromptTokens, countTokens, promptImageTokens } from './tokens.ts';
import { recordUsage } from './usage-records.ts';

// The engine's types and helpers live beside it, one concept a file; these names stay importable from here.
export type {
  EngineContentPart,
  EngineMessage,
  EngineTool,
  EngineToolCall,
  EngineToolChoice,
  FinishReason,
  Generated,
  GenerationEvent,
  GenerationRequest,
  ModelTried,
  TokenUsage,
  UsageFeature,
} from './generation.ts';
export { priceOf } from './pricing.ts';
export { providerOutcome, upstreamProblem } from './provider-problems.ts';
export { withRetries } from './retries.ts';

/** A call as the middleware's `admit` sees it: who makes it, and a bound of its cost, computed when asked. */
function modelCall(
  request: { workspaceId: string; apiKeyId: string | null; projectId?: string | null; now: Date },
  maxCostUsd: () => number,
): ModelCall {
  return {
    workspaceId: request.workspaceId,
    apiKeyId: request.apiKeyId,
    projectId: request.projectId ?? null,
    maxCostUsd,
    now: request.now,
  };
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
  /** The image bytes this process holds for requests at once (IMAGE_BYTES_IN_FLIGHT). */
  readonly imageBudget: ImageBudget;
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
    this.imageBudget = new ImageBudget(options.providers.imageBytesInFlight);
  }

  /** Loads the packages of the configured providers now (a server, before it says it is ready). */
  loadProviderPackages(): void {
    loadProviderPackages(this.#config);
  }

  /**
   * Refuses a call that would be refused whatever it costs (a spent limit), before the work that comes ahead of its
   * admission: a request with images is checked so before they are read.
   */
  async precheck(caller: CallCaller): Promise<void> {
    for (const middleware of this.#middleware) await middleware.precheck?.(caller);
  }

  /** A request's `image_url` parts read within the request's and the process's budgets (images.ts). */
  readImages(
    sources: readonly ImageSource[],
    options: { allowPrivateNetworks: boolean },
  ): Promise<{ images: EngineImagePart[]; release: () => void }> {
    return readImages(this.imageBudget, sources, options);
  }

  /** The model of a request, or the problem of an unknown one, one without the capability, or an unavailable one. */
  model(id: string, capability: 'chat' | 'embeddings' = 'chat'): CatalogueEntry {
    const model = this.catalogue.get(id);
    if (!model)
      throw new Problem('model_not_found', `No model ${id} in the catalogue; GET /v1/models lists them.`, {
        errors: [{ pointer: '/model', detail: 'is not a model of the catalogue' }],
      });
    if (!model.capabilities.includes(capability)) {
      const kind = model.capabilities.includes('embeddings') ? 'an embedding model' : 'a chat model';
      throw validationFailed([
        {
          pointer: '/model',
          detail: `${id} has no ${capability} capability (it is ${kind}); GET /v1/models?capability=${capability} lists the ${capability === 'chat' ? 'chat' : 'embedding'} models`,
        },
      ]);
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
  stream(request: GenerationRequest): Promise<AsyncGenerator<GenerationEvent>> {
    return this.#start(request, false);
  }

  /**
   * `stream`, whose calls are streamed from the provider (`doStream`) or, for `generate` (`whole`), answered whole
   * (`doGenerate`: one answer parsed, rather than a JSON chunk parsed and checked per token), with the same events.
   */
  async #start(request: GenerationRequest, whole: boolean): Promise<AsyncGenerator<GenerationEvent>> {
    const model = this.model(request.model);
    if (request.maxOutputTokens != null && request.maxOutputTokens > model.max_output_tokens)
      throw overOutputLimit(model);
    checkCapabilities(model, request);
    // OpenRouter's form names the request's model first in `models` (the whole order): it is not a fallback of itself.
    const fallbacks = (request.fallbackModels ?? [])
      .map((id, i) => ({ id, i }))
      .filter(({ id, i }) => i > 0 || id !== request.model);
    if (fallbacks.length > 0 && (request.n ?? 1) > 1)
      throw validationFailed([
        {
          pointer: '/models',
          detail: 'cannot be combined with n over 1: the choices of one answer come from one model',
        },
      ]);
    let generation: PreparedGeneration = {
      request: { ...request, messages: [...request.messages] },
      model,
      voice: null,
      providerOptions: {},
    };
    for (const middleware of this.#middleware)
      if (middleware.transform) generation = await middleware.transform(generation);
    const { messages } = generation.request;
    const counted = await countLongPrompt(request, messages);
    const first = this.#fit(model, request, messages, counted);
    if (!first) {
      const promptTokens = this.#promptTokens(model, request, messages, counted);
      throw contextExceeded(
        model.context_window,
        promptTokens,
        promptTokens + Math.max(1, request.maxOutputTokens ?? 1),
      );
    }
    let events: AsyncGenerator<GenerationEvent>;
    let admissions: Admission[] = [];
    // A default list (a project's) leaves out the models that cannot serve this request; with none left, the request
    // is one without fallbacks.
    const others = fallbacks.flatMap(({ id, i }) => {
      try {
        return [this.#fallback(id, i, request, messages, counted)];
      } catch (error) {
        if (request.fallbackModelsDefault) return [];
        throw error;
      }
    });
    if (others.length === 0) {
      const n = request.n ?? 1;
      admissions = await this.#admit(
        modelCall(
          request,
          () =>
            n *
            priceOf(model, {
              inputTokens: first.promptTokens(),
              cachedInputTokens: 0,
              outputTokens: first.maxOutputTokens,
            }),
        ),
      );
      const call = { ...generation.request, maxOutputTokens: first.maxOutputTokens };
      const choices = Array.from({ length: n }, (_, choice) =>
        this.#call(model, call, generation.providerOptions, choice, first.promptTokens, whole),
      );
      events = this.#withUsage(model, request, choices, admissions);
    } else {
      events = this.#withFallbacks([first, ...others], generation, whole);
    }
    try {
      // The first middleware is the outermost: it sees the events as the others left them.
      for (const middleware of this.#middleware.toReversed())
        if (middleware.wrap) events = await middleware.wrap(events, generation);
    } catch (error) {
      await this.#settle(admissions);
      throw error;
    }
    return events;
  }

  /**
   * The prompt's tokens as the model counts them: the messages, the images, the tools it is offered. A long prompt's
   * texts were counted before (`counted`, countLongPrompt).
   */
  #promptTokens(
    model: CatalogueEntry,
    request: GenerationRequest,
    messages: EngineMessage[],
    counted: PromptCount | undefined,
  ): number {
    const tools = toolsOf(request, model);
    if (counted)
      return (
        3 +
        3 * messages.length +
        counted.messages +
        promptImageTokens(messages) +
        (tools.length > 0 ? counted.tools : 0)
      );
    return (
      countPromptTokens(messages.map((message) => ({ content: countedText(message) }))) +
      promptImageTokens(messages) +
      (tools.length > 0 ? countTokens(JSON.stringify(tools)) : 0)
    );
  }

  /**
   * At least the prompt's tokens, without counting them: a token of the encoding is at least one byte of UTF-8, so the
   * bytes of what `#promptTokens` counts bound its count.
   */
  #promptTokensBound(model: CatalogueEntry, request: GenerationRequest, messages: EngineMessage[]): number {
    const tools = toolsOf(request, model);
    let bound = 3 + promptImageTokens(messages) + (tools.length > 0 ? Buffer.byteLength(JSON.stringify(tools)) : 0);
    for (const message of messages) bound += 3 + Buffer.byteLength(countedText(message));
    return bound;
  }

  /**
   * The model with the room the request leaves it (its output limit), or null when the request does not fit its
   * context window. Counting the prompt's tokens costs more than the rest of a call's preparation, so they are
   * counted here only when the bound of them leaves the request near the context window (where the count decides);
   * otherwise when first asked (a spend limit's reservation, the usage of a call cut short).
   */
  #fit(
    model: CatalogueEntry,
    request: GenerationRequest,
    messages: EngineMessage[],
    counted: PromptCount | undefined,
  ): Candidate | null {
    const wanted = request.maxOutputTokens ?? model.max_output_tokens;
    const bound = this.#promptTokensBound(model, request, messages);
    if (model.context_window - bound >= Math.max(1, wanted)) {
      // With at least the room the bound leaves, the exact count gives the same answer: it fits, with `wanted`.
      let tokens: number | undefined;
      return {
        model,
        promptTokens: () => (tokens ??= this.#promptTokens(model, request, messages, counted)),
        maxOutputTokens: wanted,
      };
    }
    const promptTokens = this.#promptTokens(model, request, messages, counted);
    const room = model.context_window - promptTokens;
    const maxOutputTokens = request.maxOutputTokens ?? Math.min(model.max_output_tokens, room);
    return room < 1 || maxOutputTokens > room ? null : { model, promptTokens: () => promptTokens, maxOutputTokens };
  }

  /**
   * Fallback model `i` of the request, checked as the request's model is, the problem pointing at `/models/<i>`: not
   * in the catalogue, not a chat model, or unable to serve the request (a capability it needs, the output limit, the
   * context window) is refused; one this server cannot call is skipped (a list names models for any deployment).
   */
  #fallback(
    id: string,
    i: number,
    request: GenerationRequest,
    messages: EngineMessage[],
    counted: PromptCount | undefined,
  ): Candidate | ModelTried {
    const pointer = `/models/${i}`;
    const model = this.catalogue.get(id);
    if (!model)
      throw new Problem('model_not_found', `No model ${id} in the catalogue; GET /v1/models lists them.`, {
        errors: [{ pointer, detail: 'is not a model of the catalogue' }],
      });
    const refuse = (detail: string) => validationFailed([{ pointer, detail }]);
    if (id === request.model) throw refuse(`${id} is the request's model; a fallback is another model`);
    if (!model.capabilities.includes('chat'))
      throw refuse(`${id} has no chat capability; GET /v1/models?capability=chat lists the chat models`);
    if (!this.catalogue.available(model)) return { model: id, code: 'model_unavailable', status: 422 };
    const missing = missingCapability(model, request);
    if (missing) throw refuse(`${id} lacks the ${missing} capability this request needs`);
    if (request.maxOutputTokens != null && request.maxOutputTokens > model.max_output_tokens)
      throw refuse(`${id} writes at most ${model.max_output_tokens} tokens, fewer than the request's output budget`);
    const fit = this.#fit(model, request, messages, counted);
    if (!fit) throw refuse(`${id} has a context window of ${model.context_window} tokens, too small for this request`);
    return fit;
  }

  /**
   * Calls the candidates in order until one gives its first event: a candidate that fails before it with a rate limit
   * or an outage (after no retries: the next model is the retry; the last one gets the server's retries) gives way to
   * the next. What one streamed is the client's, so a failure after its first event ends the generation.
   */
  async *#withFallbacks(
    candidates: (Candidate | ModelTried)[],
    generation: PreparedGeneration,
    whole: boolean,
  ): AsyncGenerator<GenerationEvent> {
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
      const admissions = await this.#admit(
        modelCall(request, () =>
          priceOf(model, { inputTokens: promptTokens(), cachedInputTokens: 0, outputTokens: maxOutputTokens }),
        ),
      );
      const events = this.#withUsage(
        model,
        request,
        [this.#call(model, call, generation.providerOptions, 0, promptTokens, whole)],
        admissions,
      );
      let first: IteratorResult<GenerationEvent>;
      try {
        first = await events.next();
      } catch (error) {
        if (last || request.signal.aborted || !(error instanceof Problem) || !FALLBACK_CODES.has(error.code))
          throw error;
        this.#logger.info(
          { model: model.id, code: error.code },
          'a model failed before its first token; trying the next one',
        );
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
    // Counted once (long inputs off the event loop): the bound of the cost, each input's context window, and the
    // usage of a provider that reports none.
    const counted = request.inputTokens ?? (await countTokensEach(request.inputs));
    const inputTokens = counted.reduce((sum, tokens) => sum + tokens, 0);
    const admissions = await this.#admit(
      modelCall(request, () => priceOf(model, { inputTokens, cachedInputTokens: 0, outputTokens: 0 })),
    );
    try {
      return await embedWith(
        {
          config: this.#config,
          db: this.#db,
          logger: this.#logger,
          metrics: this.#metrics,
          embeddingModel: (entry) => this.#embeddingModel(entry),
        },
        model,
        request,
        counted,
      );
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

  /**
   * The whole answer at once (the events of `stream`, collected). With `whole`, each call asks the provider for its
   * whole answer rather than a stream of it (the same events, for a fraction of the work a streamed answer costs per
   * token): the chat APIs' answers that are not streamed. Without it the calls are streamed, as `stream`'s are.
   */
  async generate(request: GenerationRequest, { whole = false }: { whole?: boolean } = {}): Promise<Generated> {
    let model = this.model(request.model);
    let modelsTried: ModelTried[] | undefined;
    const choices = Array.from({ length: request.n ?? 1 }, () => ({
      text: '',
      finishReason: 'stop' as FinishReason,
      toolCalls: [] as EngineToolCall[],
      logprobs: request.logprobs != null ? ([] as TokenLogprob[]) : null,
    }));
    let usage: TokenUsage = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 };
    let costUsd = 0;
    for await (const event of await this.#start(request, whole)) {
      if (event.type === 'model') ({ model, tried: modelsTried } = event);
      else if (event.type === 'text') {
        choices[event.choice]!.text += event.text;
        if (event.logprobs) choices[event.choice]!.logprobs?.push(...event.logprobs);
      } else if (event.type === 'finish') {
        choices[event.choice]!.finishReason = event.finishReason;
        if (event.logprobs) choices[event.choice]!.logprobs?.push(...event.logprobs);
      } else if (event.type === 'tool-call')
        choices[event.choice]!.toolCalls[event.index] = { id: event.id, name: event.name, arguments: event.arguments };
      else if (event.type === 'usage') ({ usage, costUsd } = event);
    }
    if (request.signal.aborted) {
      // A stopping server's deadline says why itself (503 service_unavailable).
      if (request.signal.reason instanceof Problem) throw request.signal.reason;
      throw new Problem(
        'internal_error',
        'The client closed the connection before the answer was complete; nothing was saved.',
      );
    }
    return { model, ...(modelsTried ? { modelsTried } : {}), choices, usage, costUsd };
  }

  /** Runs the calls of every choice, then records each call's usage (whatever happened), settles the call's
   *  admissions, and sends the sum. */
  async *#withUsage(
    model: CatalogueEntry,
    request: GenerationRequest,
    calls: CallRun[],
    admissions: Admission[],
  ): AsyncGenerator<GenerationEvent> {
    let completed = false;
    try {
      yield* merge(
        calls.map((call) => call.events),
        () => {
          calls.forEach((call) => {
            call.stop();
          });
        },
      );
      completed = true;
    } finally {
      const usages = calls.map((call) => call.usage());
      const total = usages.reduce<TokenUsage>(
        (sum, u) => ({
          inputTokens: sum.inputTokens + u.inputTokens,
          cachedInputTokens: sum.cachedInputTokens + u.cachedInputTokens,
          outputTokens: sum.outputTokens + u.outputTokens,
        }),
        { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 },
      );
      const costs = usages.map((u) => priceOf(model, u));
      await recordUsage(
        { db: this.#db, logger: this.#logger, metrics: this.#metrics },
        model,
        request,
        usages.map((usage, i) => ({ usage, costUsd: costs[i]! })),
      );
      await this.#settle(admissions);
      // A generation its client abandoned ends without a usage event: what it cost is recorded, nothing else follows.
      if (completed && !request.signal.aborted)
        yield { type: 'usage', usage: total, costUsd: Math.round(costs.reduce((a, b) => a + b, 0) * 1e11) / 1e11 };
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
    if (!model)
      this.#embeddingModels.set(entry.id, (model = embeddingModel(this.#config, entry.provider, entry.upstream_id)));
    return model;
  }

  #call(
    model: CatalogueEntry,
    request: GenerationRequest & { maxOutputTokens: number },
    extra: PreparedGeneration['providerOptions'],
    choice: number,
    promptTokens: () => number,
    whole: boolean,
  ): CallRun {
    // One controller for the call, aborted by the request's signal, by the call's timeout, or by stop() when the
    // generation's reader stopped reading the other choices' events (merge). Not AbortSignal.any and
    // AbortSignal.timeout: their weak references and timers cost a call more than the rest of its bookkeeping.
    const controller = new AbortController();
    const signal = controller.signal;
    const timeoutMs = this.#config.timeoutMs;
    let timedOut = false;
    let stopped = false;
    let reported: TokenUsage | undefined;
    let generated = '';
    let started = false;
    let refused = false;
    const format = request.responseFormat;
    const tools = toolsOf(request, model);
    const parallelToolCalls = request.parallelToolCalls ?? true;
    const offersTools = tools.length > 0;
    const logprobs = request.logprobs ?? null;
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
      tools: offersTools
        ? tools.map((tool) => ({
            type: 'function' as const,
            name: tool.name,
            description: tool.description,
            inputSchema: tool.parameters,
            strict: tool.strict,
          }))
        : undefined,
      toolChoice: offersTools ? toolChoiceOf(request.toolChoice ?? 'auto') : undefined,
      providerOptions: {
        ...merged,
        sandbox: {
          ...merged.sandbox,
          choice,
          ...(offersTools ? { parallelToolCalls } : {}),
          ...(logprobs !== null ? { logprobs } : {}),
        },
        ...(request.reasoningEffort || offersTools || logprobs !== null
          ? {
              openai: {
                ...merged.openai,
                ...(request.reasoningEffort ? { reasoningEffort: request.reasoningEffort } : {}),
                ...(offersTools ? { parallelToolCalls } : {}),
                // The AI SDK's form: `true` asks for no alternatives, a number for that many.
                ...(logprobs !== null ? { logprobs: logprobs === 0 ? true : logprobs } : {}),
              },
            }
          : {}),
        ...(offersTools && !parallelToolCalls
          ? { anthropic: { ...merged.anthropic, disableParallelToolUse: true } }
          : {}),
      },
      // OpenAI's chunks as they came: their log probabilities go out with the text of the same chunk, bytes and all
      // (the provider's metadata gives them only at the end of a stream, without their bytes).
      ...(logprobs !== null ? { includeRawChunks: true } : {}),
      abortSignal: signal,
    };
    const languageModel = this.#languageModel(model);
    const maxRetries = request.maxRetries ?? this.#config.maxRetries;
    const logger = this.#logger;
    const metrics = this.#metrics;
    // What the call used: what the provider reported; else, for a call cut short, the prompt and what was generated,
    // counted here. A call never made, or that the provider refused before it generated anything, costs nothing.
    const usage = (): TokenUsage =>
      reported ??
      (started && !refused
        ? { inputTokens: promptTokens(), cachedInputTokens: 0, outputTokens: countTokens(generated) }
        : { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 });
    const events = (async function* (): AsyncGenerator<GenerationEvent> {
      started = true;
      const startedAt = performance.now();
      const span = providerSpan({
        operation: 'chat',
        provider: model.provider,
        model: model.id,
        maxTokens: request.maxOutputTokens,
        temperature: request.temperature,
      });
      let firstTokenSeen = false;
      /**
       * The first text or tool call of the call: its time to first token. A call answered whole has none of its own
       * (its first token arrives with its last), so it is not counted.
       */
      const firstToken = () => {
        if (firstTokenSeen || whole) return;
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
      const onRequestAbort = () => controller.abort(request.signal.reason);
      if (request.signal.aborted) onRequestAbort();
      else request.signal.addEventListener('abort', onRequestAbort, { once: true });
      const timer = setTimeout(() => {
        timedOut = true;
        controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
      }, timeoutMs);
      timer.unref();
      try {
        const stream = whole
          ? wholeAnswerParts(
              await withRetries(() => languageModel.doGenerate(options), maxRetries, signal),
              logprobs !== null,
            )
          : (await withRetries(() => languageModel.doStream(options), maxRetries, signal)).stream;
        /** With log probabilities asked: those of the text still to come (a raw chunk's come before its text). */
        let tokens: TokenLogprob[] = [];
        for await (const part of stream) {
          if (part.type === 'text-delta') {
            if (logprobs !== null) tokens.push(...(metadataLogprobs(part.providerMetadata) ?? []));
            if (part.delta === '') continue;
            firstToken();
            generated += part.delta;
            if (logprobs === null) yield { type: 'text', choice, text: part.delta };
            else {
              yield { type: 'text', choice, text: part.delta, logprobs: tokens };
              tokens = [];
            }
          } else if (part.type === 'raw') {
            if (logprobs !== null) tokens.push(...(chatLogprobsOf(part.rawValue) ?? []));
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
            yield {
              type: 'tool-call',
              choice,
              index: call.index,
              id: part.toolCallId,
              name: call.name,
              arguments: args,
            };
          } else if (part.type === 'finish') {
            const { inputTokens, outputTokens } = part.usage;
            if (inputTokens.total !== undefined || outputTokens.total !== undefined) {
              reported = {
                inputTokens: inputTokens.total ?? promptTokens(),
                cachedInputTokens: inputTokens.cacheRead ?? 0,
                outputTokens: outputTokens.total ?? countTokens(generated),
              };
            }
            const finishReason = finishReasonOf(part.finishReason.unified, calls.size > 0);
            span.finishReason(finishReason);
            yield { type: 'finish', choice, finishReason, ...(tokens.length > 0 ? { logprobs: tokens } : {}) };
            tokens = [];
          } else if (part.type === 'response-metadata' && part.modelId) {
            span.responseModel(part.modelId);
          } else if (part.type === 'error') {
            throw part.error;
          } else if (part.type === 'stream-start' && part.warnings.length > 0) {
            logger.debug(
              { warnings: part.warnings, provider: model.provider, model: model.id },
              'the provider ignored part of a request',
            );
          }
        }
        outcome = 'ok';
      } catch (error) {
        if (request.signal.aborted || stopped) return;
        refused = generated === '';
        const problem = error instanceof Problem ? error : upstreamProblem(error, model, timedOut);
        outcome = providerOutcome(problem, timedOut);
        // The provider's HTTP status on the span (failSpan), with our code for it.
        span.fail(error instanceof Problem ? problem : error, problem.code);
        throw problem;
      } finally {
        clearTimeout(timer);
        request.signal.removeEventListener('abort', onRequestAbort);
        metrics.providerCall(model.id, model.provider, outcome, (performance.now() - startedAt) / 1000);
        span.end(() => ({ usage: usage(), costUsd: priceOf(model, usage()) }));
      }
    })();
    return {
      events,
      stop: () => {
        stopped = true;
        controller.abort();
      },
      usage,
    };
  }
}

/** The failures worth trying another model for: the provider's rate limit and its outages (5xx, timeout, no connection). */
const FALLBACK_CODES = new Set(['upstream_rate_limited', 'upstream_unavailable']);

/** The tokens of a prompt's messages (each as countedText, framing aside) and of its tools as JSON. */
interface PromptCount {
  messages: number;
  tools: number;
}

/**
 * A long prompt's tokens, counted now in the text pool (off the event loop, as countTokensEach counts), for the
 * context-window check and the usage to use rather than counting in place; undefined for a prompt short enough to be
 * counted in place when asked.
 */
async function countLongPrompt(
  request: GenerationRequest,
  messages: EngineMessage[],
): Promise<PromptCount | undefined> {
  const texts = messages.map(countedText);
  const tools = request.tools?.length ? JSON.stringify(request.tools) : '';
  if (lengthOf(texts) + tools.length < OFF_LOOP_CHARS) return undefined;
  const counts = await countTokensEach([...texts, tools]);
  return { messages: counts.slice(0, -1).reduce((sum, n) => sum + n, 0), tools: counts.at(-1) ?? 0 };
}

/** A model of a generation, with what it leaves for the answer. */
interface Candidate {
  model: CatalogueEntry;
  /** Counted when first asked (#fit). */
  promptTokens: () => number;
  maxOutputTokens: number;
}

/** The log probabilities a provider put in a part's metadata (the sandbox's), in OpenAI's shape. */
function metadataLogprobs(metadata: SharedV4ProviderMetadata | undefined): TokenLogprob[] | undefined {
  for (const values of Object.values(metadata ?? {})) {
    const found = logprobsOf(values.logprobs);
    if (found) return found;
  }
  return undefined;
}

/**
 * A whole answer (`doGenerate`) as the stream parts its stream would have had: the model that answered, its text
 * (after the answer as it came, `raw`, which holds an OpenAI answer's log probabilities), its tool calls, its end.
 */
function wholeAnswerParts(result: LanguageModelV4GenerateResult, raw: boolean): LanguageModelV4StreamPart[] {
  const parts: LanguageModelV4StreamPart[] = [{ type: 'stream-start', warnings: result.warnings }];
  if (result.response?.modelId) parts.push({ type: 'response-metadata', modelId: result.response.modelId });
  if (raw && result.response?.body !== undefined) parts.push({ type: 'raw', rawValue: result.response.body });
  for (const part of result.content) {
    if (part.type === 'text')
      parts.push({ type: 'text-delta', id: '0', delta: part.text, providerMetadata: part.providerMetadata });
    else if (part.type === 'tool-call') parts.push(part);
  }
  parts.push({ type: 'finish', usage: result.usage, finishReason: result.finishReason });
  return parts;
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

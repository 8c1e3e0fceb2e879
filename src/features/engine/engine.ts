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
import type { EmbeddingModelV4, LanguageModelV4 } from '@ai-sdk/provider';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Metrics } from '../../platform/metrics.ts';
import { Problem, validationFailed } from '../../platform/problems.ts';
import type { Database } from '../../storage/schema.ts';
import { Accounting, modelCall } from './accounting.ts';
import { type CallRun, callModel } from './call.ts';
import { checkCapabilities } from './capabilities.ts';
import { Catalogue } from './catalogue.ts';
import type { CatalogueEntry } from './catalogue-entry.ts';
import { type EmbeddingRequest, type Embeddings, embedWith } from './embeddings.ts';
import { fallbackCandidate, withFallbacks } from './fallbacks.ts';
import { type Candidate, countLongPrompt, fitModel, promptTokens } from './fit.ts';
import type {
  EngineToolCall,
  FinishReason,
  Generated,
  GenerationEvent,
  GenerationRequest,
  ModelTried,
  TokenLogprob,
  TokenUsage,
} from './generation.ts';
import { ImageBudget } from './image-budget.ts';
import { type EngineImagePart, type ImageSource, readImages } from './images.ts';
import type { Admission, CallCaller, EngineMiddleware, PreparedGeneration } from './middleware.ts';
import { priceOf } from './pricing.ts';
import { embeddingModel, languageModel, loadProviderPackages, type ProvidersConfig } from './providers/registry.ts';
import { contextExceeded, overOutputLimit } from './refusal.ts';
import { countTokensEach } from './text-pool.ts';

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
  readonly #accounting: Accounting;
  readonly #models = new Map<string, LanguageModelV4>();
  readonly #embeddingModels = new Map<string, EmbeddingModelV4>();

  constructor(options: EngineOptions) {
    this.#config = options.providers;
    this.#db = options.db;
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    this.#middleware = options.middleware ?? [];
    this.#accounting = new Accounting({ ...options, middleware: this.#middleware });
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
  precheck(caller: CallCaller): Promise<void> {
    return this.#accounting.precheck(caller);
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
    const prompt = await countLongPrompt(request, messages);
    const first = fitModel(model, request, messages, prompt);
    if (!first) {
      const counted = promptTokens(model, request, messages, prompt);
      throw contextExceeded(model.context_window, counted, counted + Math.max(1, request.maxOutputTokens ?? 1));
    }
    let events: AsyncGenerator<GenerationEvent>;
    let admissions: Admission[] = [];
    // A default list (a project's) leaves out the models that cannot serve this request; with none left, the request
    // is one without fallbacks.
    const others = fallbacks.flatMap(({ id, i }) => {
      try {
        return [fallbackCandidate(this.catalogue, id, i, request, messages, prompt)];
      } catch (error) {
        if (request.fallbackModelsDefault) return [];
        throw error;
      }
    });
    if (others.length === 0) {
      const n = request.n ?? 1;
      const call = { ...generation.request, maxOutputTokens: first.maxOutputTokens };
      admissions = await this.#admitted(request, first, n);
      const calls = Array.from({ length: n }, (_, choice) => this.#call(first, call, generation, choice, whole));
      events = this.#accounting.withUsage(model, request, calls, admissions);
    } else {
      // Each attempt is admitted under the spend limits at its own model's prices (a refusal is not a fallback's cause).
      const attempt = async (candidate: Candidate, call: GenerationRequest & { maxOutputTokens: number }) => {
        const attempted = await this.#admitted(request, candidate, 1);
        const calls = [this.#call(candidate, call, generation, 0, whole)];
        return this.#accounting.withUsage(candidate.model, request, calls, attempted);
      };
      events = withFallbacks([first, ...others], generation, attempt, this.#logger);
    }
    try {
      // The first middleware is the outermost: it sees the events as the others left them.
      for (const middleware of this.#middleware.toReversed())
        if (middleware.wrap) events = await middleware.wrap(events, generation);
    } catch (error) {
      await this.#accounting.settle(admissions);
      throw error;
    }
    return events;
  }

  /** The calls of `n` choices of a candidate, admitted by the middleware at a bound of their cost. */
  #admitted(request: GenerationRequest, candidate: Candidate, n: number): Promise<Admission[]> {
    const { model, promptTokens, maxOutputTokens } = candidate;
    return this.#accounting.admit(
      modelCall(
        request,
        () => n * priceOf(model, { inputTokens: promptTokens(), cachedInputTokens: 0, outputTokens: maxOutputTokens }),
      ),
    );
  }

  /** Embeds texts (embeddings.ts): one vector per input, the tokens and their cost; records one usage row. */
  async embed(request: EmbeddingRequest): Promise<Embeddings> {
    const model = this.model(request.model, 'embeddings');
    // Counted once (long inputs off the event loop): the bound of the cost, each input's context window, and the
    // usage of a provider that reports none.
    const counted = request.inputTokens ?? (await countTokensEach(request.inputs));
    const inputTokens = counted.reduce((sum, tokens) => sum + tokens, 0);
    const admissions = await this.#accounting.admit(
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
      await this.#accounting.settle(admissions);
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

  /** The call of one choice at a candidate (call.ts). */
  #call(
    { model, promptTokens }: Candidate,
    request: GenerationRequest & { maxOutputTokens: number },
    generation: PreparedGeneration,
    choice: number,
    whole: boolean,
  ): CallRun {
    return callModel(
      { model, request, extra: generation.providerOptions, choice, promptTokens, whole },
      {
        languageModel: this.#languageModel(model),
        timeoutMs: this.#config.timeoutMs,
        maxRetries: this.#config.maxRetries,
        logger: this.#logger,
        metrics: this.#metrics,
      },
    );
  }
}

declare module '../../platform/context.ts' {
  interface Services {
    /** The content engine: every generation of every feature goes through it. */
    engine: Engine;
  }
}

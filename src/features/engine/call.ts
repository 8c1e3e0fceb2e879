// One call of a provider's model for one choice of a generation: the AI SDK call options built from the request
// (callOptions), the call made (streamed with `doStream`, or answered whole with `doGenerate`) and retried as the
// provider allows, its parts turned into the engine's events (PartReader), and what it used counted as it goes, for
// the accounting (accounting.ts) whatever way it ends: finished, failed, stopped or abandoned by its client.
import type {
  JSONValue,
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamPart,
  SharedV4ProviderMetadata,
} from '@ai-sdk/provider';
import type { Logger } from 'pino';
import type { Metrics } from '../../platform/metrics.ts';
import { Problem } from '../../platform/problems.ts';
import type { CatalogueEntry } from './catalogue-entry.ts';
import { finishReasonOf } from './finish-reason.ts';
import type { GenerationEvent, GenerationRequest, TokenLogprob, TokenUsage } from './generation.ts';
import { chatLogprobsOf, logprobsOf } from './logprobs.ts';
import type { PreparedGeneration } from './middleware.ts';
import {
  type ProviderOutcome,
  type ProviderSpan,
  providerSpan,
  recordFirstToken,
  recordProviderCall,
} from './observability.ts';
import { priceOf } from './pricing.ts';
import { toolChoiceOf, toolsOf, toPrompt } from './prompt.ts';
import { providerOutcome, upstreamProblem } from './provider-problems.ts';
import { withRetries } from './retries.ts';
import { countTokens } from './tokens.ts';

/** A call under way: its events, how to stop it, and what it used so far. */
export interface CallRun {
  events: AsyncGenerator<GenerationEvent>;
  /** Ends the call where it is (its reader went away): what it generated is billed, nothing is thrown. */
  stop(): void;
  usage(): TokenUsage;
}

/** What a call is made with besides its request: the provider's model and the server's limits. */
export interface CallSetting {
  languageModel: LanguageModelV4;
  /** How long the call may take in all (PROVIDER_TIMEOUT_MS). */
  timeoutMs: number;
  /** How often a retryable failure is tried again when the request does not say (PROVIDER_MAX_RETRIES). */
  maxRetries: number;
  logger: Logger;
  metrics: Metrics;
}

/** The call of one choice: `request` as the middleware left it, with the room the model leaves the answer. */
export interface ChoiceCall {
  model: CatalogueEntry;
  request: GenerationRequest & { maxOutputTokens: number };
  /** The middleware's provider options (PreparedGeneration), over the request's. */
  extra: PreparedGeneration['providerOptions'];
  choice: number;
  promptTokens: () => number;
  /** Answered whole (`doGenerate`) rather than streamed. */
  whole: boolean;
}

/** The AI SDK's options of a call: the request's prompt, sampling, tools and provider options. */
export function callOptions(call: ChoiceCall, signal: AbortSignal): LanguageModelV4CallOptions {
  const { model, request, extra, choice } = call;
  const format = request.responseFormat;
  const tools = toolsOf(request, model);
  const parallelToolCalls = request.parallelToolCalls ?? true;
  const offersTools = tools.length > 0;
  const logprobs = request.logprobs ?? null;
  // Per provider: the request's options, then the middleware's over them.
  const merged: Record<string, Record<string, JSONValue>> = { ...request.providerOptions };
  for (const [provider, values] of Object.entries(extra)) merged[provider] = { ...merged[provider], ...values };
  return {
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
}

/**
 * Makes the call of one choice. Its events start when first read; one controller aborts it, by the request's signal,
 * by the call's timeout, or by stop() when the generation's reader stopped reading the other choices' events (merge).
 * Not AbortSignal.any and AbortSignal.timeout: their weak references and timers cost a call more than the rest of its
 * bookkeeping.
 */
export function callModel(call: ChoiceCall, setting: CallSetting): CallRun {
  const { model, request, choice, promptTokens, whole } = call;
  const controller = new AbortController();
  const signal = controller.signal;
  const options = callOptions(call, signal);
  const { languageModel, logger, metrics } = setting;
  const maxRetries = request.maxRetries ?? setting.maxRetries;
  const logprobs = request.logprobs ?? null;
  let timedOut = false;
  let stopped = false;
  let started = false;
  let refused = false;
  let reader: PartReader | undefined;
  // What the call used: what the provider reported; else, for a call cut short, the prompt and what was generated,
  // counted here. A call never made, or that the provider refused before it generated anything, costs nothing.
  const usage = (): TokenUsage =>
    reader?.reported ??
    (started && !refused
      ? { inputTokens: promptTokens(), cachedInputTokens: 0, outputTokens: countTokens(reader?.generated ?? '') }
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
    // The first text or tool call of the call: its time to first token. A call answered whole has none of its own
    // (its first token arrives with its last), so it is not counted.
    const firstToken = whole
      ? () => {}
      : () => recordFirstToken(metrics, model.id, (performance.now() - startedAt) / 1000);
    const parts = new PartReader({
      choice,
      logprobs: logprobs !== null,
      promptTokens,
      span,
      firstToken,
      logger,
      model,
    });
    reader = parts;
    // Unless the call ends otherwise, its consumer stopped reading before the end: the client went away.
    let outcome: ProviderOutcome = 'aborted';
    const onRequestAbort = () => controller.abort(request.signal.reason);
    if (request.signal.aborted) onRequestAbort();
    else request.signal.addEventListener('abort', onRequestAbort, { once: true });
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    }, setting.timeoutMs);
    timer.unref();
    try {
      const stream = whole
        ? wholeAnswerParts(
            await withRetries(() => languageModel.doGenerate(options), maxRetries, signal),
            logprobs !== null,
          )
        : (await withRetries(() => languageModel.doStream(options), maxRetries, signal)).stream;
      for await (const part of stream) yield* parts.read(part);
      outcome = 'ok';
    } catch (error) {
      if (request.signal.aborted || stopped) return;
      refused = parts.generated === '';
      const problem = error instanceof Problem ? error : upstreamProblem(error, model, timedOut);
      outcome = providerOutcome(problem, timedOut);
      // The provider's HTTP status on the span (failSpan), with our code for it.
      span.fail(error instanceof Problem ? problem : error, problem.code);
      throw problem;
    } finally {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', onRequestAbort);
      recordProviderCall(metrics, model.id, model.provider, outcome, (performance.now() - startedAt) / 1000);
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

/** Turns the stream parts of one choice's call into the engine's events, keeping what it generated and was told. */
class PartReader {
  /** The text and tool-call arguments generated so far (counted for the usage of a call cut short). */
  generated = '';
  /** The usage the provider reported, if it did. */
  reported: TokenUsage | undefined;
  readonly #choice: number;
  readonly #logprobs: boolean;
  readonly #promptTokens: () => number;
  readonly #span: ProviderSpan;
  readonly #firstToken: () => void;
  readonly #logger: Logger;
  readonly #model: CatalogueEntry;
  #firstTokenSeen = false;
  /** The tool calls of this choice by the provider's id: their index and the arguments streamed so far. */
  readonly #calls = new Map<string, { index: number; name: string; streamed: string }>();
  /** With log probabilities asked: those of the text still to come (a raw chunk's come before its text). */
  #tokens: TokenLogprob[] = [];

  constructor(options: {
    choice: number;
    logprobs: boolean;
    promptTokens: () => number;
    span: ProviderSpan;
    firstToken: () => void;
    logger: Logger;
    model: CatalogueEntry;
  }) {
    this.#choice = options.choice;
    this.#logprobs = options.logprobs;
    this.#promptTokens = options.promptTokens;
    this.#span = options.span;
    this.#firstToken = options.firstToken;
    this.#logger = options.logger;
    this.#model = options.model;
  }

  /** The events of one part (none for most parts that are not content); an error part throws its error. */
  *read(part: LanguageModelV4StreamPart): Generator<GenerationEvent> {
    const choice = this.#choice;
    if (part.type === 'text-delta') {
      if (this.#logprobs) this.#tokens.push(...(metadataLogprobs(part.providerMetadata) ?? []));
      if (part.delta === '') return;
      this.#first();
      this.generated += part.delta;
      if (!this.#logprobs) yield { type: 'text', choice, text: part.delta };
      else {
        yield { type: 'text', choice, text: part.delta, logprobs: this.#tokens };
        this.#tokens = [];
      }
    } else if (part.type === 'raw') {
      if (this.#logprobs) this.#tokens.push(...(chatLogprobsOf(part.rawValue) ?? []));
    } else if (part.type === 'tool-input-start') {
      this.#first();
      if (!this.#calls.has(part.id)) yield this.#startCall(part.id, part.toolName);
    } else if (part.type === 'tool-input-delta') {
      const call = this.#calls.get(part.id);
      if (!call || part.delta === '') return;
      call.streamed += part.delta;
      this.generated += part.delta;
      yield { type: 'tool-call-delta', choice, index: call.index, argumentsDelta: part.delta };
    } else if (part.type === 'tool-call') {
      yield* this.#toolCall(part);
    } else if (part.type === 'finish') {
      const { inputTokens, outputTokens } = part.usage;
      if (inputTokens.total !== undefined || outputTokens.total !== undefined) {
        this.reported = {
          inputTokens: inputTokens.total ?? this.#promptTokens(),
          cachedInputTokens: inputTokens.cacheRead ?? 0,
          outputTokens: outputTokens.total ?? countTokens(this.generated),
        };
      }
      const finishReason = finishReasonOf(part.finishReason.unified, this.#calls.size > 0);
      this.#span.finishReason(finishReason);
      yield { type: 'finish', choice, finishReason, ...(this.#tokens.length > 0 ? { logprobs: this.#tokens } : {}) };
      this.#tokens = [];
    } else if (part.type === 'response-metadata' && part.modelId) {
      this.#span.responseModel(part.modelId);
    } else if (part.type === 'error') {
      throw part.error;
    } else if (part.type === 'stream-start' && part.warnings.length > 0) {
      this.#logger.debug(
        { warnings: part.warnings, provider: this.#model.provider, model: this.#model.id },
        'the provider ignored part of a request',
      );
    }
  }

  /**
   * A finished tool call. Providers that send only the finished call (or finish it with more than they streamed)
   * still give their arguments as fragments first, so that joined fragments are always the call's arguments.
   */
  *#toolCall(part: Extract<LanguageModelV4StreamPart, { type: 'tool-call' }>): Generator<GenerationEvent> {
    const choice = this.#choice;
    this.#first();
    if (!this.#calls.has(part.toolCallId)) yield this.#startCall(part.toolCallId, part.toolName);
    const call = this.#calls.get(part.toolCallId)!;
    const rest = part.input.startsWith(call.streamed) ? part.input.slice(call.streamed.length) : '';
    if (rest !== '') {
      call.streamed += rest;
      this.generated += rest;
      yield { type: 'tool-call-delta', choice, index: call.index, argumentsDelta: rest };
    }
    const args = rest === '' && call.streamed !== part.input ? call.streamed : part.input;
    yield { type: 'tool-call', choice, index: call.index, id: part.toolCallId, name: call.name, arguments: args };
  }

  #startCall(id: string, name: string): GenerationEvent {
    this.#calls.set(id, { index: this.#calls.size, name, streamed: '' });
    return { type: 'tool-call-start', choice: this.#choice, index: this.#calls.size - 1, id, name };
  }

  #first(): void {
    if (this.#firstTokenSeen) return;
    this.#firstTokenSeen = true;
    this.#firstToken();
  }
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

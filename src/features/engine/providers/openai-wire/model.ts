// A language model (the AI SDK's LanguageModelV4) for every upstream that speaks OpenAI's Chat Completions: OpenAI,
// Groq, Together, DeepSeek, OpenRouter, Ollama, vLLM, LM Studio. It does per call what the official packages do, and
// per chunk much less: the server-sent events are split by eventsource-parser and each chunk is parsed once with
// JSON.parse and read where it is, without a schema check of the chunk or a chain of web streams. What it does not
// know of a chunk or an answer it keeps: the `raw` parts and the answer's `response.body` are the upstream's JSON as
// it came (the engine reads log probabilities there), so new fields reach the engine without a change here.
import {
  APICallError,
  InvalidResponseDataError,
  type LanguageModelV4,
  type LanguageModelV4CallOptions,
  type LanguageModelV4Content,
  type LanguageModelV4FinishReason,
  type LanguageModelV4GenerateResult,
  type LanguageModelV4StreamPart,
  type LanguageModelV4StreamResult,
  type LanguageModelV4Usage,
  type SharedV4ProviderMetadata,
} from '@ai-sdk/provider';
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { upstreamFetch } from '../upstream-fetch.ts';
import { type Dialect, requestBody } from './request.ts';

export interface WireSettings {
  /** `openai` for OpenAI's API, `compatible` for a service that speaks it. */
  dialect: Dialect;
  /** The service's name (`openai`, `groq`…): the provider options it reads, the metadata it writes. */
  name: string;
  /** The API's base URL, without the trailing slash (`https://api.openai.com/v1`). */
  baseUrl: string;
  apiKey: string | undefined;
  /** The fetch of the calls: the engine's own (upstreamFetch) unless a test gives another. */
  fetch?: typeof globalThis.fetch;
}

type Json = Record<string, unknown>;
const isRecord = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const numberOr = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);
const stringOr = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** Statuses of answers with no usable completion that a later try may get (the AI SDK's rule). */
const retryable = (status: number) => status === 408 || status === 409 || status === 429 || status >= 500;

/** The AI SDK's finish reason of a Chat Completions `finish_reason`. */
function finishReasonOf(raw: string | undefined, refused: boolean): LanguageModelV4FinishReason {
  const unified =
    raw === 'stop'
      ? refused
        ? 'content-filter'
        : 'stop'
      : raw === 'length'
        ? 'length'
        : raw === 'content_filter'
          ? 'content-filter'
          : raw === 'tool_calls' || raw === 'function_call'
            ? 'tool-calls'
            : 'other';
  return { unified, raw };
}

/** The AI SDK's usage of a Chat Completions `usage` (all unknown without one). */
function usageOf(usage: unknown, dialect: Dialect): LanguageModelV4Usage {
  if (!isRecord(usage))
    return {
      inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: undefined, text: undefined, reasoning: undefined },
    };
  const prompt = numberOr(usage.prompt_tokens) ?? 0;
  const completion = numberOr(usage.completion_tokens) ?? 0;
  const promptDetails = isRecord(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  const completionDetails = isRecord(usage.completion_tokens_details) ? usage.completion_tokens_details : {};
  const cached = numberOr(promptDetails.cached_tokens) ?? 0;
  const written = dialect === 'openai' ? numberOr(promptDetails.cache_write_tokens) : undefined;
  const reasoning = numberOr(completionDetails.reasoning_tokens) ?? 0;
  return {
    inputTokens: { total: prompt, noCache: prompt - cached - (written ?? 0), cacheRead: cached, cacheWrite: written },
    outputTokens: { total: completion, text: Math.max(0, completion - reasoning), reasoning },
    raw: usage as LanguageModelV4Usage['raw'],
  };
}

/** The answer's id, model and time, as the AI SDK's response metadata. */
function responseMetadata(body: Json): { id?: string; modelId?: string; timestamp?: Date } {
  const created = numberOr(body.created);
  return {
    id: stringOr(body.id),
    modelId: stringOr(body.model),
    timestamp: created ? new Date(created * 1000) : undefined,
  };
}

function headersOf(response: Response): Record<string, string> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return headers;
}

/** The error of an answer that is not a success: the provider's message and body, retryable as the AI SDK says. */
async function failedAnswer(response: Response, url: string, body: Json): Promise<APICallError> {
  const text = await response.text().catch(() => '');
  let data: unknown;
  try {
    data = text.trim() === '' ? undefined : JSON.parse(text);
  } catch {
    data = undefined;
  }
  const message = isRecord(data) && isRecord(data.error) ? stringOr(data.error.message) : undefined;
  return new APICallError({
    message: message ?? response.statusText,
    url,
    requestBodyValues: body,
    statusCode: response.status,
    responseHeaders: headersOf(response),
    responseBody: text,
    ...(message !== undefined ? { data } : {}),
    isRetryable: retryable(response.status),
  });
}

const NETWORK_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);

/** A fetch that failed: an abort as it is, a connection that failed as a retryable APICallError (as the AI SDK). */
function fetchFailure(error: unknown, url: string, body: Json): unknown {
  if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) return error;
  if (error instanceof TypeError && error.message.toLowerCase() === 'fetch failed' && error.cause instanceof Error)
    return new APICallError({
      message: `Cannot connect to API: ${error.cause.message}`,
      cause: error.cause,
      url,
      requestBodyValues: body,
      isRetryable: true,
    });
  for (let current: unknown = error; current instanceof Error; current = current.cause) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code))
      return new APICallError({
        message: `Cannot connect to API: ${(error as Error).message}`,
        cause: error,
        url,
        requestBodyValues: body,
        isRetryable: true,
      });
    if (current.cause === current) break;
  }
  return error;
}

/** The error of an `error` frame in a stream, as OpenAI sends one (`{error: {message, type, code}}`). */
function streamError(frame: Json, url: string, body: Json, headers: Record<string, string>): APICallError {
  const error = isRecord(frame.error) ? frame.error : {};
  const status =
    numberOr(error.status) ??
    (error.type === 'rate_limit_exceeded' || error.code === 'rate_limit_exceeded' ? 429 : undefined) ??
    500;
  return new APICallError({
    message: stringOr(error.message) ?? 'The stream failed before any output was generated',
    url,
    requestBodyValues: body,
    statusCode: status,
    responseHeaders: headers,
    responseBody: JSON.stringify(frame),
    data: frame,
    isRetryable: retryable(status),
  });
}

export class OpenAiWireChatModel implements LanguageModelV4 {
  readonly specificationVersion = 'v4';
  readonly modelId: string;
  readonly provider: string;
  readonly supportedUrls: Record<string, RegExp[]>;
  readonly #settings: WireSettings;
  readonly #url: string;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof globalThis.fetch;

  constructor(modelId: string, settings: WireSettings) {
    this.modelId = modelId;
    this.provider = `${settings.name}.chat`;
    // OpenAI reads images by URL itself; a compatible server may not, so the AI SDK downloads them first.
    this.supportedUrls = settings.dialect === 'openai' ? { 'image/*': [/^https?:\/\/.*$/] } : {};
    this.#settings = settings;
    this.#url = `${settings.baseUrl}/chat/completions`;
    this.#headers = {
      'content-type': 'application/json',
      ...(settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {}),
    };
    this.#fetch = settings.fetch ?? (upstreamFetch as typeof globalThis.fetch);
  }

  async #post(call: LanguageModelV4CallOptions, body: Json): Promise<Response> {
    let response: Response;
    try {
      response = await this.#fetch(this.#url, {
        method: 'POST',
        headers: call.headers ? { ...this.#headers, ...definedHeaders(call.headers) } : this.#headers,
        body: JSON.stringify(body),
        signal: call.abortSignal,
      });
    } catch (error) {
      throw fetchFailure(error, this.#url, body);
    }
    if (!response.ok) throw await failedAnswer(response, this.#url, body);
    return response;
  }

  async doGenerate(call: LanguageModelV4CallOptions): Promise<LanguageModelV4GenerateResult> {
    const { dialect, name } = this.#settings;
    const { body, warnings } = requestBody(call, this.modelId, dialect, name);
    const response = await this.#post(call, body);
    const responseHeaders = headersOf(response);
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      throw fetchFailure(error, this.#url, body);
    }
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch (error) {
      throw new APICallError({
        message: `Invalid JSON response: ${(error as Error).message}`,
        url: this.#url,
        requestBodyValues: body,
        statusCode: response.status,
        responseHeaders,
        responseBody: text,
        isRetryable: false,
      });
    }
    const choice = isRecord(answer) && Array.isArray(answer.choices) ? answer.choices[0] : undefined;
    if (!isRecord(answer) || !isRecord(choice))
      throw new InvalidResponseDataError({ data: answer, message: 'Response did not contain any choices.' });
    const message = isRecord(choice.message) ? choice.message : {};
    const content: LanguageModelV4Content[] = [];
    const reasoning = stringOr(message.reasoning_content) ?? stringOr(message.reasoning);
    if (reasoning) content.push({ type: 'reasoning', text: reasoning });
    const said =
      stringOr(message.content) || (isRecord(message.audio) ? stringOr(message.audio.transcript) : undefined);
    if (said) content.push({ type: 'text', text: said });
    const refusal = stringOr(message.refusal);
    if (refusal) content.push({ type: 'text', text: refusal });
    for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) {
      if (!isRecord(call) || !isRecord(call.function)) continue;
      content.push({
        type: 'tool-call',
        toolCallId: stringOr(call.id) || crypto.randomUUID(),
        toolName: stringOr(call.function.name) ?? '',
        input: stringOr(call.function.arguments) ?? '',
      });
    }
    for (const annotation of Array.isArray(message.annotations) ? message.annotations : []) {
      const citation = isRecord(annotation) && isRecord(annotation.url_citation) ? annotation.url_citation : undefined;
      if (citation && typeof citation.url === 'string')
        content.push({
          type: 'source',
          sourceType: 'url',
          id: crypto.randomUUID(),
          url: citation.url,
          title: stringOr(citation.title),
        });
    }
    const metadata: Json = predictionTokens(answer.usage);
    const logprobs = isRecord(choice.logprobs) ? choice.logprobs : undefined;
    if (dialect === 'openai' && logprobs && (logprobs.content != null || logprobs.refusal != null))
      metadata.logprobs = [...asArray(logprobs.content), ...asArray(logprobs.refusal)];
    return {
      content,
      finishReason: finishReasonOf(stringOr(choice.finish_reason), Boolean(refusal)),
      usage: usageOf(answer.usage, dialect),
      request: { body },
      response: { ...responseMetadata(answer), headers: responseHeaders, body: answer },
      warnings,
      providerMetadata: { [name]: metadata } as SharedV4ProviderMetadata,
    };
  }

  async doStream(call: LanguageModelV4CallOptions): Promise<LanguageModelV4StreamResult> {
    const { dialect, name } = this.#settings;
    const { body: args, warnings } = requestBody(call, this.modelId, dialect, name);
    const body = { ...args, stream: true, stream_options: { include_usage: true } };
    const response = await this.#post(call, body);
    const responseHeaders = headersOf(response);
    if (!response.body) throw new InvalidResponseDataError({ data: null, message: 'The stream has no body.' });
    const chunks = new ChunkReader({
      body: response.body,
      dialect,
      name,
      raw: call.includeRawChunks === true,
      fail: (frame) => streamError(frame, this.#url, body, responseHeaders),
      broken: (error) => fetchFailure(error, this.#url, body),
    });
    chunks.parts.push({ type: 'stream-start', warnings });
    // An error frame before any output fails the call itself, so that it is retried like a failed answer.
    await chunks.untilOutput();
    const stream = new ReadableStream<LanguageModelV4StreamPart>({
      pull: async (controller) => {
        try {
          while (chunks.parts.length === 0 && !chunks.ended) await chunks.next();
        } catch (error) {
          controller.error(error);
          return;
        }
        for (const part of chunks.parts) controller.enqueue(part);
        chunks.parts.length = 0;
        if (chunks.ended) controller.close();
      },
      cancel: (reason) => chunks.cancel(reason),
    });
    return { stream, request: { body }, response: { headers: responseHeaders } };
  }
}

function definedHeaders(headers: Record<string, string | undefined>): Record<string, string> {
  const defined: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) defined[name.toLowerCase()] = value;
  return defined;
}

const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** The prediction tokens OpenAI reports in the usage, as the official packages' provider metadata names them. */
function predictionTokens(usage: unknown): Json {
  const details = isRecord(usage) && isRecord(usage.completion_tokens_details) ? usage.completion_tokens_details : {};
  const metadata: Json = {};
  if (typeof details.accepted_prediction_tokens === 'number')
    metadata.acceptedPredictionTokens = details.accepted_prediction_tokens;
  if (typeof details.rejected_prediction_tokens === 'number')
    metadata.rejectedPredictionTokens = details.rejected_prediction_tokens;
  return metadata;
}

interface ToolCallState {
  id: string;
  name: string;
  arguments: string;
}

/**
 * Reads a Chat Completions stream into the AI SDK's stream parts: each `next()` reads one piece of the body and
 * turns the chunks it completes into `parts`; at the body's end the pending tool calls and the finish follow.
 */
class ChunkReader {
  readonly parts: LanguageModelV4StreamPart[] = [];
  ended = false;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  readonly #parser: EventSourceParser;
  readonly #dialect: Dialect;
  readonly #name: string;
  readonly #raw: boolean;
  readonly #fail: (frame: Json) => APICallError;
  readonly #broken: (error: unknown) => unknown;
  #output = false;
  #metadataSent = false;
  #textOpen = false;
  #reasoningOpen = false;
  #refused = false;
  #finishReason: string | undefined;
  #failed = false;
  #usage: unknown;
  #logprobs: unknown[] | undefined;
  readonly #calls = new Map<number, ToolCallState>();
  #earlyError: APICallError | undefined;

  constructor(options: {
    body: ReadableStream<Uint8Array>;
    dialect: Dialect;
    name: string;
    raw: boolean;
    fail: (frame: Json) => APICallError;
    broken: (error: unknown) => unknown;
  }) {
    this.#reader = options.body.getReader();
    this.#dialect = options.dialect;
    this.#name = options.name;
    this.#raw = options.raw;
    this.#fail = options.fail;
    this.#broken = options.broken;
    this.#parser = createParser({ onEvent: (event) => this.#event(event.data) });
  }

  /** Reads until the first output (text, a refusal, a tool call) or the end; an error frame before it throws. */
  async untilOutput(): Promise<void> {
    while (!this.#output && !this.ended) {
      await this.next();
      if (this.#earlyError) {
        await this.cancel(this.#earlyError);
        throw this.#earlyError;
      }
    }
  }

  async next(): Promise<void> {
    let read: ReadableStreamReadResult<Uint8Array>;
    try {
      read = await this.#reader.read();
    } catch (error) {
      throw this.#broken(error);
    }
    if (read.done) {
      this.#parser.feed(this.#decoder.decode());
      this.#finish();
      return;
    }
    this.#parser.feed(this.#decoder.decode(read.value, { stream: true }));
  }

  async cancel(reason: unknown): Promise<void> {
    this.ended = true;
    await this.#reader.cancel(reason).catch(() => {});
  }

  #event(data: string): void {
    if (data === '[DONE]' || this.ended) return;
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch (error) {
      if (this.#raw) this.parts.push({ type: 'raw', rawValue: data });
      this.#failed = true;
      this.parts.push({ type: 'error', error });
      return;
    }
    if (this.#raw) this.parts.push({ type: 'raw', rawValue: chunk });
    if (!isRecord(chunk)) return;
    if (chunk.error != null) {
      this.#failed = true;
      const error = this.#fail(chunk);
      if (!this.#output) this.#earlyError ??= error;
      else this.parts.push({ type: 'error', error });
      return;
    }
    if (!this.#metadataSent) {
      const metadata = responseMetadata(chunk);
      if (metadata.id || metadata.modelId || metadata.timestamp) {
        this.#metadataSent = true;
        this.parts.push({ type: 'response-metadata', ...metadata });
      }
    }
    if (chunk.usage != null) this.#usage = chunk.usage;
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (!isRecord(choice)) return;
    if (typeof choice.finish_reason === 'string') this.#finishReason = choice.finish_reason;
    if (this.#dialect === 'openai' && isRecord(choice.logprobs)) {
      const { content, refusal } = choice.logprobs;
      if (content != null || refusal != null) (this.#logprobs ??= []).push(...asArray(content), ...asArray(refusal));
    }
    const delta = choice.delta;
    if (!isRecord(delta)) return;
    const reasoning = stringOr(delta.reasoning_content) ?? stringOr(delta.reasoning);
    if (reasoning) {
      if (!this.#reasoningOpen) {
        this.#reasoningOpen = true;
        this.parts.push({ type: 'reasoning-start', id: 'reasoning-0' });
      }
      this.parts.push({ type: 'reasoning-delta', id: 'reasoning-0', delta: reasoning });
    }
    const content = stringOr(delta.content);
    const refusal = stringOr(delta.refusal);
    if (refusal) this.#refused = true;
    if (content) this.#text(content);
    if (refusal) this.#text(refusal);
    // OpenAI's package opens the text at the first chunk's empty content; the compatible package at the first word.
    if (content === '' && !refusal && this.#dialect === 'openai') this.#text('');
    if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) this.#toolCallDelta(call);
    for (const annotation of asArray(delta.annotations)) {
      const citation = isRecord(annotation) && isRecord(annotation.url_citation) ? annotation.url_citation : undefined;
      if (!citation || typeof citation.url !== 'string') continue;
      this.#output = true;
      this.parts.push({
        type: 'source',
        sourceType: 'url',
        id: crypto.randomUUID(),
        url: citation.url,
        title: stringOr(citation.title),
      });
    }
  }

  #text(delta: string): void {
    if (delta !== '') this.#output = true;
    if (this.#reasoningOpen) {
      this.#reasoningOpen = false;
      this.parts.push({ type: 'reasoning-end', id: 'reasoning-0' });
    }
    if (!this.#textOpen) {
      this.#textOpen = true;
      this.parts.push({ type: 'text-start', id: '0' });
    }
    this.parts.push({ type: 'text-delta', id: '0', delta });
  }

  /** A fragment of a tool call: the first of its index names it, the others add to its arguments. */
  #toolCallDelta(fragment: unknown): void {
    if (!isRecord(fragment)) return;
    const index = numberOr(fragment.index) ?? this.#calls.size;
    const fn = isRecord(fragment.function) ? fragment.function : {};
    const args = stringOr(fn.arguments) ?? '';
    let call = this.#calls.get(index);
    if (!call) {
      const name = stringOr(fn.name);
      if (!name?.trim()) return;
      call = { id: stringOr(fragment.id) || crypto.randomUUID(), name, arguments: '' };
      this.#calls.set(index, call);
      this.#output = true;
      this.parts.push({ type: 'tool-input-start', id: call.id, toolName: name });
    }
    if (args !== '') {
      call.arguments += args;
      this.parts.push({ type: 'tool-input-delta', id: call.id, delta: args });
    }
  }

  #finish(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.#reasoningOpen) this.parts.push({ type: 'reasoning-end', id: 'reasoning-0' });
    if (this.#textOpen) this.parts.push({ type: 'text-end', id: '0' });
    const calls = [...this.#calls.entries()].sort(([a], [b]) => a - b);
    for (const [, call] of calls) {
      this.parts.push({ type: 'tool-input-end', id: call.id });
      this.parts.push({ type: 'tool-call', toolCallId: call.id, toolName: call.name, input: call.arguments });
    }
    const metadata = predictionTokens(this.#usage);
    if (this.#logprobs) metadata.logprobs = this.#logprobs;
    this.parts.push({
      type: 'finish',
      finishReason:
        this.#finishReason !== undefined
          ? finishReasonOf(this.#finishReason, this.#refused)
          : { unified: this.#failed ? 'error' : 'interrupted', raw: undefined },
      usage: usageOf(this.#usage, this.#dialect),
      providerMetadata: { [this.#name]: metadata } as SharedV4ProviderMetadata,
    });
  }
}

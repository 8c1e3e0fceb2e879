// The typed client of content-service, built on openapi-fetch: every path, parameter and body is typed from the
// contract. It adds what every caller of this API needs: bearer auth, an Idempotency-Key on every POST/PUT/PATCH (so
// retries are safe), retries that honour Retry-After, and a typed async iterator over the chat completion stream.
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import type { paths, components } from './openapi.ts';

export type { paths, components } from './openapi.ts';
// The events a webhook receiver gets; verifyWebhook itself is in `@content-service/client/webhooks` (it needs Node's
// crypto, and this entry runs in browsers too).
export type { EventOf, EventType, WebhookEvent } from './webhooks.ts';
export type Problem = components['schemas']['Problem'];
export type ChatCompletionRequest = components['schemas']['ChatCompletionRequest'];
export type ChatCompletionChunk = components['schemas']['ChatCompletionChunk'];

/** The version of the contract this client was generated from. */
export const API_VERSION: string = /*@API_VERSION*/;

/** The base URL of each region, from the spec's `servers`. */
export const SERVERS = /*@SERVERS*/ as const;

export interface ContentServiceClientOptions {
  /** The API key (`cs_live_…`), sent as `Authorization: Bearer`. Leave out for public operations. */
  apiKey?: string;
  /** A region's base URL, or any other (a local server, the mock). Defaults to the EU region. */
  baseUrl?: string;
  /** How many times a request is retried after a 429, a 503, another 5xx or a network error (default 2). */
  maxRetries?: number;
  /** Longest wait before one retry, in ms; a longer Retry-After is not waited for (default 60 000). */
  maxRetryDelayMs?: number;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** The fetch to use (default: the global fetch). */
  fetch?: typeof globalThis.fetch;
  /** Waits between retries; replaceable for tests. */
  sleep?: (ms: number) => Promise<void>;
  /** Makes Idempotency-Key values (default: crypto.randomUUID). */
  idempotencyKey?: () => string;
}

export type ContentServiceClient = Client<paths, `${string}/${string}`> & {
  /** Streams a chat completion: yields each `chat.completion.chunk` until `data: [DONE]`. */
  streamChatCompletion(
    body: Omit<ChatCompletionRequest, 'stream'>,
    init?: { signal?: AbortSignal; idempotencyKey?: string },
  ): AsyncGenerator<ChatCompletionChunk, void, undefined>;
};

/** A non-2xx answer, carrying the problem document of the API. */
export class ContentServiceError extends Error {
  readonly status: number;
  readonly problem: Problem | undefined;
  constructor(status: number, problem: Problem | undefined) {
    super(problem ? `${status} ${problem.code}: ${problem.detail ?? problem.title}` : `HTTP ${status}`);
    this.name = 'ContentServiceError';
    this.status = status;
    this.problem = problem;
  }
}

const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH']);
const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The delay a response asks for: Retry-After in seconds or as an HTTP date; else exponential backoff. */
export function retryDelayMs(response: Response | undefined, attempt: number, now = Date.now()): number {
  const header = response?.headers.get('Retry-After');
  if (header) {
    const seconds = Number(header);
    if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
    const date = Date.parse(header);
    if (!Number.isNaN(date)) return Math.max(0, date - now);
  }
  return Math.min(8000, 500 * 2 ** attempt);
}

function isRetryable(status: number): boolean {
  return status === 429 || status >= 500;
}

export function createContentServiceClient(options: ContentServiceClientOptions = {}): ContentServiceClient {
  const baseUrl = options.baseUrl ?? SERVERS.eu;
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const maxRetries = options.maxRetries ?? 2;
  const maxRetryDelayMs = options.maxRetryDelayMs ?? 60_000;
  const sleep = options.sleep ?? defaultSleep;
  const newKey = options.idempotencyKey ?? (() => crypto.randomUUID());
  const pending = new Map<string, Request>();

  const auth: Middleware = {
    onRequest({ request }) {
      for (const [name, value] of Object.entries(options.headers ?? {})) request.headers.set(name, value);
      if (options.apiKey && !request.headers.has('Authorization')) {
        request.headers.set('Authorization', `Bearer ${options.apiKey}`);
      }
      // The same key on every retry of this call: the server replays the stored answer instead of acting twice.
      if (UNSAFE_METHODS.has(request.method) && !request.headers.has('Idempotency-Key')) {
        request.headers.set('Idempotency-Key', newKey());
      }
      return request;
    },
  };

  // Keeps a copy of each request (bodies are streams and can be read once) to send it again.
  const retry: Middleware = {
    onRequest({ request, id }) {
      if (maxRetries > 0) pending.set(id, request.clone());
      return request;
    },
    async onResponse({ response, id }) {
      const original = pending.get(id);
      pending.delete(id);
      if (!original || !isRetryable(response.status)) return response;
      let last = response;
      for (let attempt = 0; attempt < maxRetries && isRetryable(last.status); attempt++) {
        const delay = retryDelayMs(last, attempt);
        if (delay > maxRetryDelayMs) break;
        await sleep(delay);
        await last.body?.cancel();
        last = await fetchImpl(original.clone());
      }
      return last;
    },
    async onError({ error, id }) {
      const original = pending.get(id);
      pending.delete(id);
      if (!original) return error instanceof Error ? error : new Error(String(error));
      let lastError: unknown = error;
      for (let attempt = 0; attempt < maxRetries; attempt++) {
        await sleep(retryDelayMs(undefined, attempt));
        try {
          return await fetchImpl(original.clone());
        } catch (e) {
          lastError = e;
        }
      }
      return lastError instanceof Error ? lastError : new Error(String(lastError));
    },
  };

  const client = createClient<paths>({ baseUrl, fetch: fetchImpl });
  client.use(auth, retry);

  async function* streamChatCompletion(
    body: Omit<ChatCompletionRequest, 'stream'>,
    init: { signal?: AbortSignal; idempotencyKey?: string } = {},
  ): AsyncGenerator<ChatCompletionChunk, void, undefined> {
    const { data, error, response } = await client.POST('/v1/chat/completions', {
      body: { ...body, stream: true } as ChatCompletionRequest,
      headers: {
        Accept: 'text/event-stream',
        ...(init.idempotencyKey ? { 'Idempotency-Key': init.idempotencyKey } : {}),
      },
      parseAs: 'stream',
      signal: init.signal,
    });
    if (error !== undefined || !data) {
      throw new ContentServiceError(response.status, typeof error === 'object' ? (error as Problem) : undefined);
    }
    const stream = data as ReadableStream<Uint8Array>;
    // The DOM and Node typings of TextDecoderStream disagree on the input type; both accept Uint8Array chunks.
    const text = stream.pipeThrough(new TextDecoderStream() as unknown as TransformStream<Uint8Array, string>);
    // Read with a reader rather than `for await` over the stream: Safari's ReadableStream is not async-iterable.
    const events = text.pipeThrough(new EventSourceParserStream()).getReader();
    try {
      for (;;) {
        const { done, value: event } = await events.read();
        if (done) break;
        if (event.data === '[DONE]') return;
        // A failure after the stream started: the last event is the problem document (docs/server.md, Streams).
        if (event.event === 'error') {
          const problem = JSON.parse(event.data) as Problem;
          throw new ContentServiceError(problem.status, problem);
        }
        yield JSON.parse(event.data) as ChatCompletionChunk;
      }
    } finally {
      // Also when the caller stops early (break, return, throw): the connection is closed instead of left open.
      await events.cancel().catch(() => {});
    }
    throw new Error('The chat completion stream ended without `data: [DONE]`.');
  }

  return Object.assign(client, { streamChatCompletion });
}

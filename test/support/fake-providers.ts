// Fake AI provider upstreams on loopback that speak the providers' real wire formats, so that tests (and
// `npm run bench:chat`) run the real provider code (@ai-sdk/openai, @ai-sdk/anthropic, @ai-sdk/google, @ai-sdk/openai-compatible)
// against them (test/engine/fake-providers.test.ts proves it with the AI SDK; test/chat/tools.test.ts with tool calls):
// - OpenAI's Chat Completions, `POST /v1/chat/completions` (what `createOpenAI().chat(id)` and every
//   `createOpenAICompatible()` model call): a `chat.completion` JSON, or `data:` chunks (the first with the role, then
//   the content, then the finish reason, the usage chunk with `choices: []` when `stream_options.include_usage`, then
//   `data: [DONE]`), with each chunk's tokens when the request asks `logprobs` (FakeReply.logprobs, or a token a chunk);
// - OpenAI's Responses API, `POST /v1/responses` (what `createOpenAI()(id)` calls): a `response` JSON, or its named
//   events (`response.created` … `response.output_text.delta` … `response.completed`);
// - Anthropic's Messages API, `POST /v1/messages`: a `message` JSON, or its named events (`message_start`,
//   `content_block_start`, `ping`, `content_block_delta`, `content_block_stop`, `message_delta`, `message_stop`);
// - OpenAI's embeddings, `POST /v1/embeddings` (what `createOpenAI().embedding(id)` calls, and Mistral's embeddings,
//   which have the same shape): each input's fakeEmbedding, `dimensions` long when asked;
// - Google's embeddings (startFakeGoogle), `POST /v1beta/models/<model>:embedContent` and `:batchEmbedContents`
//   (what `createGoogleGenerativeAI().embeddingModel(id)` calls): the same vectors, without usage (as Google's).
// - Google's Gemini API (startFakeGoogle), `POST /v1beta/models/<model>:generateContent` (a
//   `GenerateContentResponse` JSON) and `:streamGenerateContent?alt=sse` (`data:` chunks of the same shape, the last
//   with `finishReason` and `usageMetadata`).
// A reply may call tools (`toolCalls`), each in the provider's own wire format: OpenAI's `tool_calls` (streamed as
// `delta.tool_calls` fragments: the first names the call, the others add arguments), Anthropic's `tool_use` blocks
// (streamed as `input_json_delta`), Google's `functionCall` parts (whole, streamed or not).
// Errors are the provider's: `{error: {message, type, param, code}}` for OpenAI, `{type: 'error', error: {type,
// message}}` for Anthropic, with the status and headers (`retry-after`…) the test asks for. Each reply is scripted by
// the test (enqueue), or echoes the last user message.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeReply {
  /** The text to answer; streamed one word per chunk (spaces kept) unless `chunks` is given. */
  text?: string;
  chunks?: string[];
  /**
   * Reported usage; `input` counts all the prompt's tokens, cached ones included (as OpenAI's `prompt_tokens`; the
   * Anthropic fake reports `input - cachedInput` as `input_tokens` and the rest as `cache_read_input_tokens`).
   * Default: prompt = characters of the request's messages (and system prompt) / 4, rounded up; completion = words.
   */
  usage?: { input: number; output: number; cachedInput?: number };
  /** Default `stop`, or the provider's tool-call reason when the reply has `toolCalls`. */
  finishReason?: 'stop' | 'length' | 'tool_calls';
  /**
   * Tool calls after the text: `arguments` is the JSON text; streamed in `chunks` (default: three pieces) where the
   * provider streams arguments. `id` defaults to one in the provider's style (Google's calls have none).
   */
  toolCalls?: { id?: string; name: string; arguments: string; chunks?: string[] }[];
  /** Answer this error instead: status, headers (`retry-after`…), and the provider's error type and message. */
  error?: { status: number; headers?: Record<string, string>; message?: string; type?: string };
  /** Milliseconds before each streamed chunk (default 0). */
  chunkDelayMs?: number;
  /** Stream without end (a chunk every `chunkDelayMs`, default 5 ms) until the client disconnects. */
  endless?: boolean;
  /** Cut the connection after this many streamed chunks, without an end: an upstream that fails mid-answer. */
  cutAfterChunks?: number;
  /**
   * OpenAI's Chat Completions, when the request asks `logprobs`: the tokens of each chunk (one list per chunk, in
   * OpenAI's shape). Default: each chunk one token, at -0.25, with `top_logprobs` alternatives (` alt1` at -1.25, …).
   */
  logprobs?: FakeTokenLogprob[][];
}

/** A token's log probability as OpenAI's Chat Completions sends it. */
export interface FakeTokenLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
  top_logprobs: { token: string; logprob: number; bytes: number[] | null }[];
}

/** What applies to a request nothing was enqueued for. */
export interface FakeDefaults extends Pick<FakeReply, 'chunkDelayMs'> {
  /**
   * The reply to such a request, chosen by its body (undefined: the echo). For load, where requests are too many to
   * enqueue one by one (`npm run bench:chat` answers every request with `tools` this way).
   */
  reply?: (body: ReceivedRequest['body']) => FakeReply | undefined;
}

export interface ReceivedRequest {
  /** The request's path and query, e.g. `/v1/chat/completions`. */
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body (null when it was not JSON). */
  // biome-ignore lint/suspicious/noExplicitAny: a request in any of four providers' formats, which the tests read field by field as the format they sent says
  body: any;
}

export interface FakeProvider {
  /** The base URL to give the provider package (`http://127.0.0.1:PORT/v1`). */
  url: string;
  /** Every request received, in order. */
  requests: ReceivedRequest[];
  /** Replies used in order, one per request; then the default reply, "You said: <last user message>". */
  enqueue(...replies: FakeReply[]): void;
  /** Replies of embeddings requests, used in order (only their `error` counts); then each input's fakeEmbedding. */
  enqueueEmbeddings(...replies: FakeReply[]): void;
  /** Streamed answers the client abandoned before their end. */
  readonly disconnects: number;
  /**
   * Resolves at a client's disconnect from a streamed answer: each call claims one disconnect, so one that happened
   * before the call (and no earlier call claimed) resolves it at once. Rejects after `timeoutMs` (default 10 s).
   */
  waitForDisconnect(timeoutMs?: number): Promise<void>;
  /** Stops listening and cuts every connection, keep-alive and streaming ones included. */
  close(): Promise<void>;
}

type Usage = NonNullable<FakeReply['usage']>;
type FinishReason = NonNullable<FakeReply['finishReason']>;
type ToolCall = { id: string; name: string; arguments: string; chunks: string[] };
interface Answer {
  text: string;
  usage: Usage;
  finishReason: FinishReason;
  toolCalls: ToolCall[];
  /** The tokens of each chunk when the request asked for log probabilities (OpenAI's Chat Completions), else null. */
  logprobs: FakeTokenLogprob[][] | null;
}

/** The SSE frames of one streamed answer; stateful (sequence numbers, the text so far). */
interface WireStream {
  start(): string[];
  /** A chunk of text, with its tokens' log probabilities when the request asked for them. */
  chunk(text: string, logprobs?: FakeTokenLogprob[]): string;
  /** The frames of the reply's tool calls, after its text (an API without tools sends none). */
  toolCalls?(calls: ToolCall[]): string[];
  end(finishReason: FinishReason): string[];
}

/** One API of a provider: its JSON answer and its stream. */
interface Api {
  json(answer: Answer, body: ReceivedRequest['body']): unknown;
  stream(body: ReceivedRequest['body'], usage: Usage): WireStream;
}

/** A provider: its APIs by path, and its error format. */
interface Dialect {
  apis: Record<string, Api>;
  /** For an API whose path names the model (Google's): the API of a path, and whether it streams. */
  route?(path: string): { api: Api; stream: boolean } | undefined;
  /** The error body for a status; `type` and `message` default to what the provider answers for that status. */
  error(status: number, type?: string, message?: string): unknown;
  /** The header naming the request, as the provider sends it. */
  requestIdHeader: string;
  /** The path of the base URL a provider package is given; default `/v1`. */
  basePath?: string;
}

let serial = 0;
const nextId = () => `${Date.now().toString(36)}${(++serial).toString(36).padStart(4, '0')}`;
const now = () => Math.floor(Date.now() / 1000);

function sse(data: unknown, event?: string): string {
  return `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;
}

// --- OpenAI ---------------------------------------------------------------------------------------------------

function chatUsage(usage: Usage) {
  return {
    prompt_tokens: usage.input,
    completion_tokens: usage.output,
    total_tokens: usage.input + usage.output,
    prompt_tokens_details: { cached_tokens: usage.cachedInput ?? 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

const chatCompletions: Api = {
  json: (answer, body) => ({
    id: `chatcmpl-${nextId()}`,
    object: 'chat.completion',
    created: now(),
    model: body.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: answer.text === '' && answer.toolCalls.length > 0 ? null : answer.text,
          refusal: null,
          ...(answer.toolCalls.length > 0
            ? {
                tool_calls: answer.toolCalls.map((call) => ({
                  id: call.id,
                  type: 'function',
                  function: { name: call.name, arguments: call.arguments },
                })),
              }
            : {}),
          annotations: [],
        },
        logprobs: answer.logprobs ? { content: answer.logprobs.flat(), refusal: null } : null,
        finish_reason: answer.finishReason,
      },
    ],
    usage: chatUsage(answer.usage),
    service_tier: 'default',
    system_fingerprint: 'fp_fake',
  }),
  stream: (body, usage) => {
    const includeUsage = body.stream_options?.include_usage === true;
    const head = {
      id: `chatcmpl-${nextId()}`,
      object: 'chat.completion.chunk',
      created: now(),
      model: body.model,
      service_tier: 'default',
      system_fingerprint: 'fp_fake',
    };
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      sse({ ...head, choices, ...(includeUsage ? { usage: null } : {}), ...extra });
    return {
      start: () => [
        chunk([
          { index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null },
        ]),
      ],
      chunk: (text, logprobs) =>
        chunk([
          {
            index: 0,
            delta: { content: text },
            logprobs: logprobs ? { content: logprobs, refusal: null } : null,
            finish_reason: null,
          },
        ]),
      toolCalls: (calls) =>
        calls.flatMap((call, index) => [
          chunk([
            {
              index: 0,
              delta: {
                tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
              },
              logprobs: null,
              finish_reason: null,
            },
          ]),
          ...call.chunks.map((part) =>
            chunk([
              {
                index: 0,
                delta: { tool_calls: [{ index, function: { arguments: part } }] },
                logprobs: null,
                finish_reason: null,
              },
            ]),
          ),
        ]),
      end: (finishReason) => [
        chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finishReason }]),
        ...(includeUsage ? [chunk([], { usage: chatUsage(usage) })] : []),
        'data: [DONE]\n\n',
      ],
    };
  },
};

function responsesUsage(usage: Usage) {
  return {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: usage.cachedInput ?? 0 },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.input + usage.output,
  };
}

function responseObject(
  id: string,
  body: ReceivedRequest['body'],
  state: {
    status: 'in_progress' | 'completed' | 'incomplete';
    output: unknown[];
    usage: Usage | null;
    createdAt: number;
  },
) {
  return {
    id,
    object: 'response',
    created_at: state.createdAt,
    status: state.status,
    error: null,
    incomplete_details: state.status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: body.model,
    output: state.output,
    parallel_tool_calls: true,
    previous_response_id: body.previous_response_id ?? null,
    service_tier: 'default',
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: body.top_p ?? 1,
    truncation: 'disabled',
    usage: state.usage ? responsesUsage(state.usage) : null,
    user: null,
    metadata: {},
  };
}

function messageItem(id: string, text: string, status: 'in_progress' | 'completed' | 'incomplete') {
  return {
    id,
    type: 'message',
    status,
    content: status === 'in_progress' ? [] : [{ type: 'output_text', annotations: [], logprobs: [], text }],
    role: 'assistant',
  };
}

const responses: Api = {
  json: (answer, body) => {
    const status = answer.finishReason === 'length' ? 'incomplete' : 'completed';
    return responseObject(`resp_${nextId()}`, body, {
      status,
      output: [messageItem(`msg_${nextId()}`, answer.text, status)],
      usage: answer.usage,
      createdAt: now(),
    });
  },
  stream: (body, usage) => {
    const id = `resp_${nextId()}`;
    const itemId = `msg_${nextId()}`;
    const createdAt = now();
    let sequence = 0;
    let text = '';
    const event = (type: string, data: Record<string, unknown>) =>
      sse({ type, sequence_number: sequence++, ...data }, type);
    const part = (partText: string) => ({ type: 'output_text', annotations: [], logprobs: [], text: partText });
    const at = { item_id: itemId, output_index: 0, content_index: 0 };
    return {
      start: () => [
        event('response.created', {
          response: responseObject(id, body, { status: 'in_progress', output: [], usage: null, createdAt }),
        }),
        event('response.in_progress', {
          response: responseObject(id, body, { status: 'in_progress', output: [], usage: null, createdAt }),
        }),
        event('response.output_item.added', { output_index: 0, item: messageItem(itemId, '', 'in_progress') }),
        event('response.content_part.added', { ...at, part: part('') }),
      ],
      chunk: (delta) => {
        text += delta;
        return event('response.output_text.delta', { ...at, delta, logprobs: [] });
      },
      end: (finishReason) => {
        const status = finishReason === 'length' ? 'incomplete' : 'completed';
        const item = messageItem(itemId, text, status);
        return [
          event('response.output_text.done', { ...at, text, logprobs: [] }),
          event('response.content_part.done', { ...at, part: part(text) }),
          event('response.output_item.done', { output_index: 0, item }),
          event(`response.${status}`, {
            response: responseObject(id, body, { status, output: [item], usage, createdAt }),
          }),
        ];
      },
    };
  },
};

/** What OpenAI answers for a status: type, code and message (its 429 is the rate limit on requests). */
const openAiErrors: Record<number, { type: string; code: string | null; message: string }> = {
  400: { type: 'invalid_request_error', code: null, message: 'Invalid request.' },
  401: {
    type: 'invalid_request_error',
    code: 'invalid_api_key',
    message:
      'Incorrect API key provided: sk-fa***ke. You can find your API key at https://platform.openai.com/account/api-keys.',
  },
  403: {
    type: 'invalid_request_error',
    code: 'unsupported_country_region_territory',
    message: 'Country, region, or territory not supported',
  },
  404: {
    type: 'invalid_request_error',
    code: 'model_not_found',
    message: 'The model does not exist or you do not have access to it.',
  },
  429: {
    type: 'requests',
    code: 'rate_limit_exceeded',
    message: 'Rate limit reached on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.',
  },
  500: {
    type: 'server_error',
    code: null,
    message: 'The server had an error while processing your request. Sorry about that!',
  },
  503: { type: 'server_error', code: null, message: 'The engine is currently overloaded, please try again later.' },
};

const openAi: Dialect = {
  apis: { '/v1/chat/completions': chatCompletions, '/v1/responses': responses },
  error: (status, type, message) => {
    const known = openAiErrors[status] ?? (status >= 500 ? openAiErrors[500]! : openAiErrors[400]!);
    const code =
      type === 'insufficient_quota'
        ? 'insufficient_quota'
        : type === undefined || type === known.type
          ? known.code
          : null;
    return { error: { message: message ?? known.message, type: type ?? known.type, param: null, code } };
  },
  requestIdHeader: 'x-request-id',
};

// --- Anthropic ------------------------------------------------------------------------------------------------

const anthropicStop = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use' } as const;

function anthropicUsage(usage: Usage, outputTokens: number) {
  return {
    input_tokens: usage.input - (usage.cachedInput ?? 0),
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: usage.cachedInput ?? 0,
    output_tokens: outputTokens,
    service_tier: 'standard',
  };
}

const messages: Api = {
  json: (answer, body) => ({
    id: `msg_${nextId()}`,
    type: 'message',
    role: 'assistant',
    model: body.model,
    content: [
      ...(answer.text !== '' || answer.toolCalls.length === 0 ? [{ type: 'text', text: answer.text }] : []),
      ...answer.toolCalls.map((call) => ({
        type: 'tool_use',
        id: call.id,
        name: call.name,
        input: JSON.parse(call.arguments),
      })),
    ],
    stop_reason: anthropicStop[answer.finishReason],
    stop_sequence: null,
    usage: anthropicUsage(answer.usage, answer.usage.output),
  }),
  stream: (body, usage) => ({
    start: () => [
      sse(
        {
          type: 'message_start',
          message: {
            id: `msg_${nextId()}`,
            type: 'message',
            role: 'assistant',
            model: body.model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: anthropicUsage(usage, 1),
          },
        },
        'message_start',
      ),
      sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start'),
      sse({ type: 'ping' }, 'ping'),
    ],
    chunk: (text) =>
      sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }, 'content_block_delta'),
    // The text block closes first; each call is a tool_use block after it, its input streamed as JSON fragments.
    toolCalls: (calls) => [
      sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop'),
      ...calls.flatMap((call, i) => [
        sse(
          {
            type: 'content_block_start',
            index: i + 1,
            content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
          },
          'content_block_start',
        ),
        ...call.chunks.map((part) =>
          sse(
            { type: 'content_block_delta', index: i + 1, delta: { type: 'input_json_delta', partial_json: part } },
            'content_block_delta',
          ),
        ),
        sse({ type: 'content_block_stop', index: i + 1 }, 'content_block_stop'),
      ]),
    ],
    end: (finishReason) => [
      ...(finishReason === 'tool_calls' ? [] : [sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop')]),
      sse(
        {
          type: 'message_delta',
          delta: { stop_reason: anthropicStop[finishReason], stop_sequence: null },
          usage: { output_tokens: usage.output },
        },
        'message_delta',
      ),
      sse({ type: 'message_stop' }, 'message_stop'),
    ],
  }),
};

/** Anthropic's error type for a status (https://docs.anthropic.com/en/api/errors). */
const anthropicErrors: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

const anthropic: Dialect = {
  apis: { '/v1/messages': messages },
  error: (status, type, message) => {
    const errorType = type ?? anthropicErrors[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
    return {
      type: 'error',
      error: { type: errorType, message: message ?? `fake ${errorType}` },
      request_id: `req_${nextId()}`,
    };
  },
  requestIdHeader: 'request-id',
};

// --- Google ---------------------------------------------------------------------------------------------------

const googleFinish = { stop: 'STOP', length: 'MAX_TOKENS', tool_calls: 'STOP' } as const;

function googleUsage(usage: Usage) {
  return {
    promptTokenCount: usage.input,
    candidatesTokenCount: usage.output,
    totalTokenCount: usage.input + usage.output,
    cachedContentTokenCount: usage.cachedInput ?? 0,
  };
}

const functionCallPart = (call: ToolCall) => ({ functionCall: { name: call.name, args: JSON.parse(call.arguments) } });

const generateContent: Api = {
  json: (answer, body) => ({
    candidates: [
      {
        content: {
          parts: [...(answer.text !== '' ? [{ text: answer.text }] : []), ...answer.toolCalls.map(functionCallPart)],
          role: 'model',
        },
        finishReason: googleFinish[answer.finishReason],
        index: 0,
      },
    ],
    usageMetadata: googleUsage(answer.usage),
    modelVersion: body.model ?? 'gemini',
    responseId: nextId(),
  }),
  stream: (_body, usage) => {
    const responseId = nextId();
    const frame = (candidate: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      sse({ candidates: [{ ...candidate, index: 0 }], modelVersion: 'gemini', responseId, ...extra });
    return {
      start: () => [],
      chunk: (text) => frame({ content: { parts: [{ text }], role: 'model' } }),
      // Gemini streams a function call whole, in one part.
      toolCalls: (calls) => [frame({ content: { parts: calls.map(functionCallPart), role: 'model' } })],
      end: (finishReason) => [
        frame(
          { content: { parts: [{ text: '' }], role: 'model' }, finishReason: googleFinish[finishReason] },
          { usageMetadata: googleUsage(usage) },
        ),
      ],
    };
  },
};

const googleStatus: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

const google: Dialect = {
  apis: {},
  route: (path) => {
    const found = /^\/v1beta\/models\/[^/:]+:(generateContent|streamGenerateContent)$/.exec(path);
    return found ? { api: generateContent, stream: found[1] === 'streamGenerateContent' } : undefined;
  },
  error: (status, type, message) => ({
    error: {
      code: status,
      message: message ?? `fake ${type ?? googleStatus[status] ?? 'error'}`,
      status: type ?? googleStatus[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT'),
    },
  }),
  requestIdHeader: 'x-goog-request-id',
  basePath: '/v1beta',
};

// --- The requests' text ---------------------------------------------------------------------------------------

/** The text of a message's content: a string, or parts with `text` (`text`, `input_text`, `output_text`…). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('');
  return '';
}

/** The messages of a Chat Completions, Messages, Responses or Gemini request (Gemini's with their parts as `content`). */
function messagesOf(body: ReceivedRequest['body']): { role?: unknown; content?: unknown }[] {
  if (Array.isArray(body.messages)) return body.messages;
  if (Array.isArray(body.contents))
    return body.contents.map((c: { role?: unknown; parts?: unknown } | null) => ({ role: c?.role, content: c?.parts }));
  if (typeof body.input === 'string') return [{ role: 'user', content: body.input }];
  return Array.isArray(body.input) ? body.input : [];
}

function lastUserText(body: ReceivedRequest['body']): string {
  const user = messagesOf(body).findLast((m) => m?.role === 'user');
  return user ? textOf(user.content) : '';
}

function promptChars(body: ReceivedRequest['body']): number {
  return [body.system, body.instructions, ...messagesOf(body).map((m) => m?.content)].reduce(
    (sum: number, content) => sum + textOf(content).length,
    0,
  );
}

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

/** A chunk as one token, at -0.25, with the `top_logprobs` the request asks for (the chunk, then ` alt1` at -1.25, …). */
function fakeLogprob(chunk: string, body: ReceivedRequest['body']): FakeTokenLogprob {
  const bytes = (token: string) => Array.from(Buffer.from(token, 'utf8'));
  const top = typeof body.top_logprobs === 'number' ? body.top_logprobs : 0;
  return {
    token: chunk,
    logprob: -0.25,
    bytes: bytes(chunk),
    top_logprobs: Array.from({ length: top }, (_, k) =>
      k === 0
        ? { token: chunk, logprob: -0.25, bytes: bytes(chunk) }
        : { token: ` alt${k}`, logprob: -0.25 - k, bytes: bytes(` alt${k}`) },
    ),
  };
}

/** A text in three pieces (fewer when it is shorter), as a provider streams arguments. */
function thirds(text: string): string[] {
  const size = Math.max(1, Math.ceil(text.length / 3));
  const pieces: string[] = [];
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size));
  return pieces;
}

// --- The server -----------------------------------------------------------------------------------------------

/**
 * The fake OpenAI's embedding of a text (`POST /v1/embeddings`): its letter trigrams (of each word padded with
 * spaces) hashed into 256 dimensions. Texts that share words, or most of a word's letters (a typo), are similar; it
 * knows nothing of meaning.
 */
export function fakeEmbedding(text: string, dimensions = 256): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/\p{L}+/gu) ?? []) {
    const padded = ` ${word} `;
    for (let i = 0; i + 3 <= padded.length; i++) {
      let hash = 2166136261;
      for (const char of padded.slice(i, i + 3)) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619);
      vector[(hash >>> 0) % dimensions]! += 1;
    }
  }
  const norm = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0)) || 1;
  return vector.map((value) => value / norm);
}

async function startFake(dialect: Dialect, defaults: FakeDefaults): Promise<FakeProvider> {
  const queue: FakeReply[] = [];
  const embeddingQueue: FakeReply[] = [];
  const requests: ReceivedRequest[] = [];
  let disconnects = 0;
  let claimed = 0;
  let closed = false;
  const waiters = new Set<{ settle: (error?: Error) => void }>();

  function wake(): void {
    for (const waiter of waiters) {
      if (claimed >= disconnects) return;
      claimed += 1;
      waiter.settle();
    }
  }

  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => void answer(req, res, Buffer.concat(parts).toString('utf8')));
  });

  function sendJson(
    res: http.ServerResponse,
    status: number,
    payload: unknown,
    headers: Record<string, string> = {},
  ): void {
    res
      .writeHead(status, {
        'content-type': 'application/json',
        [dialect.requestIdHeader]: `req_${nextId()}`,
        ...headers,
      })
      .end(JSON.stringify(payload));
  }

  async function answer(req: http.IncomingMessage, res: http.ServerResponse, raw: string): Promise<void> {
    let body: ReceivedRequest['body'] = null;
    try {
      body = JSON.parse(raw);
    } catch {
      // Recorded as null, answered 400.
    }
    requests.push({ path: req.url ?? '', headers: req.headers, body });
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    if (path === '/v1/embeddings' && dialect.apis['/v1/chat/completions'] && req.method === 'POST' && body) {
      // Each input gets its fakeEmbedding; a scripted reply counts only for its error.
      const scripted = embeddingQueue.shift();
      if (scripted?.error) {
        const { status, headers = {}, type, message } = scripted.error;
        sendJson(res, status, dialect.error(status, type, message), headers);
        return;
      }
      const inputs: unknown[] = Array.isArray(body.input) ? body.input : [body.input];
      if (!inputs.every((input): input is string => typeof input === 'string')) {
        sendJson(res, 400, dialect.error(400, undefined, "'input' must be a string or an array of strings."));
        return;
      }
      const dimensions = typeof body.dimensions === 'number' ? body.dimensions : 256;
      const tokens = inputs.reduce((sum, input) => sum + words(input), 0);
      sendJson(res, 200, {
        object: 'list',
        model: body.model,
        data: inputs.map((input, index) => ({
          object: 'embedding',
          index,
          embedding: fakeEmbedding(input, dimensions),
        })),
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      });
      return;
    }
    const googleEmbedding =
      dialect === google && req.method === 'POST'
        ? /^\/v1beta\/models\/[^/:]+:(embedContent|batchEmbedContents)$/.exec(path)
        : null;
    if (googleEmbedding) {
      // Google's embeddings: each request's fakeEmbedding (3072 dimensions unless asked), without usage (as Google's).
      if (!body) return sendJson(res, 400, dialect.error(400, undefined, 'Invalid JSON payload received.'));
      const scripted = embeddingQueue.shift();
      if (scripted?.error)
        return sendJson(
          res,
          scripted.error.status,
          dialect.error(scripted.error.status, scripted.error.type, scripted.error.message),
          scripted.error.headers,
        );
      const vector = (
        request: { content?: { parts?: { text?: string }[] }; outputDimensionality?: unknown } | null,
      ) => {
        const text = (request?.content?.parts ?? []).map((part) => part?.text ?? '').join('');
        return {
          values: fakeEmbedding(
            text,
            typeof request?.outputDimensionality === 'number' ? request.outputDimensionality : 3072,
          ),
        };
      };
      if (googleEmbedding[1] === 'embedContent') return sendJson(res, 200, { embedding: vector(body) });
      if (!Array.isArray(body.requests))
        return sendJson(res, 400, dialect.error(400, undefined, "Invalid value at 'requests'."));
      return sendJson(res, 200, { embeddings: body.requests.map(vector) });
    }
    const routed = dialect.route?.(path);
    const api = routed?.api ?? dialect.apis[path];
    if (req.method !== 'POST' || !api) {
      sendJson(res, 404, dialect.error(404, undefined, `Unknown route: ${req.method} ${req.url}`));
      return;
    }
    if (typeof body !== 'object' || body === null) {
      sendJson(res, 400, dialect.error(400, undefined, 'The body of the request is not valid JSON.'));
      return;
    }
    const reply: FakeReply = queue.shift() ??
      defaults.reply?.(body) ?? { chunkDelayMs: defaults.chunkDelayMs, text: `You said: ${lastUserText(body)}` };
    if (reply.error) {
      const { status, headers = {}, type, message } = reply.error;
      sendJson(res, status, dialect.error(status, type, message), headers);
      return;
    }
    const chunks = reply.chunks ?? (reply.text ?? '').match(/\S+\s*|\s+/g) ?? [];
    const text = chunks.join('');
    const toolCalls: ToolCall[] = (reply.toolCalls ?? []).map((call) => ({
      id: call.id ?? (dialect === anthropic ? `toolu_${nextId()}` : `call_${nextId()}`),
      name: call.name,
      arguments: call.arguments,
      chunks: call.chunks ?? thirds(call.arguments),
    }));
    const usage = reply.usage ?? { input: Math.ceil(promptChars(body) / 4), output: words(text) + toolCalls.length };
    const finishReason = reply.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop');
    const logprobs =
      body.logprobs === true ? (reply.logprobs ?? chunks.map((chunk) => [fakeLogprob(chunk, body)])) : null;
    if (!(routed ? routed.stream : body.stream === true)) {
      sendJson(res, 200, api.json({ text, usage, finishReason, toolCalls, logprobs }, body));
      return;
    }

    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      [dialect.requestIdHeader]: `req_${nextId()}`,
    });
    let gone = false;
    res.on('close', () => {
      if (res.writableFinished) return;
      gone = true;
      disconnects += 1;
      wake();
    });
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const stream = api.stream(body, usage);
    res.write(stream.start().join(''));
    if (reply.endless) {
      const delay = Math.max(1, reply.chunkDelayMs ?? 5);
      // Bounded all the same: a test that never disconnects sees its stream stop after a minute.
      for (let i = 0; i < 60_000 / delay; i++) {
        await pause(delay);
        if (gone || closed) return;
        res.write(stream.chunk(`word${i} `));
      }
      if (!gone) res.end();
      return;
    }
    for (const [i, chunk] of chunks.entries()) {
      if (reply.chunkDelayMs) await pause(reply.chunkDelayMs);
      if (gone || closed) return;
      if (i === reply.cutAfterChunks) {
        res.destroy();
        return;
      }
      res.write(stream.chunk(chunk, logprobs?.[i]));
    }
    if (toolCalls.length > 0 && stream.toolCalls && !gone) res.write(stream.toolCalls(toolCalls).join(''));
    if (!gone) res.end(stream.end(finishReason).join(''));
  }

  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${dialect.basePath ?? '/v1'}`,
    requests,
    enqueue: (...replies) => void queue.push(...replies),
    enqueueEmbeddings: (...replies) => void embeddingQueue.push(...replies),
    get disconnects() {
      return disconnects;
    },
    waitForDisconnect: (timeoutMs = 10_000) =>
      new Promise<void>((resolve, reject) => {
        if (claimed < disconnects) {
          claimed += 1;
          resolve();
          return;
        }
        const waiter = {
          settle: (error?: Error) => {
            clearTimeout(timer);
            waiters.delete(waiter);
            if (error) reject(error);
            else resolve();
          },
        };
        const timer = setTimeout(
          () =>
            waiter.settle(
              new Error(`no client disconnected from a stream within ${timeoutMs} ms (${disconnects} so far)`),
            ),
          timeoutMs,
        );
        waiters.add(waiter);
      }),
    close: () =>
      new Promise<void>((resolve) => {
        closed = true;
        for (const waiter of waiters) waiter.settle(new Error('the fake provider was closed'));
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * A fake OpenAI: Chat Completions (`POST /v1/chat/completions`, also what OpenAI-compatible providers such as Groq
 * call) and the Responses API (`POST /v1/responses`). `defaults` apply to requests nothing was enqueued for:
 * `chunkDelayMs` paces the echo like a model generating tokens, `reply` answers by the request's body.
 */
export function startFakeOpenAi(defaults: FakeDefaults = {}): Promise<FakeProvider> {
  return startFake(openAi, defaults);
}

/** A fake Anthropic: the Messages API (`POST /v1/messages`). */
export function startFakeAnthropic(defaults: Pick<FakeReply, 'chunkDelayMs'> = {}): Promise<FakeProvider> {
  return startFake(anthropic, defaults);
}

/**
 * A fake Google Gemini API (at `…/v1beta`): `POST /v1beta/models/<model>:generateContent` and
 * `:streamGenerateContent?alt=sse`, and the embeddings `:embedContent` and `:batchEmbedContents`.
 */
export function startFakeGoogle(defaults: Pick<FakeReply, 'chunkDelayMs'> = {}): Promise<FakeProvider> {
  return startFake(google, defaults);
}

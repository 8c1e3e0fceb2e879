// Fake AI provider upstreams on loopback that speak the providers' real wire formats, so that tests (and
// `npm run bench:chat`) run the real provider code (@ai-sdk/openai, @ai-sdk/anthropic, @ai-sdk/openai-compatible)
// against them: OpenAI's Chat Completions (`POST /v1/chat/completions`, JSON or `data:` chunks, the usage chunk with
// `stream_options.include_usage`, `data: [DONE]`, errors as `{error: {message, type, param, code}}`) and Anthropic's
// Messages API (`POST /v1/messages`, JSON or its named events, errors as `{type: 'error', error: {type, message}}`).
// Each reply is scripted by the test (enqueue), or echoes the last user message.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeReply {
  /** The text to answer; streamed one word per chunk (spaces kept) unless `chunks` is given. */
  text?: string;
  chunks?: string[];
  /** Reported usage (default: prompt = characters of the messages / 4, rounded up; completion = chunks). */
  usage?: { input: number; output: number; cachedInput?: number };
  finishReason?: 'stop' | 'length';
  /** Answer this error instead: status, headers (`retry-after`…), and the provider's error type and message. */
  error?: { status: number; headers?: Record<string, string>; message?: string; type?: string };
  /** Milliseconds before each streamed chunk (default 0). */
  chunkDelayMs?: number;
  /** Stream without end (a chunk every `chunkDelayMs`, default 5 ms) until the client disconnects. */
  endless?: boolean;
}

export interface ReceivedRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

export interface FakeProvider {
  /** The base URL to give the provider package (`…/v1`). */
  url: string;
  requests: ReceivedRequest[];
  /** Replies used in order, one per request; then the default reply, "You said: <last user message>". */
  enqueue(...replies: FakeReply[]): void;
  /** Streamed answers the client abandoned before their end. */
  readonly disconnects: number;
  /** Resolves at the next disconnect of a client from a streamed answer. */
  waitForDisconnect(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

type Wire = {
  path: string;
  json(reply: Required<Pick<FakeReply, 'finishReason'>> & { text: string; usage: NonNullable<FakeReply['usage']> }, body: any): unknown;
  /** The SSE frames of a stream: before the text, one per chunk, and after it. */
  start(body: any, usage: NonNullable<FakeReply['usage']>): string[];
  chunk(text: string, body: any): string;
  end(finishReason: 'stop' | 'length', usage: NonNullable<FakeReply['usage']>, body: any): string[];
  error(status: number, type: string, message: string): unknown;
};

const openAiWire: Wire = {
  path: '/v1/chat/completions',
  json: (reply, body) => ({
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1795132800,
    model: body.model,
    choices: [{ index: 0, message: { role: 'assistant', content: reply.text, refusal: null }, logprobs: null, finish_reason: reply.finishReason }],
    usage: openAiUsage(reply.usage),
  }),
  start: (body) => [sse({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1795132800, model: body.model, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })],
  chunk: (text, body) => sse({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1795132800, model: body.model, choices: [{ index: 0, delta: { content: text }, finish_reason: null }] }),
  end: (finishReason, usage, body) => [
    sse({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1795132800, model: body.model, choices: [{ index: 0, delta: {}, finish_reason: finishReason }] }),
    ...(body.stream_options?.include_usage ? [sse({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1795132800, model: body.model, choices: [], usage: openAiUsage(usage) })] : []),
    'data: [DONE]\n\n',
  ],
  error: (status, type, message) => ({ error: { message, type, param: null, code: status === 401 ? 'invalid_api_key' : status === 429 ? 'rate_limit_exceeded' : null } }),
};

function openAiUsage(usage: NonNullable<FakeReply['usage']>) {
  return { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output, prompt_tokens_details: { cached_tokens: usage.cachedInput ?? 0 } };
}

const anthropicStop = { stop: 'end_turn', length: 'max_tokens' } as const;

const anthropicWire: Wire = {
  path: '/v1/messages',
  json: (reply, body) => ({
    id: 'msg_fake',
    type: 'message',
    role: 'assistant',
    model: body.model,
    content: [{ type: 'text', text: reply.text }],
    stop_reason: anthropicStop[reply.finishReason],
    stop_sequence: null,
    usage: { input_tokens: reply.usage.input - (reply.usage.cachedInput ?? 0), output_tokens: reply.usage.output, cache_read_input_tokens: reply.usage.cachedInput ?? 0, cache_creation_input_tokens: 0 },
  }),
  start: (body, usage) => [
    sse(
      { type: 'message_start', message: { id: 'msg_fake', type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: usage.input - (usage.cachedInput ?? 0), output_tokens: 1, cache_read_input_tokens: usage.cachedInput ?? 0, cache_creation_input_tokens: 0 } } },
      'message_start',
    ),
    sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start'),
    sse({ type: 'ping' }, 'ping'),
  ],
  chunk: (text) => sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }, 'content_block_delta'),
  end: (finishReason, usage) => [
    sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop'),
    sse({ type: 'message_delta', delta: { stop_reason: anthropicStop[finishReason], stop_sequence: null }, usage: { output_tokens: usage.output } }, 'message_delta'),
    sse({ type: 'message_stop' }, 'message_stop'),
  ],
  error: (_status, type, message) => ({ type: 'error', error: { type, message } }),
};

function sse(data: unknown, event?: string): string {
  return `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;
}

/** The text of the last user message of an OpenAI or Anthropic request. */
function lastUserText(body: any): string {
  const user = [...(body.messages ?? [])].reverse().find((m: any) => m.role === 'user');
  if (!user) return '';
  return typeof user.content === 'string' ? user.content : user.content.map((part: any) => part.text ?? '').join('');
}

function promptLength(body: any): number {
  return Math.ceil(JSON.stringify([body.system ?? '', body.messages ?? []]).length / 4);
}

const defaultErrorType: Record<number, string> = { 401: 'authentication_error', 429: 'rate_limit_error', 529: 'overloaded_error' };

async function startFake(wire: Wire, defaults: Pick<FakeReply, 'chunkDelayMs'>): Promise<FakeProvider> {
  const queue: FakeReply[] = [];
  const requests: ReceivedRequest[] = [];
  let disconnects = 0;
  let waiters: Array<() => void> = [];

  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => void answer(req, res, raw));
  });

  async function answer(req: http.IncomingMessage, res: http.ServerResponse, raw: string): Promise<void> {
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      body = null;
    }
    requests.push({ path: req.url ?? '', headers: req.headers, body });
    if (req.method !== 'POST' || req.url !== wire.path || !body) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify(wire.error(404, 'not_found_error', `no route ${req.method} ${req.url}`)));
      return;
    }
    const reply = queue.shift() ?? { ...defaults, text: `You said: ${lastUserText(body)}` };
    if (reply.error) {
      const { status, headers = {}, type = defaultErrorType[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), message = `fake ${status}` } = reply.error;
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(wire.error(status, type, message)));
      return;
    }
    const chunks = reply.chunks ?? (reply.text ?? '').match(/\S+\s*|\s+/g) ?? [];
    const text = chunks.join('');
    const usage = reply.usage ?? { input: promptLength(body), output: chunks.length };
    const finishReason = reply.finishReason ?? 'stop';
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(wire.json({ text, usage, finishReason }, body)));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let gone = false;
    res.on('close', () => {
      if (res.writableFinished) return;
      gone = true;
      disconnects += 1;
      for (const wake of waiters.splice(0)) wake();
    });
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    for (const frame of wire.start(body, usage)) res.write(frame);
    if (reply.endless) {
      // Bounded all the same: a test that forgot to disconnect ends after 60 s.
      for (let i = 0; i < 60_000 / (reply.chunkDelayMs ?? 5) && !gone; i++) {
        await pause(reply.chunkDelayMs ?? 5);
        if (!gone) res.write(wire.chunk(`word${i} `, body));
      }
    } else {
      for (const chunk of chunks) {
        if (reply.chunkDelayMs) await pause(reply.chunkDelayMs);
        if (gone) return;
        res.write(wire.chunk(chunk, body));
      }
    }
    if (!gone) res.end(wire.end(finishReason, usage, body).join(''));
  }

  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue: (...replies) => void queue.push(...replies),
    get disconnects() {
      return disconnects;
    },
    waitForDisconnect: (timeoutMs = 10_000) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no client disconnected within ${timeoutMs} ms`)), timeoutMs);
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
    close: () =>
      new Promise<void>((resolve) => {
        waiters = [];
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** `defaults` apply to the default (echo) reply: `chunkDelayMs` paces it like a model generating tokens. */
export function startFakeOpenAi(defaults: Pick<FakeReply, 'chunkDelayMs'> = {}): Promise<FakeProvider> {
  return startFake(openAiWire, defaults);
}

export function startFakeAnthropic(defaults: Pick<FakeReply, 'chunkDelayMs'> = {}): Promise<FakeProvider> {
  return startFake(anthropicWire, defaults);
}

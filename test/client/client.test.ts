// The generated client against real HTTP servers on loopback: auth, Idempotency-Key, Retry-After, the SSE stream.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { ContentServiceError, createContentServiceClient, retryDelayMs } from '../../generated/client.ts';
import type { components } from '../../generated/openapi.ts';
import { deref, firstExample, schemaErrors, spec } from '../support/spec.ts';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server | undefined;

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A loopback server that answers the n-th request with the n-th handler and records what it saw. */
async function serve(
  ...handlers: ((res: ServerResponse, seen: Seen) => void)[]
): Promise<{ baseUrl: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const entry = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      seen.push(entry);
      const handler = handlers[Math.min(seen.length, handlers.length) - 1]!;
      handler(res, entry);
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { baseUrl: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, seen };
}

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}) =>
  (res: ServerResponse) => {
    res.writeHead(status, {
      'Content-Type': status >= 400 ? 'application/problem+json' : 'application/json',
      ...headers,
    });
    res.end(JSON.stringify(body));
  };

const modelList = { data: [], next_cursor: null };
const rateLimited = {
  type: 'https://docs.content-service.example/problems/rate_limited',
  title: 'Too many requests',
  status: 429,
  code: 'rate_limited',
  request_id: 'req_01JD3Y2M7Q8W9E4R5T6Y7V8X9Z',
};

/** The contract's example request body of POST /v1/voices. */
function exampleBody(path: '/v1/voices'): components['schemas']['VoiceCreateRequest'] {
  return firstExample(
    deref(spec.paths[path].post.requestBody).content['application/json'],
  ) as components['schemas']['VoiceCreateRequest'];
}

describe('auth and Idempotency-Key', () => {
  test('sends the API key as a bearer token, and an Idempotency-Key on POST but not on GET', async () => {
    const { baseUrl, seen } = await serve(json(200, modelList), json(202, {}));
    const client = createContentServiceClient({ baseUrl, apiKey: 'cs_live_abc' });
    await client.GET('/v1/models');
    await client.POST('/v1/voices', { body: exampleBody('/v1/voices') });
    expect(seen[0]!.headers.authorization).toBe('Bearer cs_live_abc');
    expect(seen[0]!.headers['idempotency-key']).toBeUndefined();
    expect(seen[1]!.headers.authorization).toBe('Bearer cs_live_abc');
    expect(seen[1]!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
  });

  test('keeps an Idempotency-Key the caller chose', async () => {
    const { baseUrl, seen } = await serve(json(202, {}));
    const client = createContentServiceClient({ baseUrl, apiKey: 'cs_live_abc' });
    await client.POST('/v1/voices', { body: exampleBody('/v1/voices'), headers: { 'Idempotency-Key': 'my-key-1' } });
    expect(seen[0]!.headers['idempotency-key']).toBe('my-key-1');
  });
});

describe('retries', () => {
  test('waits Retry-After seconds after a 429 and sends the same request with the same Idempotency-Key', async () => {
    const { baseUrl, seen } = await serve(json(429, rateLimited, { 'Retry-After': '3' }), json(202, { ok: true }));
    const waits: number[] = [];
    const client = createContentServiceClient({ baseUrl, apiKey: 'k', sleep: async (ms) => void waits.push(ms) });
    const { response } = await client.POST('/v1/voices', { body: exampleBody('/v1/voices') });
    expect(response.status).toBe(202);
    expect(waits).toEqual([3000]);
    expect(seen).toHaveLength(2);
    expect(seen[1]!.headers['idempotency-key']).toBe(seen[0]!.headers['idempotency-key']);
    expect(seen[1]!.body).toBe(seen[0]!.body);
  });

  test('gives up after maxRetries and returns the last problem', async () => {
    const { baseUrl, seen } = await serve(json(429, rateLimited, { 'Retry-After': '1' }));
    const client = createContentServiceClient({ baseUrl, apiKey: 'k', maxRetries: 2, sleep: async () => {} });
    const { error, response } = await client.GET('/v1/models');
    expect(seen).toHaveLength(3);
    expect(response.status).toBe(429);
    expect(error).toMatchObject({ code: 'rate_limited' });
  });

  test('does not wait longer than maxRetryDelayMs', async () => {
    const { baseUrl, seen } = await serve(json(429, rateLimited, { 'Retry-After': '120' }));
    const client = createContentServiceClient({ baseUrl, apiKey: 'k', maxRetryDelayMs: 5000, sleep: async () => {} });
    const { response } = await client.GET('/v1/models');
    expect(response.status).toBe(429);
    expect(seen).toHaveLength(1);
  });

  test('does not retry a 4xx other than 429', async () => {
    const { baseUrl, seen } = await serve(json(404, { ...rateLimited, status: 404, code: 'not_found' }));
    const client = createContentServiceClient({ baseUrl, apiKey: 'k', sleep: async () => {} });
    const { response } = await client.GET('/v1/models/{id}', { params: { path: { id: 'gpt-4o-mini' } } });
    expect(response.status).toBe(404);
    expect(seen).toHaveLength(1);
  });

  test('retries a dropped connection', async () => {
    const { baseUrl, seen } = await serve((res) => res.socket?.destroy(), json(200, modelList));
    const client = createContentServiceClient({ baseUrl, apiKey: 'k', sleep: async () => {} });
    const { data } = await client.GET('/v1/models');
    expect(data).toEqual(modelList);
    expect(seen).toHaveLength(2);
  });

  test('reads Retry-After as seconds or as an HTTP date', () => {
    const at = (value: string) => new Response(null, { status: 429, headers: { 'Retry-After': value } });
    expect(retryDelayMs(at('7'), 0)).toBe(7000);
    expect(retryDelayMs(at(new Date(Date.UTC(2026, 0, 1, 0, 0, 30)).toUTCString()), 0, Date.UTC(2026, 0, 1))).toBe(
      30_000,
    );
    expect(retryDelayMs(undefined, 2)).toBe(2000);
  });
});

describe('streamChatCompletion', () => {
  // The stream documented in the contract: the chunks a server sends, then `data: [DONE]`.
  const responses = spec.paths['/v1/chat/completions'].post.responses['200'].content;
  const documentedStream = firstExample(responses['text/event-stream']) as string;
  const documentedChunks = documentedStream
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice('data: '.length)));
  const chunk = (content: string | undefined, finish: string | null) => ({
    ...documentedChunks[0],
    choices: [{ index: 0, delta: content === undefined ? {} : { content }, finish_reason: finish }],
  });

  test('yields each documented chunk in order until [DONE], even when events are split across TCP writes', async () => {
    expect(documentedChunks.length).toBeGreaterThan(1);
    expect(documentedStream.trimEnd().endsWith('data: [DONE]')).toBe(true);
    const { baseUrl, seen } = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      const half = Math.floor(documentedStream.length / 2);
      res.write(documentedStream.slice(0, half));
      setTimeout(() => res.end(documentedStream.slice(half)), 20);
    });
    const client = createContentServiceClient({ baseUrl, apiKey: 'k' });
    const received = [];
    for await (const c of client.streamChatCompletion({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Hi' }],
    })) {
      received.push(c);
    }
    expect(received).toEqual(documentedChunks);
    for (const c of received) expect(schemaErrors('/components/schemas/ChatCompletionChunk', c)).toEqual([]);
    expect(JSON.parse(seen[0]!.body)).toMatchObject({ stream: true, model: 'gpt-4o-mini' });
    expect(seen[0]!.headers.accept).toBe('text/event-stream');
  });

  test('throws ContentServiceError with the problem document on an error answer', async () => {
    const problem = { ...rateLimited, status: 404, code: 'model_not_found', title: 'Model not found' };
    const { baseUrl } = await serve(json(404, problem));
    const client = createContentServiceClient({ baseUrl, apiKey: 'k' });
    const stream = client.streamChatCompletion({ model: 'no-such-model', messages: [{ role: 'user', content: 'Hi' }] });
    const failure = await stream.next().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ContentServiceError);
    expect(failure).toMatchObject({ status: 404, problem: { code: 'model_not_found' } });
  });

  test('closes the connection when the caller stops reading before [DONE]', async () => {
    let closed!: () => void;
    const connectionClosed = new Promise<void>((resolve) => (closed = resolve));
    const { baseUrl } = await serve((res) => {
      res.on('close', closed);
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      // One chunk, then the stream stays open: only the client can end it.
      res.write(`data: ${JSON.stringify(chunk('Hel', null))}\n\n`);
    });
    const client = createContentServiceClient({ baseUrl, apiKey: 'k' });
    const received = [];
    for await (const c of client.streamChatCompletion({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Hi' }],
    })) {
      received.push(c);
      break;
    }
    expect(received).toEqual([chunk('Hel', null)]);
    await connectionClosed;
  });

  test('throws when the stream ends without [DONE]', async () => {
    const { baseUrl } = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify(chunk('Hel', null))}\n\n`);
    });
    const client = createContentServiceClient({ baseUrl, apiKey: 'k' });
    const stream = client.streamChatCompletion({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] });
    await expect(stream.next()).resolves.toMatchObject({ done: false });
    await expect(stream.next()).rejects.toThrow(/without `data: \[DONE\]`/);
  });
});

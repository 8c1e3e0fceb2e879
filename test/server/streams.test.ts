// Streamed answers (`text/event-stream`), through the test seam on createChatCompletion (the override stands in for
// the chat feature's handler, so the platform's part is tested alone): events arrive in order as Server-Sent Events, the client's disconnect aborts the producer, an
// Idempotency-Key replays a completed stream and releases a cut one, and a failure before the first event is an
// ordinary problem document (with OpenAI's `error`, the chat feature's problem shape), one after it a last
// `event: error`.
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { ContentServiceError, createContentServiceClient } from '../../generated/client.ts';
import type { components } from '../../generated/openapi.ts';
import type { Handlers, ServerSentEvent } from '../../generated/operations.ts';
import type { RequestContext } from '../../src/platform/context.ts';
import { Problem } from '../../src/platform/problems.ts';
import { expectProblem } from '../support/expect.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { parseEvents } from '../support/sse.ts';

type Chunk = components['schemas']['ChatCompletionChunk'];
type StreamHandler = Handlers<RequestContext>['createChatCompletion'];

const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hi' }], stream: true };

function chunk(n: number, content: string): Chunk {
  return {
    id: 'chatcmpl-01JDA4M7Q4B5C6D7E8F9G0H1J2',
    object: 'chat.completion.chunk',
    created: 1795183407,
    model: 'gpt-4o-mini',
    choices: [
      { index: 0, delta: n === 0 ? { role: 'assistant', content } : { content }, logprobs: null, finish_reason: null },
    ],
    usage: null,
    thread_id: null,
    cost_usd: null,
  } as Chunk;
}

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A stream of `words` as chunks, then [DONE]. */
function streamOf(words: string[], onRun?: () => void): StreamHandler {
  return async () => {
    onRun?.();
    return {
      status: 200,
      contentType: 'text/event-stream',
      events: (async function* (): AsyncGenerator<ServerSentEvent<Chunk>> {
        for (const [i, word] of words.entries()) yield { data: chunk(i, word) };
        yield { text: '[DONE]' };
      })(),
    };
  };
}

describe.each(databaseKinds)('streamed answers on %s', (kind) => {
  let server: TestServer;

  beforeEach(async () => {
    server = await startTestServer({ database: kind, handlerOverrides: true });
  });

  afterEach(async () => {
    server.handlerOverrides.clear();
    await server.close();
  });

  const post = (headers: Record<string, string> = {}, signal?: AbortSignal) =>
    fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${server.ownerKey}`,
        'Content-Type': 'application/json',
        Accept: 'text/event-stream',
        ...headers,
      },
      body: JSON.stringify(body),
      signal,
    });

  test('without an override the chat feature answers (here: no OpenAI key, so 422 model_unavailable)', async () => {
    const answer = await server.call('POST', '/v1/chat/completions', { body });
    expectProblem(answer, 422, 'model_unavailable');
  });

  test('events arrive in order as Server-Sent Events, read by the generated client', async () => {
    const words = ['Hello', ',', ' world', '!'];
    server.handlerOverrides.set('createChatCompletion', streamOf(words));
    const response = await post();
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    const events = parseEvents(await response.text());
    expect(events.map((e) => e.data)).toEqual([...words.map((w, i) => JSON.stringify(chunk(i, w))), '[DONE]']);

    const client = createContentServiceClient({ baseUrl: server.url, apiKey: server.ownerKey, maxRetries: 0 });
    const received: string[] = [];
    for await (const c of client.streamChatCompletion({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Say hi' }],
    }))
      received.push(c.choices[0]!.delta.content ?? '');
    expect(received).toEqual(words);
  });

  test("the client's disconnect aborts the request's signal and stops the producer", async () => {
    const aborted = deferred<unknown>();
    const producerEnded = deferred();
    server.handlerOverrides.set('createChatCompletion', async (_request, context: RequestContext) => ({
      status: 200,
      contentType: 'text/event-stream',
      events: (async function* () {
        try {
          yield { data: chunk(0, 'first') };
          // Waits for more input that never comes, until the client leaves.
          await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }));
          aborted.resolve(context.signal.reason);
          yield { data: chunk(1, 'never sent') };
        } finally {
          producerEnded.resolve();
        }
      })(),
    }));
    const client = new AbortController();
    const response = await post({}, client.signal);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('"first"');
    client.abort();
    expect(String(await aborted.promise)).toContain('closed the connection');
    await producerEnded.promise;
  });

  test('Idempotency-Key: a completed stream is stored and replayed as the same stream; while it runs, 409', async () => {
    let runs = 0;
    const gate = deferred();
    server.handlerOverrides.set('createChatCompletion', async () => {
      runs++;
      return {
        status: 200,
        contentType: 'text/event-stream',
        events: (async function* () {
          yield { data: chunk(0, 'one') };
          await gate.promise;
          yield { data: chunk(1, 'two') };
          yield { text: '[DONE]' };
        })(),
      };
    });
    const key = { 'Idempotency-Key': `stream-${kind}-1` };
    const first = await post(key);
    expect(first.headers.get('idempotent-replayed')).toBe('false');
    const reader = first.body!.getReader();
    const decoder = new TextDecoder();
    let original = decoder.decode((await reader.read()).value, { stream: true });

    // Still running: the key is in use; the problem has OpenAI's `error` object (the chat feature's problem shape).
    const busy = await server.call('POST', '/v1/chat/completions', { body, headers: key });
    expectProblem(busy, 409, 'idempotency_key_in_use');
    expect(busy.body.error).toMatchObject({ type: 'invalid_request_error', code: 'idempotency_key_in_use' });

    gate.resolve();
    for (let part = await reader.read(); !part.done; part = await reader.read())
      original += decoder.decode(part.value, { stream: true });

    const replay = await post(key);
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const replayed = await replay.text();
    expect(replayed).toBe(original);
    expect(parseEvents(replayed).map((e) => e.data)).toEqual([
      JSON.stringify(chunk(0, 'one')),
      JSON.stringify(chunk(1, 'two')),
      '[DONE]',
    ]);
    expect(runs).toBe(1);
  });

  test('Idempotency-Key: a stream cut by the client is not stored, so a retry with the key runs anew', async () => {
    let runs = 0;
    const producerEnded = deferred();
    server.handlerOverrides.set('createChatCompletion', async (_request, context: RequestContext) => {
      runs++;
      if (runs > 1) return streamOf(['again'])(_request, context);
      return {
        status: 200,
        contentType: 'text/event-stream',
        events: (async function* () {
          try {
            yield { data: chunk(0, 'cut') };
            await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }));
          } finally {
            producerEnded.resolve();
          }
        })(),
      };
    });
    const key = { 'Idempotency-Key': `stream-${kind}-2` };
    const client = new AbortController();
    const first = await post(key, client.signal);
    await first.body!.getReader().read();
    client.abort();
    await producerEnded.promise;
    // The key is released right after the producer stops; a retry may still race that by a moment.
    let retry = await post(key);
    while (retry.status === 409) {
      await retry.text();
      retry = await post(key);
    }
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('false');
    expect(parseEvents(await retry.text()).map((e) => e.data)).toEqual([JSON.stringify(chunk(0, 'again')), '[DONE]']);
    expect(runs).toBe(2);
  });

  test('a failure before the first event is a problem document, stored for the key like any 4xx answer', async () => {
    server.handlerOverrides.set('createChatCompletion', async () => ({
      status: 200,
      contentType: 'text/event-stream',
      // biome-ignore lint/correctness/useYield: the stream fails before its first event, which is what this test is about
      events: (async function* (): AsyncGenerator<ServerSentEvent<Chunk>> {
        throw new Problem('model_not_found', 'No model gpt-9 in the catalogue.');
      })(),
    }));
    const key = { 'Idempotency-Key': `stream-${kind}-3` };
    const answer = await server.call('POST', '/v1/chat/completions', { body, headers: key });
    expectProblem(answer, 404, 'model_not_found');
    expect(answer.headers.get('content-type')).toContain('application/problem+json');
    expect(answer.body.error).toEqual({
      message: 'No model gpt-9 in the catalogue.',
      type: 'invalid_request_error',
      param: null,
      code: 'model_not_found',
    });
    const replay = await server.call('POST', '/v1/chat/completions', { body, headers: key });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(answer.body);
  });

  test('a failure after the first event ends the stream with an `event: error` problem, and the key is released', async () => {
    let runs = 0;
    server.handlerOverrides.set('createChatCompletion', async () => {
      runs++;
      return {
        status: 200,
        contentType: 'text/event-stream',
        events: (async function* (): AsyncGenerator<ServerSentEvent<Chunk>> {
          yield { data: chunk(0, 'partial') };
          throw new Error('the provider went away');
        })(),
      };
    });
    const key = { 'Idempotency-Key': `stream-${kind}-4` };
    const response = await post(key);
    expect(response.status).toBe(200);
    const events = parseEvents(await response.text());
    expect(events).toHaveLength(2);
    expect(events[1]!.event).toBe('error');
    const problem = JSON.parse(events[1]!.data);
    expect(problem).toMatchObject({
      status: 500,
      code: 'internal_error',
      error: { type: 'server_error', code: 'internal_error' },
    });

    const client = createContentServiceClient({ baseUrl: server.url, apiKey: server.ownerKey, maxRetries: 0 });
    const failing = (async () => {
      for await (const _ of client.streamChatCompletion(
        { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hi' }] },
        { idempotencyKey: key['Idempotency-Key'] },
      ));
    })();
    await expect(failing).rejects.toBeInstanceOf(ContentServiceError);
    expect(runs).toBe(2);
  });
});

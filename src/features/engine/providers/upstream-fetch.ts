// The `fetch` the engine gives every hosted provider's AI SDK package: node:http(s) with kept-alive connections under
// the same Request/Response interface, because the global fetch (undici's) spends more CPU on its own bookkeeping per
// call than the rest of a provider call. It does what a provider call needs of fetch and no more: a POST or GET with
// a string or bytes body, headers, an abort signal, the answer's body as a stream (decompressed when the upstream
// compressed it), and the global fetch's errors (`TypeError('fetch failed')` with the cause, the signal's reason on
// abort), so the AI SDK classifies failures the same way. A call it does not cover (a Request object, a form or
// stream body) goes to the global fetch. Redirects are not followed: a provider's API answers, it does not redirect.
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';

// An idle connection is closed after 4 s (undici's default): a provider or a proxy in between may drop it sooner
// without a word, and a call on a dropped connection fails or hangs. The timeout ends idle connections only.
const agents = {
  'http:': new http.Agent({ keepAlive: true, timeout: 4_000 }),
  'https:': new https.Agent({ keepAlive: true, timeout: 4_000 }),
};

/** Statuses whose Response has no body (the Fetch standard's null body statuses). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

function decoded(response: http.IncomingMessage): Readable {
  switch (response.headers['content-encoding']?.trim().toLowerCase()) {
    // As lenient as undici at the end of the body: a stream whose compressor never wrote its trailer still ends.
    case 'gzip':
    case 'x-gzip':
      return response.pipe(zlib.createGunzip({ finishFlush: zlib.constants.Z_SYNC_FLUSH }));
    case 'deflate':
      return response.pipe(zlib.createInflate({ finishFlush: zlib.constants.Z_SYNC_FLUSH }));
    case 'br':
      return response.pipe(zlib.createBrotliDecompress({ finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH }));
    default:
      return response;
  }
}

/**
 * The answer's body as a web stream that reads the socket as fast as its reader does. Once it is closed, errored or
 * cancelled, nothing more reaches it (a decompressor may still hold output after the socket is gone).
 */
function bodyStream(
  response: http.IncomingMessage,
  request: http.ClientRequest,
  signal: AbortSignal | undefined,
): ReadableStream<Uint8Array> {
  const source = decoded(response);
  let open = true;
  const stop = () => {
    open = false;
    signal?.removeEventListener('abort', onAbort);
    request.destroy();
    if (source !== response) source.destroy();
  };
  let fail: (error: unknown) => void = () => {};
  const onAbort = () => fail(signal!.reason);
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        fail = (error) => {
          if (!open) return;
          stop();
          controller.error(error);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        source.on('data', (chunk: Buffer) => {
          if (!open) return;
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) source.pause();
        });
        source.once('end', () => {
          if (!open) return;
          open = false;
          signal?.removeEventListener('abort', onAbort);
          controller.close();
        });
        // As the global fetch: a body cut short (or one that does not decompress) is TypeError('terminated').
        const terminated = (error: unknown) => fail(new TypeError('terminated', { cause: error }));
        source.on('error', terminated);
        if (source !== response) response.on('error', terminated);
        // The connection closed before the body's end.
        response.once('close', () => {
          if (!response.complete) fail(new TypeError('terminated'));
        });
      },
      pull() {
        source.resume();
      },
      cancel() {
        if (open) stop();
      },
    },
    // Counted in bytes: a stream of small events (one per token) does not pause the socket after each of them.
    { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength },
  );
}

function headerPairs(headers: HeadersInit | undefined): Array<[string, string]> {
  if (headers === undefined) return [];
  if (headers instanceof Headers || Array.isArray(headers)) return [...new Headers(headers)];
  return Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== undefined);
}

export function upstreamFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const body = init.body;
  if (
    input instanceof Request ||
    (body != null && typeof body !== 'string' && !(body instanceof Uint8Array)) ||
    init.redirect === 'manual'
  )
    return fetch(input, init);
  const url = typeof input === 'string' ? new URL(input) : input;
  const agent = agents[url.protocol as keyof typeof agents];
  if (!agent) return fetch(input, init);
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const headers: Record<string, string> = {};
  for (const [name, value] of headerPairs(init.headers)) headers[name.toLowerCase()] = value;
  headers['accept-encoding'] ??= 'gzip, deflate, br';
  if (body != null) headers['content-length'] = String(Buffer.byteLength(body));
  return new Promise<Response>((resolve, reject) => {
    const send = url.protocol === 'https:' ? https.request : http.request;
    const request = send(url, { method: init.method ?? 'GET', headers, agent });
    const onAbort = () => {
      const reason = signal!.reason;
      request.destroy(reason);
      reject(reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    request.on('error', (error) => {
      signal?.removeEventListener('abort', onAbort);
      reject(new TypeError('fetch failed', { cause: error }));
    });
    // A connection closed without an answer (a 101, say, which nothing here upgrades); after one, this does nothing.
    request.once('close', () => reject(new TypeError('fetch failed', { cause: new Error('closed before an answer') })));
    request.once('response', (response) => {
      signal?.removeEventListener('abort', onAbort);
      // Thrown here, an answer the Fetch standard does not allow (a status over 599, a status text with a control
      // character) would escape the HTTP parser and end the process: it is a failed fetch, as with the global one.
      try {
        const status = response.statusCode ?? 0;
        const responseHeaders = new Headers();
        const raw = response.rawHeaders;
        for (let i = 0; i < raw.length; i += 2) responseHeaders.append(raw[i]!, raw[i + 1]!);
        const empty = NULL_BODY.has(status) || init.method === 'HEAD';
        const stream = empty ? null : bodyStream(response, request, signal);
        resolve(new Response(stream, { status, statusText: response.statusMessage ?? '', headers: responseHeaders }));
        // A body the Response does not have is still read off the socket, so that the connection can be reused.
        if (empty) response.resume();
      } catch (error) {
        request.destroy();
        reject(new TypeError('fetch failed', { cause: error }));
      }
    });
    request.end(body ?? undefined);
  });
}

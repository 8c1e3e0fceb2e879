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

const agents = {
  'http:': new http.Agent({ keepAlive: true }),
  'https:': new https.Agent({ keepAlive: true }),
};

/** Statuses whose Response has no body (the Fetch standard's null body statuses). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

function decoded(response: http.IncomingMessage): Readable {
  switch (response.headers['content-encoding']?.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return response.pipe(zlib.createGunzip({ flush: zlib.constants.Z_SYNC_FLUSH }));
    case 'deflate':
      return response.pipe(zlib.createInflate({ flush: zlib.constants.Z_SYNC_FLUSH }));
    case 'br':
      return response.pipe(zlib.createBrotliDecompress({ flush: zlib.constants.BROTLI_OPERATION_FLUSH }));
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
    request.once('response', (response) => {
      const status = response.statusCode ?? 0;
      const responseHeaders = new Headers();
      const raw = response.rawHeaders;
      for (let i = 0; i < raw.length; i += 2) responseHeaders.append(raw[i]!, raw[i + 1]!);
      signal?.removeEventListener('abort', onAbort);
      const empty = NULL_BODY.has(status) || init.method === 'HEAD';
      // A body the Response does not have is still read off the socket, so that the connection can be reused.
      if (empty) response.resume();
      const stream = empty ? null : bodyStream(response, request, signal);
      resolve(new Response(stream, { status, statusText: response.statusMessage ?? '', headers: responseHeaders }));
    });
    request.end(body ?? undefined);
  });
}

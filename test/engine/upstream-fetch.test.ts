// The engine's fetch for provider calls (upstreamFetch) against a real HTTP server on loopback: what a provider call
// needs of fetch behaves as the global fetch's does (the provider packages' own behaviour through it is covered by
// fake-providers.test.ts).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { upstreamFetch } from '../../src/features/engine/providers/upstream-fetch.ts';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  remotePort: number;
}

let server: http.Server;
let base: string;
const seen: Seen[] = [];
/** Requests whose connection closed before their answer ended, by path. */
const closedEarly: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      seen.push({
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
        remotePort: req.socket.remotePort!,
      });
      res.on('close', () => {
        if (!res.writableFinished) closedEarly.push(req.url!);
      });
      switch (req.url) {
        case '/json':
          res.writeHead(201, 'Made', { 'content-type': 'application/json', 'x-request-id': 'req_1' });
          res.end(JSON.stringify({ ok: true }));
          return;
        case '/gzip':
          res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
          res.end(zlib.gzipSync(JSON.stringify({ compressed: true })));
          return;
        case '/empty':
          res.writeHead(204);
          res.end();
          return;
        case '/cut':
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
          res.write('{"partial":');
          setTimeout(() => res.socket?.destroy(), 20);
          return;
        case '/gzip-endless': {
          res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
          const gzip = zlib.createGzip({ flush: zlib.constants.Z_SYNC_FLUSH });
          gzip.pipe(res);
          const timer = setInterval(() => gzip.write('data: {"tick":1}\n\n'), 2);
          res.on('close', () => clearInterval(timer));
          return;
        }
        case '/odd-status':
          res.writeHead(999, { 'content-type': 'application/json' });
          res.end('{}');
          return;
        case '/gzip-no-trailer':
          // What a sloppy proxy sends: the compressed data without gzip's trailer.
          res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
          res.end(zlib.gzipSync(JSON.stringify({ trailer: false })).subarray(0, -8));
          return;
        case '/silent':
          return; // never answers
        case '/endless': {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          const timer = setInterval(() => res.write('data: {"tick":1}\n\n'), 2);
          res.on('close', () => clearInterval(timer));
          return;
        }
        default:
          res.writeHead(404, { 'content-type': 'application/json' });
          res.end('{"error":{"message":"no such route"}}');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** Reads what is left of a body; what reading it threw, or undefined when it ended (bounded). */
async function readUntilError(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<unknown> {
  for (let i = 0; i < 10_000; i++) {
    const read = await reader.read().catch((caught: unknown) => ({ caught }));
    if ('caught' in read) return read.caught;
    if (read.done) return undefined;
  }
  return undefined;
}

describe('upstreamFetch', () => {
  test('a POST arrives with its method, headers and body; the answer keeps its status, status text, headers and body', async () => {
    const response = await upstreamFetch(`${base}/json`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer sk-test' },
      body: JSON.stringify({ model: 'gpt-4o-mini' }),
    });
    expect(response.status).toBe(201);
    expect(response.ok).toBe(true);
    expect(response.statusText).toBe('Made');
    expect(response.headers.get('x-request-id')).toBe('req_1');
    expect(await response.json()).toEqual({ ok: true });
    const request = seen.at(-1)!;
    expect(request).toMatchObject({ method: 'POST', url: '/json', body: '{"model":"gpt-4o-mini"}' });
    expect(request.headers).toMatchObject({
      'content-type': 'application/json',
      authorization: 'Bearer sk-test',
      'content-length': '23',
    });
  });

  test('headers given as a Headers object or pairs are sent too; bytes are a body', async () => {
    await (
      await upstreamFetch(`${base}/json`, {
        method: 'POST',
        headers: new Headers({ 'x-one': '1' }),
        body: new TextEncoder().encode('{"é":1}'),
      })
    ).text();
    expect(seen.at(-1)!.headers['x-one']).toBe('1');
    expect(seen.at(-1)!.body).toBe('{"é":1}');
    await (await upstreamFetch(`${base}/json`, { headers: [['x-two', '2']] })).text();
    expect(seen.at(-1)).toMatchObject({ method: 'GET', headers: { 'x-two': '2' } });
  });

  test('calls one after another share a kept-alive connection', async () => {
    await (await upstreamFetch(`${base}/json`)).text();
    const first = seen.at(-1)!.remotePort;
    await (await upstreamFetch(`${base}/json`)).text();
    expect(seen.at(-1)!.remotePort).toBe(first);
  });

  test('a compressed answer is read decompressed; an error status is an answer, not a failure', async () => {
    expect(await (await upstreamFetch(`${base}/gzip`)).json()).toEqual({ compressed: true });
    expect(seen.at(-1)!.headers['accept-encoding']).toContain('gzip');
    const missing = await upstreamFetch(`${base}/nowhere`);
    expect(missing.status).toBe(404);
    expect(missing.ok).toBe(false);
    expect(await missing.json()).toEqual({ error: { message: 'no such route' } });
  });

  test('an answer the Fetch standard does not allow (status 999) is a failed fetch, not a crash; the server goes on', async () => {
    const error = await upstreamFetch(`${base}/odd-status`).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toBe('fetch failed');
    expect(((error as TypeError).cause as Error).name).toBe('RangeError');
    expect((await upstreamFetch(`${base}/json`)).status).toBe(201);
  });

  test('a compressed body without its trailer is read to its end, as undici reads it', async () => {
    expect(await (await upstreamFetch(`${base}/gzip-no-trailer`)).json()).toEqual({ trailer: false });
  });

  test('a 204 has no body', async () => {
    const response = await upstreamFetch(`${base}/empty`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(204);
    expect(response.body).toBeNull();
  });

  test('no server: TypeError("fetch failed") with the connection error as its cause, as the global fetch', async () => {
    const spare = http.createServer();
    await new Promise<void>((resolve) => spare.listen(0, '127.0.0.1', resolve));
    const port = (spare.address() as AddressInfo).port;
    await new Promise((resolve) => spare.close(resolve));
    const ours = await upstreamFetch(`http://127.0.0.1:${port}/json`).catch((error: unknown) => error);
    const global = await fetch(`http://127.0.0.1:${port}/json`).catch((error: unknown) => error);
    for (const error of [ours, global]) {
      expect(error).toBeInstanceOf(TypeError);
      expect((error as TypeError).message).toBe('fetch failed');
      expect(((error as TypeError).cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
    }
  });

  test('an abort before the answer rejects with the signal’s reason and closes the connection', async () => {
    const timedOut = await upstreamFetch(`${base}/silent`, { signal: AbortSignal.timeout(50) }).catch(
      (error: unknown) => error,
    );
    expect(timedOut).toBeInstanceOf(DOMException);
    expect((timedOut as DOMException).name).toBe('TimeoutError');
    await expect.poll(() => closedEarly.includes('/silent'), { timeout: 5_000, interval: 5 }).toBe(true);

    const already = AbortSignal.abort();
    await expect(upstreamFetch(`${base}/json`, { signal: already })).rejects.toBe(already.reason);
  });

  const closedSoFar = (path: string) => closedEarly.filter((closed) => closed === path).length;
  /** Waits until the server has seen a connection of `path` closed early once more than `before` times. */
  const closedAgain = (path: string, before: number) =>
    expect.poll(() => closedSoFar(path), { timeout: 5_000, interval: 5 }).toBe(before + 1);

  // For a compressed stream, the connection's end is also when output the decompressor still held must have been
  // dropped, not pushed into the errored stream (which would throw, an uncaught exception that fails the run).
  test.each([
    ['a body', '/endless'],
    ['a compressed body', '/gzip-endless'],
  ])('an abort while %s streams errors the stream with the reason and closes the connection', async (_what, path) => {
    const controller = new AbortController();
    const response = await upstreamFetch(`${base}${path}`, { signal: controller.signal });
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('tick');
    const before = closedSoFar(path);
    controller.abort();
    expect(((await readUntilError(reader)) as DOMException).name).toBe('AbortError');
    await closedAgain(path, before);
  });

  test('cancelling the body closes the connection', async () => {
    const response = await upstreamFetch(`${base}/endless`);
    const reader = response.body!.getReader();
    await reader.read();
    const before = closedSoFar('/endless');
    await reader.cancel();
    await closedAgain('/endless', before);
  });

  test('a connection that closes before the body’s end: reading the body fails, as with the global fetch', async () => {
    for (const fetchOf of [upstreamFetch, fetch]) {
      const response = await fetchOf(`${base}/cut`);
      expect(response.status).toBe(200);
      await expect(response.text()).rejects.toThrow(TypeError);
    }
  });

  test('a 204 leaves its connection to the next call', async () => {
    await upstreamFetch(`${base}/empty`, { method: 'POST', body: '{}' });
    const first = seen.at(-1)!.remotePort;
    await upstreamFetch(`${base}/empty`, { method: 'POST', body: '{}' });
    expect(seen.at(-1)!.remotePort).toBe(first);
  });

  test('what it does not cover goes to the global fetch: a form body', async () => {
    const form = new FormData();
    form.set('purpose', 'test');
    await (await upstreamFetch(`${base}/json`, { method: 'POST', body: form })).text();
    expect(seen.at(-1)!.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(seen.at(-1)!.body).toContain('name="purpose"');
  });
});

// A workspace's requests with large bodies take turns on a server process: while one is being read, the workspace's
// next large ones wait with their bodies unread, and another workspace's requests and the workspace's small ones do
// not wait; past LARGE_BODIES_WAITING waiting, the answer is 429 workspace_busy with Retry-After; a waiting request
// whose client went away leaves the line.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { LARGE_BODIES_WAITING, LARGE_BODY_BYTES } from '../../src/platform/large-bodies.ts';
import { eventually } from '../support/expect.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

interface Sent {
  /** Resolves with the answer's status and body once it comes. */
  answer: Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>;
  /** Whether the answer has come. */
  answered: () => boolean;
  /** Sends the rest of the body (a request sent with `hold`). */
  finish: () => void;
  /** Goes away without waiting for the answer. */
  abandon: () => void;
}

/** An embeddings request of at least `bytes` bytes; with `hold`, the last bytes of its body are not sent yet. */
function embeddings(server: TestServer, key: string, bytes: number, hold = false): Sent {
  const text = 'Harbour cranes unload at dusk. '.repeat(20);
  const input = Array.from({ length: Math.ceil(bytes / text.length) }, () => text);
  const body = Buffer.from(JSON.stringify({ model: 'sandbox-embedding', input }));
  const url = new URL('/v1/embeddings', server.url);
  let done = false;
  const request = http.request(url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Content-Length': body.length },
  });
  const answer = new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    request.on('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        done = true;
        resolve({ status: response.statusCode!, headers: response.headers, body: text });
      });
    });
    // A refusal may come before the body is all sent, and the server then closes the connection: the answer is
    // what counts.
    request.on('error', (error) => {
      if (!done) reject(error);
    });
  });
  answer.catch(() => {});
  const held = hold ? 16 : 0;
  request.write(body.subarray(0, body.length - held));
  if (!hold) request.end();
  return {
    answer,
    answered: () => done,
    finish: () => request.end(body.subarray(body.length - held)),
    abandon: () => request.destroy(),
  };
}

describe('large bodies take turns per workspace', () => {
  let server: TestServer;
  let otherKey: string;

  beforeAll(async () => {
    server = await startTestServer();
    otherKey = (await createWorkspace(server.platform.db, { name: 'Other workspace', region: 'eu' })).secret;
  });
  afterAll(async () => {
    await server?.close();
  });

  const large = LARGE_BODY_BYTES + 1024;

  test("the workspace's next large request waits; another workspace's and a small one do not", async () => {
    const first = embeddings(server, server.ownerKey, large, true);
    // The first body is being read (its last bytes not sent): the turn is taken once the server has seen it.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const second = embeddings(server, server.ownerKey, large);
    const other = embeddings(server, otherKey, large);
    const small = embeddings(server, server.ownerKey, 1024);
    expect((await other.answer).status).toBe(200);
    expect((await small.answer).status).toBe(200);
    expect(second.answered()).toBe(false);
    expect(first.answered()).toBe(false);

    first.finish();
    expect((await first.answer).status).toBe(200);
    expect((await second.answer).status).toBe(200);
  });

  test('past the waiting line: 429 workspace_busy with Retry-After; the ones that went away leave it', async () => {
    const holder = embeddings(server, server.ownerKey, large, true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const waiting = Array.from({ length: LARGE_BODIES_WAITING }, () => embeddings(server, server.ownerKey, large));
    // Each waiting request is in the line once the server has its headers; the one after them is refused.
    const refused = await eventually(
      async () => {
        const extra = embeddings(server, server.ownerKey, large);
        const answer = await Promise.race([
          extra.answer,
          new Promise<undefined>((resolve) => setTimeout(resolve, 500, undefined)),
        ]);
        if (!answer) extra.abandon();
        return answer;
      },
      (answer) => answer !== undefined,
      20_000,
    );
    expect(refused!.status).toBe(429);
    expect(refused!.headers['retry-after']).toBe('1');
    expect(JSON.parse(refused!.body)).toMatchObject({ code: 'workspace_busy', status: 429 });
    expect(waiting.some((request) => request.answered())).toBe(false);

    for (const request of waiting) request.abandon();
    holder.finish();
    expect((await holder.answer).status).toBe(200);
    // The line is empty again: a new large request is read at once.
    expect((await embeddings(server, server.ownerKey, large).answer).status).toBe(200);
  });
});

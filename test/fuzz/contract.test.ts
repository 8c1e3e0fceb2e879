// Property-based fuzz of the whole contract against the real server, on SQLite and on PostgreSQL: requests to every
// operation of generated/openapi.json, shaped by its parameters and body schema and then damaged (test/fuzz/
// arbitraries.ts). Whatever is sent:
//   - no 5xx, except 501 not_implemented from an operation that src/handlers.ts lists as not built (a documented
//     answer of this server, not a failure: it must still be a proper problem document);
//   - every answer has an X-Request-Id, and every error is a problem document (application/problem+json, valid by
//     the Problem schema, a known `code`, `status` equal to the HTTP status, `request_id` equal to X-Request-Id);
//     createChatCompletion's problems also carry OpenAI's `error` object (ChatCompletionProblem);
//   - no success breaks the contract (the server validates its own answers; the harness reports any that does not);
//   - the server is still ready after (GET /readyz 200).
// A second property sends bytes that no HTTP client would (raw bytes in the request line and headers) over a socket:
// each must still be answered with a problem document and an X-Request-Id (src/platform/client-errors.ts).
// A fixed set of requests sends every JSON scalar, and arrays, as the whole body of every operation that takes JSON.
// The seed is fixed so that CI runs the same cases; FUZZ_SEED and FUZZ_RUNS change them (test/README.md).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OperationId, operationTable } from '../../generated/operations.ts';
import { notImplemented } from '../../src/handlers.ts';
import { rawRequest } from '../support/raw-http.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { exampleRequest, schemaErrors, spec } from '../support/spec.ts';
import { encodeBody, type FuzzRequest, type KnownIds, percentEncode, requestFor, target } from './arbitraries.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);
const RAW_RUNS = Math.max(1, Math.round(RUNS / 5));
const REQUEST_ID = /^req_[0-9A-HJKMNP-TV-Z]{26}$/;
const errorCodes = new Set<string>(spec.components.schemas.ErrorCode.enum);
const notBuilt = new Set<string>(notImplemented);
const operationIds = Object.keys(operationTable) as OperationId[];
const built = operationIds.filter((id) => !notBuilt.has(id));
const unbuilt = operationIds.filter((id) => notBuilt.has(id));

/** One fuzzed request as sent, for the failure message. */
function describeRequest(request: FuzzRequest): string {
  return `${request.method} ${target(request).slice(0, 300)} (${request.id}, caller ${request.caller}, body ${JSON.stringify(request.body).slice(0, 300)})`;
}

describe.each(databaseKinds)('contract fuzz on %s', (kind) => {
  let server: TestServer;
  const keys: Record<FuzzRequest['caller'], string[]> = {
    owner: [],
    admin: [],
    editor: [],
    viewer: [],
    none: [''],
    garbage: ['cs_live_garbage', 'Bearer'],
  };
  const known: KnownIds = { ids: [] };
  let sent = 0;

  beforeAll(async () => {
    // No delivery worker: endpoints the fuzz creates are never called (a public address would be on the internet).
    server = await startTestServer({
      database: kind,
      env: { WEBHOOKS_ALLOW_LOOPBACK: 'true', WEBHOOKS_WORKER: 'false' },
    });
    // 600 requests a minute per key: enough owner keys that the fuzz never meets the rate limit.
    keys.owner.push(server.ownerKey);
    for (let i = 0; i < Math.ceil(RUNS / 300); i++) keys.owner.push((await server.createKey('owner')).secret);
    for (const role of ['admin', 'editor', 'viewer'] as const) keys[role].push((await server.createKey(role)).secret);
    // Resources whose ids the fuzz tries in paths: a key it may revoke (not one of its own), a member, an endpoint,
    // an event and a delivery.
    const victim = await server.createKey('editor');
    const member = await server.call('POST', '/v1/members', { body: { email: 'fuzz@test.example', role: 'editor' } });
    const endpoint = await server.call('POST', '/v1/webhooks/endpoints', {
      body: { url: 'http://127.0.0.1:9/fuzz', event_types: ['*'] },
    });
    const delivery = await server.call('POST', `/v1/webhooks/endpoints/${endpoint.body.id as string}/test`);
    const events = await server.call('GET', '/v1/events');
    known.ids.push(
      victim.id,
      member.body.id,
      endpoint.body.id,
      delivery.body.id,
      ...events.body.data.map((e: { id: string }) => e.id),
    );
    expect(known.ids.every((id) => typeof id === 'string')).toBe(true);
  });

  afterAll(async () => {
    // close() fails when any response broke the contract.
    await server?.close();
  });

  async function send(request: FuzzRequest) {
    const { bytes, headers } = encodeBody(request.body);
    const pool = keys[request.caller];
    const key = pool[sent++ % pool.length]!;
    const allHeaders: Record<string, string> = { ...request.headers, ...headers };
    if (key) allHeaders.Authorization = key.startsWith('cs_live_garbage') || key === 'Bearer' ? key : `Bearer ${key}`;
    // GET and HEAD cannot carry a body in fetch.
    const method = request.method;
    const response = await fetch(server.url + target(request), {
      method,
      headers: allHeaders,
      body: method === 'GET' || method === 'HEAD' || !bytes ? undefined : new Uint8Array(bytes),
      signal: AbortSignal.timeout(20_000),
    });
    const text = await response.text();
    return { response, text };
  }

  /** An error answer is a problem document of a known code, with the answer's status and request id. */
  function expectProblemDocument(request: FuzzRequest, response: Response, text: string) {
    const where = describeRequest(request);
    const status = response.status;
    expect(response.headers.get('content-type'), `content type of ${status} for ${where}`).toMatch(
      /^application\/problem\+json(;|$)/,
    );
    const body = JSON.parse(text) as Record<string, unknown>;
    expect(schemaErrors('/components/schemas/Problem', body), `Problem schema for ${where}`).toEqual([]);
    expect(
      { status: body.status, request_id: body.request_id, known_code: errorCodes.has(String(body.code)) },
      where,
    ).toEqual({ status, request_id: response.headers.get('x-request-id'), known_code: true });
    if (status === 501) expect(body.code, where).toBe('not_implemented');
    // Only requests that reached createChatCompletion carry OpenAI's error; a wrong method is another route.
    if (request.id === 'createChatCompletion' && request.method === 'POST') {
      expect(
        schemaErrors('/components/schemas/ChatCompletionProblem', body),
        `ChatCompletionProblem for ${where}`,
      ).toEqual([]);
    }
  }

  test(`${RUNS} requests across every operation: no 5xx, every error a problem document, ready after`, async () => {
    const failures: string[] = [];
    /** With FUZZ_STATS set: how many answers of each operation, status and problem code. */
    const stats: Record<string, number> = {};
    await fc.assert(
      fc.asyncProperty(
        // Operations that are not built answer 501 before they read their input: a few of their requests suffice.
        (unbuilt.length > 0
          ? fc.oneof(
              { weight: 5, arbitrary: fc.constantFrom(...built) },
              { weight: 1, arbitrary: fc.constantFrom(...unbuilt) },
            )
          : fc.constantFrom(...built)
        ).chain((id) => requestFor(id, known)),
        async (request) => {
          const { response, text } = await send(request);
          const where = describeRequest(request);
          const status = response.status;
          if (process.env.FUZZ_STATS) {
            const k = `${notBuilt.has(request.id) ? 'nb' : request.id}:${status}:${text.includes('"code"') ? JSON.parse(text).code : ''}`;
            stats[k] = (stats[k] ?? 0) + 1;
          }
          const requestId = response.headers.get('x-request-id');
          expect(requestId, `X-Request-Id of ${where}`).toMatch(REQUEST_ID);
          const allowed501 = status === 501 && notBuilt.has(request.id);
          if (status >= 500 && !allowed501) throw new Error(`${status} for ${where}: ${text.slice(0, 500)}`);
          if (server.responseValidationErrors.length > 0) {
            failures.push(
              `${where}: ${JSON.stringify(server.responseValidationErrors.map((e) => String((e.error as Error)?.message ?? e.error)))}`,
            );
            server.responseValidationErrors.length = 0;
            throw new Error(`the answer to ${where} broke the contract: ${failures.at(-1)}`);
          }
          if (status < 400 || request.method === 'HEAD') return;
          expectProblemDocument(request, response, text);
        },
      ),
      { seed: SEED, numRuns: RUNS, endOnFailure: true, verbose: 1 },
    );
    if (process.env.FUZZ_STATS)
      console.log(
        Object.entries(stats)
          .sort()
          .map(([k, v]) => `${k}=${v}`)
          .join('\n'),
      );
    expect(failures).toEqual([]);
    const ready = await server.call('GET', '/readyz', { key: null });
    expect(ready.status, ready.text).toBe(200);
  }, 180_000);

  // The random requests damage a body's fields and rarely replace the whole body with a scalar: each JSON scalar, and
  // arrays, are sent whole to every operation that takes JSON, with a well-formed path and an owner key.
  test('JSON scalars and arrays as the whole body of every operation that takes JSON: a 4xx problem document each', async () => {
    const wholeBodies = ['null', 'true', 'false', '0', '-12.5', '"text"', '[]', '[{}]'];
    const takesJson = operationIds.filter((id) =>
      (operationTable[id].requestContentTypes as readonly string[]).includes('application/json'),
    );
    for (const id of takesJson) {
      const example = exampleRequest(id);
      const requests = wholeBodies.map(
        (bytes): FuzzRequest => ({
          id,
          method: operationTable[id].method.toUpperCase(),
          path: Object.fromEntries(
            Object.entries(example.path).map(([name, value]) => [name, encodeURIComponent(value)]),
          ),
          query: Object.entries(example.query).map(([name, value]) => [name, percentEncode(String(value))]),
          headers: example.header,
          body: { kind: 'bytes', bytes, contentType: 'application/json' },
          caller: 'owner',
        }),
      );
      await Promise.all(
        requests.map(async (request) => {
          const { response, text } = await send(request);
          const where = describeRequest(request);
          expect(
            response.status >= 400 && (response.status < 500 || (response.status === 501 && notBuilt.has(id))),
            `${response.status} for ${where}: ${text.slice(0, 500)}`,
          ).toBe(true);
          expectProblemDocument(request, response, text);
        }),
      );
    }
    expect(server.responseValidationErrors).toEqual([]);
  });

  // Bytes no HTTP client sends (fetch refuses them): raw bytes in the request line and the headers, over a socket.
  test(`${RAW_RUNS} raw requests with bytes outside HTTP: each answered with a problem document or a proper answer`, async () => {
    const paths = operationIds.map((id) => operationTable[id].path.replace(/\{[^}]+\}/g, 'x'));
    const bytes = fc.uint8Array({ minLength: 1, maxLength: 8 });
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          path: fc.constantFrom(...paths),
          where: fc.constantFrom('path', 'query', 'header value', 'header name', 'method', 'version'),
          bytes,
          key: fc.boolean(),
        }),
        async ({ path, where, bytes: inserted, key }) => {
          const b = Buffer.from(inserted);
          const parts: Buffer[] = [
            Buffer.from(where === 'method' ? 'G' : 'GET'),
            where === 'method' ? b : Buffer.alloc(0),
            Buffer.from(` ${path}`),
            where === 'path' ? b : Buffer.alloc(0),
            Buffer.from(where === 'query' ? '?q=' : ''),
            where === 'query' ? b : Buffer.alloc(0),
            Buffer.from(' HTTP/1.'),
            where === 'version' ? b : Buffer.from('1'),
            Buffer.from(
              `\r\nHost: fuzz\r\nConnection: close\r\n${key ? `Authorization: Bearer ${keys.owner[0]}\r\n` : ''}X-`,
            ),
            where === 'header name' ? b : Buffer.alloc(0),
            Buffer.from('Note: '),
            where === 'header value' ? b : Buffer.alloc(0),
            Buffer.from('\r\n\r\n'),
          ];
          const answer = await rawRequest(server.url, Buffer.concat(parts));
          const where_ = `${where} ${JSON.stringify([...inserted])} on ${path}`;
          expect(answer.status, `${where_}: ${answer.head}`).toBeGreaterThanOrEqual(200);
          const notBuiltAnswer = answer.status === 501 && answer.body?.code === 'not_implemented';
          expect(answer.status < 500 || notBuiltAnswer, `${where_}: ${answer.head} ${answer.text.slice(0, 300)}`).toBe(
            true,
          );
          expect(answer.headers.get('x-request-id'), where_).toMatch(REQUEST_ID);
          if (answer.status >= 400) {
            expect(answer.headers.get('content-type'), where_).toMatch(/^application\/problem\+json/);
            expect(schemaErrors('/components/schemas/Problem', answer.body), where_).toEqual([]);
            expect(answer.body.status, where_).toBe(answer.status);
          }
        },
      ),
      { seed: SEED, numRuns: RAW_RUNS, endOnFailure: true },
    );
    const ready = await server.call('GET', '/readyz', { key: null });
    expect(ready.status, ready.text).toBe(200);
  }, 120_000);
});

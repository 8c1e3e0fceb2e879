// Malformed input against the real server, on SQLite and PostgreSQL: every refusal is an RFC 9457 problem document
// (application/problem+json with type, title, status, code, request_id equal to X-Request-Id, instance), never a
// 500, never HTML, and every answer carries an X-Request-Id.
//   invalid JSON 400 · body over 1 MiB 413 · wrong or missing content type 415 · unknown route 404 · wrong method
//   405 with Allow · schema violations 422 with one JSON pointer per field (body, query, path, header) · missing,
//   garbled or unknown credentials 401.
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { problemCatalogue, problemTypeBase, type ErrorCode } from '../../src/platform/problems.ts';
import { databaseKinds, startTestServer, type Answer, type TestServer } from '../support/server.ts';
import { schemaErrors } from '../support/spec.ts';

const REQUEST_ID = /^req_[0-9A-HJKMNP-TV-Z]{26}$/;

function expectProblem(answer: Answer, status: number, code: ErrorCode): void {
  expect({ status: answer.status, code: answer.body?.code }).toEqual({ status, code });
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json(;|$)/);
  const requestId = answer.headers.get('x-request-id');
  expect(requestId).toMatch(REQUEST_ID);
  expect(answer.body).toMatchObject({
    type: problemTypeBase + code,
    title: problemCatalogue[code].title,
    status,
    code,
    request_id: requestId,
  });
  expect(answer.body.instance).toMatch(/^\//);
  // Refusals before the handler are not checked by the response validator; check them against the contract here.
  expect(schemaErrors('/components/schemas/Problem', answer.body)).toEqual([]);
  expect(answer.text).not.toMatch(/<html|<!DOCTYPE|\n\s+at /i);
}

/** The pointers of a validation_failed problem, sorted. */
const pointers = (answer: Answer): string[] => (answer.body.errors as Array<{ pointer: string }>).map((e) => e.pointer).sort();

describe.each(databaseKinds)('malformed input on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ database: kind });
  });
  afterAll(async () => {
    await server?.close();
  });

  describe('the body', () => {
    test('JSON that does not parse is 400 invalid_json', async () => {
      const answer = await server.call('POST', '/v1/api-keys', { rawBody: '{"name": "x", "role": ', headers: { 'Content-Type': 'application/json' } });
      expectProblem(answer, 400, 'invalid_json');
      expect(answer.body.instance).toBe('/v1/api-keys');
    });

    test('a body over 1 MiB is 413 payload_too_large', async () => {
      const big = JSON.stringify({ name: 'x'.repeat(1_048_576), role: 'viewer' });
      const answer = await server.call('POST', '/v1/api-keys', { rawBody: big, headers: { 'Content-Type': 'application/json' } });
      expectProblem(answer, 413, 'payload_too_large');
    });

    test('a body of exactly-not-JSON type (text/plain) is 415 unsupported_media_type', async () => {
      const answer = await server.call('POST', '/v1/api-keys', { rawBody: '{"name":"x","role":"viewer"}', headers: { 'Content-Type': 'text/plain' } });
      expectProblem(answer, 415, 'unsupported_media_type');
    });

    test('a body without any Content-Type is 415 unsupported_media_type', async () => {
      // fetch labels a string body text/plain; a Uint8Array body goes without a Content-Type.
      const response = await fetch(`${server.url}/v1/api-keys`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${server.ownerKey}` },
        body: new TextEncoder().encode('{"name":"x","role":"viewer"}'),
      });
      const text = await response.text();
      const answer: Answer = { status: response.status, headers: response.headers, text, body: JSON.parse(text) };
      expectProblem(answer, 415, 'unsupported_media_type');
    });

    test('a JSON body that is not UTF-8 is 415 unsupported_media_type', async () => {
      const answer = await server.call('POST', '/v1/api-keys', { rawBody: '{"name":"x","role":"viewer"}', headers: { 'Content-Type': 'application/json; charset=latin1' } });
      expectProblem(answer, 415, 'unsupported_media_type');
    });

    test('an empty JSON body lists every required field', async () => {
      const answer = await server.call('POST', '/v1/api-keys', { headers: { 'Content-Type': 'application/json' } });
      expectProblem(answer, 422, 'validation_failed');
      expect(pointers(answer)).toEqual(['/name', '/role']);
    });

    test('well-formed JSON that is not an object is 422 validation_failed at the empty pointer (the whole body)', async () => {
      for (const rawBody of ['[]', '"text"', '42', 'null', 'true']) {
        const answer = await server.call('POST', '/v1/api-keys', { rawBody, headers: { 'Content-Type': 'application/json' } });
        expectProblem(answer, 422, 'validation_failed');
        expect(pointers(answer), rawBody).toEqual(['']);
      }
    });

    test('a compressed body that does not decompress is 400 invalid_json; an unknown Content-Encoding is 415', async () => {
      for (const encoding of ['gzip', 'deflate', 'br']) {
        const answer = await server.call('POST', '/v1/api-keys', { rawBody: 'not compressed', headers: { 'Content-Type': 'application/json', 'Content-Encoding': encoding } });
        expectProblem(answer, 400, 'invalid_json');
      }
      const unknown = await server.call('POST', '/v1/api-keys', { rawBody: '{}', headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'compress' } });
      expectProblem(unknown, 415, 'unsupported_media_type');
    });

    test('a gzip body that decompresses to valid JSON is accepted', async () => {
      const body = gzipSync(JSON.stringify({ name: 'gzipped', role: 'viewer' }));
      const response = await fetch(`${server.url}/v1/api-keys`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${server.ownerKey}`, 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
        body,
      });
      expect(response.status).toBe(201);
      expect(await response.json()).toMatchObject({ name: 'gzipped', role: 'viewer' });
    });
  });

  describe('routes and methods', () => {
    test('an unknown route is 404 route_not_found, with or without a key', async () => {
      for (const key of [undefined, null]) {
        for (const path of ['/v1/nothing-here', '/v2/workspace', '/', '/v1/api-keys/key_01M7Q2V3GK111YYJGRJ8GTSVW2/nope']) {
          const answer = await server.call('GET', path, { key });
          expectProblem(answer, 404, 'route_not_found');
        }
      }
    });

    test('a concrete path matches before a templated one (/v1/workflows/validate is not /v1/workflows/{id})', async () => {
      const post = await server.call('POST', '/v1/workflows/validate', { body: {} });
      expect(post.body.code).not.toBe('method_not_allowed');
      expect([200, 422, 501]).toContain(post.status);
      const get = await server.call('GET', '/v1/workflows/validate');
      expectProblem(get, 405, 'method_not_allowed');
      expect(get.headers.get('allow')).toBe('POST');
    });

    test('a known path with another method is 405 method_not_allowed with Allow listing its methods', async () => {
      const cases: Array<[string, string, string[]]> = [
        ['PUT', '/v1/workspace', ['GET', 'HEAD']],
        ['DELETE', '/v1/api-keys', ['GET', 'HEAD', 'POST']],
        ['PATCH', '/v1/api-keys/key_01M7Q2V3GK111YYJGRJ8GTSVW2', ['DELETE', 'GET', 'HEAD']],
        ['POST', '/healthz', ['GET', 'HEAD']],
      ];
      for (const [method, path, allow] of cases) {
        const answer = await server.call(method, path);
        expectProblem(answer, 405, 'method_not_allowed');
        expect(answer.headers.get('allow')?.split(', ').sort(), `${method} ${path}`).toEqual(allow);
      }
    });
  });

  test('a very long path is answered with a problem within the contract limits (detail, instance)', async () => {
    for (const [method, path, status, code] of [
      ['GET', `/v1/${'a'.repeat(5000)}`, 404, 'route_not_found'],
      ['PUT', `/v1/api-keys/${'a'.repeat(5000)}`, 405, 'method_not_allowed'],
      ['GET', `/v1/api-keys/${'a'.repeat(5000)}`, 422, 'validation_failed'],
    ] as const) {
      const answer = await server.call(method, path);
      expectProblem(answer, status, code);
    }
  });

  describe('schema violations are 422 validation_failed with a pointer per field', () => {
    test('an unknown field whose name has a dot is one pointer, and a very long one is cut to the contract limit', async () => {
      const dotted = await server.call('POST', '/v1/api-keys', { body: { name: 'k', role: 'viewer', 'a.b': 1 } });
      expectProblem(dotted, 422, 'validation_failed');
      expect(pointers(dotted)).toEqual(['/a.b']);
      const long = await server.call('POST', '/v1/api-keys', { body: { name: 'k', role: 'viewer', ['p'.repeat(600)]: 1 } });
      expectProblem(long, 422, 'validation_failed');
      expect(pointers(long)[0]).toBe(`/${'p'.repeat(511)}`);
    });

    test('a path parameter that is not valid percent-encoding is path/id', async () => {
      const answer = await server.call('GET', '/v1/api-keys/%E0%A4%A');
      expectProblem(answer, 422, 'validation_failed');
      expect(pointers(answer)).toEqual(['path/id']);
    });

    test('every invalid body field is listed', async () => {
      const answer = await server.call('POST', '/v1/api-keys', { body: { name: '', role: 'emperor' } });
      expectProblem(answer, 422, 'validation_failed');
      expect(pointers(answer)).toEqual(expect.arrayContaining(['/name', '/role']));
      for (const error of answer.body.errors) expect(typeof error.detail).toBe('string');
    });

    test('a missing required field is listed', async () => {
      const answer = await server.call('POST', '/v1/api-keys', { body: { name: 'no role' } });
      expectProblem(answer, 422, 'validation_failed');
      expect(pointers(answer)).toEqual(['/role']);
    });

    test('an unknown body field is listed', async () => {
      const answer = await server.call('POST', '/v1/api-keys', { body: { name: 'k', role: 'viewer', colour: 'blue' } });
      expectProblem(answer, 422, 'validation_failed');
      expect(pointers(answer)).toEqual(['/colour']);
    });

    test('wrong types are listed', async () => {
      const answer = await server.call('POST', '/v1/members', { body: { email: 42, role: ['viewer'], name: false } });
      expectProblem(answer, 422, 'validation_failed');
      expect(pointers(answer)).toEqual(expect.arrayContaining(['/email', '/name', '/role']));
    });

    test('an unknown query parameter is query/<name>', async () => {
      const answer = await server.call('GET', '/v1/api-keys?colour=blue');
      expectProblem(answer, 422, 'validation_failed');
      expect(pointers(answer)).toEqual(['query/colour']);
    });

    test('a query parameter out of its range is query/<name>', async () => {
      const answer = await server.call('GET', '/v1/api-keys?limit=0&role=emperor');
      expectProblem(answer, 422, 'validation_failed');
      expect(pointers(answer)).toEqual(['query/limit', 'query/role']);
    });

    test('a path parameter that breaks its pattern is path/id', async () => {
      const answer = await server.call('GET', '/v1/api-keys/not-a-key-id');
      expectProblem(answer, 422, 'validation_failed');
      expect(pointers(answer)).toEqual(['path/id']);
    });

    test('an Idempotency-Key over 255 characters is header/Idempotency-Key; 255 is fine', async () => {
      const tooLong = await server.call('POST', '/v1/api-keys', { body: { name: 'k', role: 'viewer' }, headers: { 'Idempotency-Key': 'k'.repeat(256) } });
      expectProblem(tooLong, 422, 'validation_failed');
      expect(pointers(tooLong)).toEqual(['header/Idempotency-Key']);
      const longest = await server.call('POST', '/v1/api-keys', { body: { name: 'k', role: 'viewer' }, headers: { 'Idempotency-Key': 'k'.repeat(255) } });
      expect(longest.status).toBe(201);
    });

    test('an Idempotency-Key with a space is header/Idempotency-Key', async () => {
      const answer = await server.call('POST', '/v1/api-keys', { body: { name: 'k', role: 'viewer' }, headers: { 'Idempotency-Key': 'two words' } });
      expectProblem(answer, 422, 'validation_failed');
      expect(pointers(answer)).toEqual(['header/Idempotency-Key']);
    });
  });

  describe('credentials', () => {
    const garbled = ['', 'Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'Token abc', 'Bearer two words', `Bearer ${'x'.repeat(513)}`, 'Bearer\u00e9t\u00e9'];

    test('no Authorization header is 401 unauthenticated, even with a broken body', async () => {
      const answer = await server.call('POST', '/v1/api-keys', { key: null, rawBody: '{oops', headers: { 'Content-Type': 'application/json' } });
      expectProblem(answer, 401, 'unauthenticated');
      expectProblem(await server.call('GET', '/v1/workspace', { key: null }), 401, 'unauthenticated');
    });

    test.each(garbled)('a garbled Authorization header (%j) is 401 unauthenticated', async (value) => {
      // fetch refuses header values outside Latin-1, so send bytes it accepts.
      const answer = await server.call('GET', '/v1/workspace', { key: null, headers: { Authorization: value } });
      expectProblem(answer, 401, 'unauthenticated');
    });

    test('an unknown secret is 401 unauthenticated', async () => {
      const answer = await server.call('GET', '/v1/workspace', { key: `cs_live_${'A'.repeat(40)}` });
      expectProblem(answer, 401, 'unauthenticated');
    });
  });

  test('every answer carries an X-Request-Id, distinct per request, and no answer here is a 500 or HTML', async () => {
    // Each with the answer it must get: a status, and the problem's code for an error.
    const requests: Array<[string, string, Parameters<TestServer['call']>[2], number, ErrorCode?]> = [
      ['GET', '/healthz', { key: null }, 200],
      ['GET', '/v1/workspace', {}, 200],
      ['GET', '/nowhere', {}, 404, 'route_not_found'],
      ['DELETE', '/v1/workspace', {}, 405, 'method_not_allowed'],
      ['POST', '/v1/api-keys', { rawBody: '{', headers: { 'Content-Type': 'application/json' } }, 400, 'invalid_json'],
      ['POST', '/v1/api-keys', { rawBody: 'x', headers: { 'Content-Type': 'application/xml' } }, 415, 'unsupported_media_type'],
      ['GET', '/v1/api-keys/%E0%A4%A', {}, 422, 'validation_failed'],
      ['GET', '/v1/api-keys?limit=abc', {}, 422, 'validation_failed'],
      ['GET', '/v1/workspace', { key: 'nope' }, 401, 'unauthenticated'],
    ];
    const ids = new Set<string>();
    for (const [method, path, options, status, code] of requests) {
      const answer = await server.call(method, path, options);
      const id = answer.headers.get('x-request-id');
      expect(id, `${method} ${path}`).toMatch(REQUEST_ID);
      ids.add(id!);
      expect(answer.headers.get('content-type'), `${method} ${path}`).toMatch(/^application\/(problem\+)?json/);
      if (code) expectProblem(answer, status, code);
      else expect(answer.status, `${method} ${path}`).toBe(status);
    }
    expect(ids.size).toBe(requests.length);
  });
});

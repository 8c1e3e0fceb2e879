// Malformed input against the real server, on SQLite and PostgreSQL: every refusal is an RFC 9457 problem document
// (application/problem+json with type, title, status, code, request_id equal to X-Request-Id, instance), never a
// 500, never HTML, and every answer carries an X-Request-Id.
//   invalid JSON 400 · body over 1 MiB 413 · wrong or missing content type 415 · unknown route 404 · wrong method
//   405 with Allow · schema violations 422 with one JSON pointer per field (body, query, path, header) · missing,
//   garbled or unknown credentials 401 · numbers that are not finite 422 · a NUL character in any string 422 (both
//   databases alike) · a body of the wrong type on an operation whose body is optional 415 · requests that Node's HTTP
//   parser refuses (431, 400), answered with a problem document over a raw socket.
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OperationId, operationTable } from '../../generated/operations.ts';
import { notImplemented } from '../../src/handlers.ts';
import { type ErrorCode, problemCatalogue, problemTypeBase } from '../../src/platform/problems.ts';
import { type RawAnswer, rawRequest } from '../support/raw-http.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { deref, operation, schemaErrors } from '../support/spec.ts';

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

/** Operations this server implements (the others answer 501 before they look at their input). */
const implemented = (Object.keys(operationTable) as OperationId[]).filter(
  (id) => !(notImplemented as readonly string[]).includes(id),
);

/** The query parameters of an operation whose schema is a number or an integer. */
function numericQueryParameters(id: OperationId): string[] {
  return (operation(id).parameters ?? [])
    .map((p: unknown) => deref<{ in: string; name: string; schema?: unknown }>(p))
    .filter(
      (p: { in: string; schema?: unknown }) =>
        p.in === 'query' && ['integer', 'number'].includes(deref<{ type?: string }>(p.schema)?.type ?? ''),
    )
    .map((p: { name: string }) => p.name);
}

/** A path of the operation with every parameter filled with a well-formed id of its kind that does not exist. */
const samplePath = (id: OperationId) =>
  operationTable[id].path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
    const parameter = (operation(id).parameters ?? [])
      .map((p: unknown) => deref<{ in: string; name: string; schema?: unknown; example?: string }>(p))
      .find((p: { in: string; name: string }) => p.in === 'path' && p.name === name);
    return encodeURIComponent(String(parameter?.example ?? 'x'));
  });

/** The pointers of a validation_failed problem, sorted. */
const pointers = (answer: Answer): string[] =>
  (answer.body.errors as Array<{ pointer: string }>).map((e) => e.pointer).sort();

describe.each(databaseKinds)('malformed input on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    // Loopback webhook URLs: an endpoint that can exist without a receiver (nothing listens on port 9).
    server = await startTestServer({ database: kind, env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  describe('the body', () => {
    test('JSON that does not parse is 400 invalid_json', async () => {
      const answer = await server.call('POST', '/v1/api-keys', {
        rawBody: '{"name": "x", "role": ',
        headers: { 'Content-Type': 'application/json' },
      });
      expectProblem(answer, 400, 'invalid_json');
      expect(answer.body.instance).toBe('/v1/api-keys');
    });

    test('a body over 1 MiB is 413 payload_too_large', async () => {
      const big = JSON.stringify({ name: 'x'.repeat(1_048_576), role: 'viewer' });
      const answer = await server.call('POST', '/v1/api-keys', {
        rawBody: big,
        headers: { 'Content-Type': 'application/json' },
      });
      expectProblem(answer, 413, 'payload_too_large');
    });

    test('a body of exactly-not-JSON type (text/plain) is 415 unsupported_media_type', async () => {
      const answer = await server.call('POST', '/v1/api-keys', {
        rawBody: '{"name":"x","role":"viewer"}',
        headers: { 'Content-Type': 'text/plain' },
      });
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
      const answer = await server.call('POST', '/v1/api-keys', {
        rawBody: '{"name":"x","role":"viewer"}',
        headers: { 'Content-Type': 'application/json; charset=latin1' },
      });
      expectProblem(answer, 415, 'unsupported_media_type');
    });

    test('a body with bytes that are not UTF-8 is 400 invalid_json, and nothing is created; JSON in UTF-16 is 415', async () => {
      const keyNames = async () => {
        const list = await server.call('GET', '/v1/api-keys?limit=100');
        expect(list.body.next_cursor, 'the whole list').toBeNull();
        return (list.body.data as Array<{ name: string }>).map((k) => k.name);
      };
      const before = await keyNames();
      const latin1 = Buffer.concat([
        Buffer.from('{"name":"caf'),
        Buffer.from([0xe9]),
        Buffer.from('","role":"viewer"}'),
      ]);
      const answer = await server.call('POST', '/v1/api-keys', {
        rawBody: latin1,
        headers: { 'Content-Type': 'application/json' },
      });
      expectProblem(answer, 400, 'invalid_json');
      expect(answer.body.detail).toBe('The body is not valid UTF-8, the charset it declares.');
      expect(await keyNames()).toEqual(before);
      // The same bytes in a YAML body.
      const yaml = Buffer.concat([Buffer.from('name: caf'), Buffer.from([0xe9]), Buffer.from('\nsteps: []\n')]);
      const workflow = await server.call('POST', '/v1/workflows', {
        rawBody: yaml,
        headers: { 'Content-Type': 'application/yaml' },
      });
      expectProblem(workflow, 400, 'invalid_json');
      // JSON is UTF-8 (RFC 8259), whatever charset it declares.
      const utf16 = await server.call('POST', '/v1/api-keys', {
        rawBody: new Uint8Array(Buffer.from('{"name":"café","role":"viewer"}', 'utf16le')),
        headers: { 'Content-Type': 'application/json; charset=utf-16le' },
      });
      expectProblem(utf16, 415, 'unsupported_media_type');
      // A YAML body declared `utf8`, UTF-8 under another name, is checked as UTF-8 (a JSON body's charset must
      // be written `utf-…`: body-parser refuses others with 415).
      const aliasedYaml = await server.call('POST', '/v1/workflows', {
        rawBody: yaml,
        headers: { 'Content-Type': 'application/yaml; charset=UTF8' },
      });
      expectProblem(aliasedYaml, 400, 'invalid_json');
      // The same name in UTF-8 is a name.
      const utf8 = await server.call('POST', '/v1/api-keys', { body: { name: 'café', role: 'viewer' } });
      expect(utf8.status).toBe(201);
      expect(utf8.body.name).toBe('café');
    });

    // JSON bodies are decoded with Buffer#toString (patches/body-parser+2.4.0.patch), which keeps a byte order mark:
    // the patch drops a leading one, as iconv-lite does (RFC 8259 lets a reader ignore it).
    test('a UTF-8 body read whole: a byte order mark is ignored, every character kept, small or large', async () => {
      const name = `Ünïcödé 漢字 🙂 ${'a'.repeat(20)}`;
      const withMark = await server.call('POST', '/v1/api-keys', {
        rawBody: Buffer.concat([
          Buffer.from([0xef, 0xbb, 0xbf]),
          Buffer.from(JSON.stringify({ name, role: 'viewer' })),
        ]),
        headers: { 'Content-Type': 'application/json' },
      });
      expect(withMark.status).toBe(201);
      expect(withMark.body.name).toBe(name);
      // A mark anywhere else is a character, which JSON does not allow between tokens.
      const inside = await server.call('POST', '/v1/api-keys', {
        rawBody: Buffer.from(`{\ufeff"name":"x","role":"viewer"}`),
        headers: { 'Content-Type': 'application/json' },
      });
      expectProblem(inside, 400, 'invalid_json');
      // A large body (the embeddings' limit is above the others'), ASCII and not, decoded as it was sent.
      const input = ['a'.repeat(30_000), 'a'.repeat(30_000), `漢🙂é${'b'.repeat(20_000)}`];
      const embeddings = await server.call('POST', '/v1/embeddings', {
        rawBody: Buffer.concat([
          Buffer.from([0xef, 0xbb, 0xbf]),
          Buffer.from(JSON.stringify({ model: 'sandbox-embedding', input, encoding_format: 'float' })),
        ]),
        headers: { 'Content-Type': 'application/json' },
      });
      expect(embeddings.status, JSON.stringify(embeddings.body)).toBe(200);
      expect(embeddings.body.data).toHaveLength(3);
      const plain = await server.call('POST', '/v1/embeddings', {
        body: { model: 'sandbox-embedding', input, encoding_format: 'float' },
      });
      expect(embeddings.body).toEqual(plain.body);
    });

    test('an empty JSON body lists every required field', async () => {
      const answer = await server.call('POST', '/v1/api-keys', { headers: { 'Content-Type': 'application/json' } });
      expectProblem(answer, 422, 'validation_failed');
      expect(pointers(answer)).toEqual(['/name', '/role']);
    });

    test('well-formed JSON that is not an object is 422 validation_failed at the empty pointer (the whole body)', async () => {
      // The last two operations' bodies have a discriminator, which the validator reads before the schema.
      for (const path of ['/v1/api-keys', samplePath('addKnowledgeBaseSource'), samplePath('runDocumentCommand')]) {
        for (const rawBody of ['[]', '[{}]', '"text"', '42', '0', 'null', 'true', 'false']) {
          const answer = await server.call('POST', path, { rawBody, headers: { 'Content-Type': 'application/json' } });
          expectProblem(answer, 422, 'validation_failed');
          expect(answer.body.errors, `${rawBody} to ${path}`).toEqual([{ pointer: '', detail: 'must be object' }]);
        }
      }
    });

    test('a body without a known value of its discriminator is 422 validation_failed at the discriminating member', async () => {
      for (const [path, member] of [
        [samplePath('addKnowledgeBaseSource'), 'type'],
        [samplePath('runDocumentCommand'), 'command'],
      ] as const) {
        for (const body of [{}, { [member]: 'unknown' }, { [member]: null }]) {
          const answer = await server.call('POST', path, { body });
          expectProblem(answer, 422, 'validation_failed');
          expect(pointers(answer), `${JSON.stringify(body)} to ${path}`).toEqual([`/${member}`]);
        }
      }
    });

    test('a compressed body that does not decompress is 400 invalid_json; an unknown Content-Encoding is 415', async () => {
      for (const encoding of ['gzip', 'deflate', 'br']) {
        const answer = await server.call('POST', '/v1/api-keys', {
          rawBody: 'not compressed',
          headers: { 'Content-Type': 'application/json', 'Content-Encoding': encoding },
        });
        expectProblem(answer, 400, 'invalid_json');
      }
      const unknown = await server.call('POST', '/v1/api-keys', {
        rawBody: '{}',
        headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'compress' },
      });
      expectProblem(unknown, 415, 'unsupported_media_type');
    });

    test('a gzip body that decompresses to valid JSON is accepted', async () => {
      const body = gzipSync(JSON.stringify({ name: 'gzipped', role: 'viewer' }));
      const response = await fetch(`${server.url}/v1/api-keys`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${server.ownerKey}`,
          'Content-Type': 'application/json',
          'Content-Encoding': 'gzip',
        },
        body,
      });
      expect(response.status).toBe(201);
      expect(await response.json()).toMatchObject({ name: 'gzipped', role: 'viewer' });
    });
  });

  describe('routes and methods', () => {
    test('an unknown route is 404 route_not_found, with or without a key', async () => {
      for (const key of [undefined, null]) {
        for (const path of [
          '/v1/nothing-here',
          '/v2/workspace',
          '/',
          '/v1/api-keys/key_01M7Q2V3GK111YYJGRJ8GTSVW2/nope',
        ]) {
          const answer = await server.call('GET', path, { key });
          expectProblem(answer, 404, 'route_not_found');
        }
      }
    });

    test('/ points a program at /v1/ and the dashboard, and sends a browser to the dashboard', async () => {
      const answer = await server.call('GET', '/', { key: null });
      expectProblem(answer, 404, 'route_not_found');
      expect(answer.body.detail).toMatch(/under \/v1\/.*dashboard/);
      const browser = await fetch(`${server.url}/`, {
        headers: { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
        redirect: 'manual',
      });
      expect(browser.status).toBe(302);
      expect(browser.headers.get('location')).toBe('/dashboard');
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
      const long = await server.call('POST', '/v1/api-keys', {
        body: { name: 'k', role: 'viewer', ['p'.repeat(600)]: 1 },
      });
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

    test('a oneOf whose branches a member tells apart reports the errors of the branch the body names, only', async () => {
      const transform = await server.call('POST', '/v1/workflows/validate', {
        body: { name: 'w', steps: [{ id: 'a', type: 'transform', function: 'upper', input: 'x' }] },
      });
      expectProblem(transform, 422, 'validation_failed');
      expect(transform.body.detail).toBe('The request has 3 invalid fields.');
      expect(transform.body.errors).toEqual(
        expect.arrayContaining([
          { pointer: '/steps/0/value', detail: "must have required property 'value'" },
          { pointer: '/steps/0/input', detail: 'must NOT have additional properties' },
          {
            pointer: '/steps/0/function',
            detail:
              'must be equal to one of the allowed values: template, jsonpath, extract_json, split, join, truncate',
          },
        ]),
      );
      expect(transform.body.errors).toHaveLength(3);

      const message = await server.call('POST', '/v1/chat/completions', {
        body: { model: 'sandbox-writer', messages: [{ role: 'user', content: 'Hello', colour: 'blue' }] },
      });
      expectProblem(message, 422, 'validation_failed');
      expect(message.body.errors).toEqual([
        { pointer: '/messages/0/colour', detail: 'must NOT have additional properties' },
      ]);
    });

    test('a member that names no branch, or is missing, is the one error of its union', async () => {
      const unknown = await server.call('POST', '/v1/workflows/validate', {
        body: { name: 'w', steps: [{ id: 'a', type: 'summarise', input: 'x' }] },
      });
      expectProblem(unknown, 422, 'validation_failed');
      expect(unknown.body.errors).toEqual([
        {
          pointer: '/steps/0/type',
          detail:
            'must be equal to one of the allowed values: generate, transform, document_command, knowledge_search, approval',
        },
      ]);
      const missing = await server.call('POST', '/v1/workflows/validate', {
        body: { name: 'w', steps: [{ id: 'a', input: 'x' }] },
      });
      expect(missing.body.errors).toEqual([{ pointer: '/steps/0/type', detail: "must have required property 'type'" }]);
      // Told apart by JSON type first (a string or a list of parts), then by each part's `type`.
      const part = await server.call('POST', '/v1/responses', {
        body: { model: 'sandbox-writer', input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }] },
      });
      expectProblem(part, 422, 'validation_failed');
      expect(part.body.errors).toEqual([
        {
          pointer: '/input/0/content/0/type',
          detail: 'must be equal to one of the allowed values: input_text, input_image, output_text',
        },
      ]);
    });

    test('an enum that allows null names null among its values', async () => {
      const answer = await server.call('POST', '/v1/responses', {
        body: { model: 'sandbox-writer', input: 'Hello', truncation: 'auto' },
      });
      expectProblem(answer, 422, 'validation_failed');
      expect(answer.body.errors).toContainEqual({
        pointer: '/truncation',
        detail: 'must be equal to one of the allowed values: disabled, null',
      });
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

    test('a date-time that is not RFC 3339 or not on the calendar is refused at its field, in a body and in a query', async () => {
      for (const expires_at of [
        '2027-02-30T00:00:00Z',
        '2027-04-31T12:00:00Z',
        '2027-02-29T00:00:00Z',
        '2027-01-01T24:00:00Z',
        // Not RFC 3339: an offset without its minutes or colon, a tab for the separator.
        '2099-01-01T00:00:00+01',
        '2099-01-01T00:00:00+0100',
        '2099-01-01\t00:00:00Z',
      ]) {
        const answer = await server.call('POST', '/v1/api-keys', { body: { name: 'k', role: 'viewer', expires_at } });
        expectProblem(answer, 422, 'validation_failed');
        expect(pointers(answer), expires_at).toEqual(['/expires_at']);
      }
      for (const date of ['2026-02-30', '2026-06-31', '2026-13-01']) {
        const answer = await server.call('GET', `/v1/usage?start_date=${date}`);
        expectProblem(answer, 422, 'validation_failed');
        expect(pointers(answer), date).toEqual(['query/start_date']);
      }
      const documents = await server.call('GET', '/v1/documents?created_after=2026-02-31T00:00:00Z');
      expectProblem(documents, 422, 'validation_failed');
      expect(pointers(documents)).toEqual(['query/created_after']);

      // 29 February of a leap year is a day, and the expiry is that instant.
      const leap = await server.call('POST', '/v1/api-keys', {
        body: { name: 'leap', role: 'viewer', expires_at: '2028-02-29T12:00:00Z' },
      });
      expect(leap.status).toBe(201);
      expect(leap.body.expires_at).toBe('2028-02-29T12:00:00.000Z');
      expect((await server.call('GET', '/v1/usage?start_date=2028-02-29&end_date=2028-03-01')).status).toBe(200);
    });

    test('an Idempotency-Key over 255 characters is header/Idempotency-Key; 255 is fine', async () => {
      const tooLong = await server.call('POST', '/v1/api-keys', {
        body: { name: 'k', role: 'viewer' },
        headers: { 'Idempotency-Key': 'k'.repeat(256) },
      });
      expectProblem(tooLong, 422, 'validation_failed');
      expect(pointers(tooLong)).toEqual(['header/Idempotency-Key']);
      const longest = await server.call('POST', '/v1/api-keys', {
        body: { name: 'k', role: 'viewer' },
        headers: { 'Idempotency-Key': 'k'.repeat(255) },
      });
      expect(longest.status).toBe(201);
    });

    test('an Idempotency-Key with a space is header/Idempotency-Key', async () => {
      const answer = await server.call('POST', '/v1/api-keys', {
        body: { name: 'k', role: 'viewer' },
        headers: { 'Idempotency-Key': 'two words' },
      });
      expectProblem(answer, 422, 'validation_failed');
      expect(pointers(answer)).toEqual(['header/Idempotency-Key']);
    });
  });

  describe('credentials', () => {
    const garbled = [
      '',
      'Bearer',
      'Bearer ',
      'Basic dXNlcjpwYXNz',
      'Token abc',
      'Bearer two words',
      `Bearer ${'x'.repeat(513)}`,
      'Bearer\u00e9t\u00e9',
    ];

    test('no Authorization header is 401 unauthenticated, even with a broken body', async () => {
      const answer = await server.call('POST', '/v1/api-keys', {
        key: null,
        rawBody: '{oops',
        headers: { 'Content-Type': 'application/json' },
      });
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
    // The expected answer of each request: its status, and the problem's code for a refusal.
    const requests: Array<[string, string, Parameters<TestServer['call']>[2], number, ErrorCode | undefined]> = [
      ['GET', '/healthz', { key: null }, 200, undefined],
      ['GET', '/v1/workspace', {}, 200, undefined],
      ['GET', '/nowhere', {}, 404, 'route_not_found'],
      ['DELETE', '/v1/workspace', {}, 405, 'method_not_allowed'],
      ['POST', '/v1/api-keys', { rawBody: '{', headers: { 'Content-Type': 'application/json' } }, 400, 'invalid_json'],
      [
        'POST',
        '/v1/api-keys',
        { rawBody: 'x', headers: { 'Content-Type': 'application/xml' } },
        415,
        'unsupported_media_type',
      ],
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

  test('every date-time query parameter takes a leap second, the last second of a UTC day (RFC 3339)', async () => {
    let checked = 0;
    for (const id of implemented) {
      if (operationTable[id].method !== 'get') continue;
      const names = (operation(id).parameters ?? [])
        .map((p: unknown) => deref<{ in: string; name: string; schema?: unknown }>(p))
        .filter(
          (p: { in: string; schema?: unknown }) =>
            p.in === 'query' && deref<{ format?: string }>(p.schema)?.format === 'date-time',
        )
        .map((p: { name: string }) => p.name);
      for (const name of names) {
        const answer = await server.call(
          'GET',
          `${samplePath(id)}?${name}=${encodeURIComponent('2016-12-31T23:59:60Z')}`,
        );
        // Its path may name nothing (404); the parameter itself is accepted.
        expect([200, 404], `${id} ${name}: ${answer.text}`).toContain(answer.status);
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(10);
  });

  describe('numbers', () => {
    // Ajv coerces "1e309" to Infinity and then skips minimum and maximum for it: the list reached the database with
    // LIMIT Infinity and answered 500.
    const notNumbers = [
      '1e309',
      'Infinity',
      '-Infinity',
      '1e400',
      '-1e400',
      'NaN',
      '0x10',
      '0b1',
      '1_0',
      ' 5',
      '5 ',
      '',
    ];

    test('every numeric query parameter of every operation refuses values that are not finite decimal numbers (422 query/<name>)', async () => {
      const cases = implemented.flatMap((id) => numericQueryParameters(id).map((name) => ({ id, name })));
      expect(cases.map((c) => c.id)).toContain('listMembers');
      for (const { id, name } of cases) {
        for (const value of notNumbers) {
          const answer = await server.call(
            operationTable[id].method.toUpperCase(),
            `${samplePath(id)}?${name}=${encodeURIComponent(value)}`,
          );
          expect({ id, value, status: answer.status }).toEqual({ id, value, status: 422 });
          expectProblem(answer, 422, 'validation_failed');
          expect(pointers(answer), `${id} ${name}=${value}`).toEqual([`query/${name}`]);
        }
      }
    });

    test('a limit written as a finite decimal number is still read as one', async () => {
      for (const value of ['1', '100', '1e2', '20.0']) {
        const answer = await server.call('GET', `/v1/members?limit=${value}`);
        expect(answer.status, value).toBe(200);
      }
    });
  });

  describe('a NUL character is refused in every string, on both databases (422 naming the field)', () => {
    // PostgreSQL cannot store U+0000 in text or jsonb (a 500); SQLite stored it. Refusing it everywhere keeps the two alike.
    test('in body fields, nested fields and the names of metadata keys', async () => {
      const key = await server.call('POST', '/v1/api-keys', { body: { name: 'a\u0000b', role: 'viewer' } });
      expectProblem(key, 422, 'validation_failed');
      expect(pointers(key)).toEqual(['/name']);

      const member = await server.call('POST', '/v1/members', {
        body: { email: 'nul@test.example', role: 'viewer', name: '\u0000' },
      });
      expectProblem(member, 422, 'validation_failed');
      expect(pointers(member)).toEqual(['/name']);

      const endpoint = await server.call('POST', '/v1/webhooks/endpoints', {
        body: {
          url: 'https://hooks.test.example/in',
          event_types: ['*'],
          description: 'ok',
          metadata: { campaign: 'x\u0000y' },
        },
      });
      expectProblem(endpoint, 422, 'validation_failed');
      expect(pointers(endpoint)).toEqual(['/metadata/campaign']);

      const types = await server.call('POST', '/v1/webhooks/endpoints', {
        body: { url: 'https://hooks.test.example/in', event_types: ['workspace.member.added', 'x\u0000'] },
      });
      expectProblem(types, 422, 'validation_failed');
      expect(pointers(types)).toContain('/event_types/1');
    });

    test('with an Idempotency-Key, the refusal is not stored and nothing is created', async () => {
      const before = (await server.call('GET', '/v1/api-keys?limit=100')).body.data.length;
      const answer = await server.call('POST', '/v1/api-keys', {
        body: { name: 'nul\u0000', role: 'viewer' },
        headers: { 'Idempotency-Key': 'nul-body-1' },
      });
      expectProblem(answer, 422, 'validation_failed');
      expect((await server.call('GET', '/v1/api-keys?limit=100')).body.data.length).toBe(before);
    });

    test('a lone surrogate (not Unicode text) is refused the same way: both databases stored U+FFFD while the answer echoed it', async () => {
      for (const rawBody of ['{"name":"a\\ud800b","role":"viewer"}', '{"name":"\\udfff","role":"viewer"}']) {
        const answer = await server.call('POST', '/v1/api-keys', {
          rawBody,
          headers: { 'Content-Type': 'application/json' },
        });
        expectProblem(answer, 422, 'validation_failed');
        expect(pointers(answer)).toEqual(['/name']);
      }
      const pair = await server.call('POST', '/v1/api-keys', {
        rawBody: '{"name":"\\ud83d\\ude00","role":"viewer"}',
        headers: { 'Content-Type': 'application/json' },
      });
      expect(pair.status).toBe(201);
      expect(pair.body.name).toBe('😀');
      const query = await server.call('GET', '/v1/audit-logs?action=api_key.%ED%A0%80');
      expect(query.status).toBe(422);
    });

    test('in query parameters', async () => {
      for (const [path, pointer] of [
        ['/v1/audit-logs?action=api_key.%00', 'query/action'],
        ['/v1/request-logs?path_prefix=%2Fv1%00', 'query/path_prefix'],
        ['/v1/members?cursor=%00', 'query/cursor'],
      ] as const) {
        const answer = await server.call('GET', path);
        expectProblem(answer, 422, 'validation_failed');
        expect(pointers(answer), path).toEqual([pointer]);
      }
    });

    test('in a cursor the server did not write (found with the fuzz: the decoded id reached PostgreSQL, 500)', async () => {
      const forged = (position: object) => Buffer.from(JSON.stringify({ v: 1, ...position })).toString('base64url');
      for (const cursor of [
        forged({ id: 'usr_\u0000' }),
        forged({ id: 'usr_1', at: '2026-01-01T00:00:00.000Z\u0000' }),
        forged({ id: 'x'.repeat(2000) }),
        forged({ id: '\ud800' }),
      ]) {
        for (const list of ['/v1/members', '/v1/api-keys', '/v1/events', '/v1/audit-logs', '/v1/webhooks/endpoints']) {
          const answer = await server.call('GET', `${list}?cursor=${cursor}`);
          expectProblem(answer, 422, 'validation_failed');
          expect(pointers(answer), `${list} ${cursor}`).toEqual(['query/cursor']);
        }
      }
    });

    test('in path parameters', async () => {
      const answer = await server.call('GET', '/v1/events/evt_%00');
      expectProblem(answer, 422, 'validation_failed');
      expect(pointers(answer)).toEqual(['path/id']);
    });
  });

  describe('HEAD', () => {
    // Found by the fuzz: the validator knows no HEAD operations and let every HEAD request through unchecked, so a
    // malformed date reached the handler (500) and unknown parameters were ignored.
    test('is validated like the GET of every operation: 422 for what GET refuses, with a problem content type and no body', async () => {
      const gets = implemented.filter((id) => operationTable[id].method === 'get');
      expect(gets.length).toBeGreaterThan(10);
      // The widget's operations authenticate with a chatbot's embed key, from one of its origins.
      const origin = 'https://malformed.test.example';
      const chatbot = await server.call('POST', '/v1/chatbots', {
        body: { name: 'HEAD', model: 'sandbox-writer', instructions: 'x', allowed_origins: [origin] },
      });
      const embed = { 'X-Embed-Key': chatbot.body.embed.key as string, Origin: origin };
      for (const id of gets) {
        const path = `${samplePath(id)}?colour=blue`;
        const headers = operationTable[id].auth === 'embedKey' ? embed : undefined;
        const get = await server.call('GET', path, { headers });
        const head = await server.call('HEAD', path, { headers });
        expect({ id, get: get.status, head: head.status }).toEqual({ id, get: 422, head: 422 });
        expect(head.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(head.headers.get('x-request-id')).toMatch(REQUEST_ID);
        expect(head.text).toBe('');
      }
      const date = await server.call('HEAD', '/v1/request-logs?created_before=not-a-date');
      expect(date.status).toBe(422);
      expect((await server.call('HEAD', '/v1/workspace')).status).toBe(200);
    });
  });

  describe('operations whose request body is optional', () => {
    const optional = implemented.filter(
      (id) => operationTable[id].requestContentTypes.length > 0 && deref(operation(id).requestBody)?.required !== true,
    );

    test('a body of another content type, or without one, is 415 as on every other operation; no body at all is fine', async () => {
      expect(optional).toContain('sendWebhookEndpointTest');
      const endpoint = await server.call('POST', '/v1/webhooks/endpoints', {
        body: { url: 'http://127.0.0.1:9/optional', event_types: ['*'], enabled: false },
      });
      expect(endpoint.status).toBe(201);
      const paths: Partial<Record<OperationId, string>> = {
        sendWebhookEndpointTest: `/v1/webhooks/endpoints/${endpoint.body.id as string}/test`,
      };
      for (const id of optional) {
        const path = paths[id] ?? samplePath(id);
        const method = operationTable[id].method.toUpperCase();
        const wrongType = await server.call(method, path, {
          rawBody: '{"event_type":"workspace.member.added"}',
          headers: { 'Content-Type': 'text/plain' },
        });
        expectProblem(wrongType, 415, 'unsupported_media_type');
        const response = await fetch(server.url + path, {
          method,
          headers: { Authorization: `Bearer ${server.ownerKey}` },
          body: new TextEncoder().encode('{"event_type":"workspace.member.added"}'),
        });
        const text = await response.text();
        expectProblem(
          { status: response.status, headers: response.headers, text, body: JSON.parse(text) },
          415,
          'unsupported_media_type',
        );
      }
      const none = await server.call('POST', paths.sendWebhookEndpointTest!);
      expect(none.status).toBe(202);
    });
  });

  describe("requests that Node's HTTP parser refuses get a problem document too", () => {
    function expectRawProblem(answer: RawAnswer, status: number, code: ErrorCode): void {
      expect(answer.head, answer.head).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
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
        detail: expect.any(String),
      });
      expect(schemaErrors('/components/schemas/Problem', answer.body)).toEqual([]);
      expect(answer.headers.get('connection')).toBe('close');
      expect(Number(answer.headers.get('content-length'))).toBe(Buffer.byteLength(answer.text));
      // The parser refused the request line or a header: there is no path to name.
      expect(answer.body.instance).toBeUndefined();
    }
    const request = (...parts: Array<string | number[]>) =>
      Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'latin1') : Buffer.from(part))));

    test('headers over 16 KiB are 431 headers_too_large', async () => {
      const answer = await rawRequest(
        server.url,
        request(`GET /v1/workspace HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
      );
      expectRawProblem(answer, 431, 'headers_too_large');
    });

    test.each([
      ['a NUL in a header value', request('GET /v1/workspace HTTP/1.1\r\nHost: x\r\nX-Note: a\u0000b\r\n\r\n')],
      [
        'a raw non-ASCII byte in a header name',
        request('GET /v1/workspace HTTP/1.1\r\nHost: x\r\nX-', [0xe9], ': a\r\n\r\n'),
      ],
      ['a raw non-ASCII byte in the path', request('GET /v1/', [0xff], ' HTTP/1.1\r\nHost: x\r\n\r\n')],
      ['a NUL in the path', request('GET /v1/\u0000 HTTP/1.1\r\nHost: x\r\n\r\n')],
      ['a NUL in the query', request('GET /v1/members?a=\u0000 HTTP/1.1\r\nHost: x\r\n\r\n')],
      ['raw UTF-8 in the query', request('GET /v1/members?a=', [0xc3, 0xa9], ' HTTP/1.1\r\nHost: x\r\n\r\n')],
      ['a request line that is not HTTP', request('HELLO\r\n\r\n')],
      [
        'a broken chunked body',
        request(
          'POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n',
        ),
      ],
      [
        'both Content-Length and Transfer-Encoding',
        request(
          'POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
        ),
      ],
    ])('%s is 400 malformed_request', async (_what, bytes) => {
      expectRawProblem(await rawRequest(server.url, bytes), 400, 'malformed_request');
    });

    test('after a pipelined request, the refusal follows its answer instead of cutting in before it', async () => {
      const answer = await rawRequest(
        server.url,
        request('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/\u0000 HTTP/1.1\r\nHost: x\r\n\r\n'),
      );
      expect(answer.status).toBe(200);
      const second = answer.text.indexOf('HTTP/1.1 ');
      expect(second, answer.text).toBeGreaterThan(0);
      const rest = answer.text.slice(second);
      expect(rest).toMatch(/^HTTP\/1\.1 400 /);
      expect(JSON.parse(rest.slice(rest.indexOf('\r\n\r\n') + 4))).toMatchObject({
        status: 400,
        code: 'malformed_request',
      });
    });

    test('the server goes on answering after them', async () => {
      await rawRequest(server.url, request('HELLO\r\n\r\n'));
      expect((await server.call('GET', '/v1/workspace')).status).toBe(200);
    });
  });
});

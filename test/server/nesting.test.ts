// A body nests arrays and objects at most 64 levels deep, on every operation that reads a body and on those that take
// none, with or without an Idempotency-Key: deeper is 400 invalid_json before anything walks it (the contract's
// validation, the idempotency fingerprint, the features), never a 500; 64 levels are read as any body is.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OperationId, operationTable } from '../../generated/operations.ts';
import { notImplemented } from '../../src/handlers.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan, valueNestsDeeperThan } from '../../src/platform/json-depth.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';

const nested = (levels: number, inner = '1') => '{"a":'.repeat(levels) + inner + '}'.repeat(levels);
const bytes = (text: string) => Buffer.from(text);

describe('nesting depth of a JSON text', () => {
  test.each([
    ['objects at the bound', nested(64), false],
    ['objects one past it', nested(65), true],
    ['arrays one past it', `${'['.repeat(65)}${']'.repeat(65)}`, true],
    ['brackets inside strings do not count', JSON.stringify({ a: '['.repeat(1000) }), false],
    ['an escaped quote does not end a string', `{"a":"\\"${'['.repeat(100)}"}`, false],
    ['siblings are not nesting', `[${'[1],'.repeat(1000)}[1]]`, false],
    ['multi-byte UTF-8 is not a bracket', JSON.stringify({ a: '漢[{'.repeat(100) }), false],
    [
      'an escaped backslash before a quote ends the string',
      `{"a":"\\\\","b":${'['.repeat(65)}1${']'.repeat(65)}}`,
      true,
    ],
    ['three backslashes escape the quote', `{"a":"\\\\\\"${'['.repeat(65)}"}`, false],
    ['deep after long strings', `[${'"x",'.repeat(1000)}${nested(65)}]`, true],
  ])('%s', (_, text, deeper) => {
    expect(nestsDeeperThan(bytes(text), MAX_JSON_DEPTH)).toBe(deeper);
    expect(valueNestsDeeperThan(JSON.parse(text), MAX_JSON_DEPTH)).toBe(deeper);
  });

  test('a string that never ends holds no nesting (the parser refuses the text)', () => {
    expect(nestsDeeperThan(bytes(`{"a":"${'['.repeat(100)}`), MAX_JSON_DEPTH)).toBe(false);
    expect(nestsDeeperThan(bytes('{"a":"x\\"'), MAX_JSON_DEPTH)).toBe(false);
  });
});

const bearer = (Object.keys(operationTable) as OperationId[]).filter(
  (id) =>
    !(notImplemented as readonly string[]).includes(id) &&
    operationTable[id].method !== 'get' &&
    operationTable[id].auth === 'bearer',
);

describe.each(databaseKinds)('a deeply nested body on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ database: kind });
  });
  afterAll(async () => {
    await server?.close();
  });

  test('is 400 invalid_json on every operation, with and without an Idempotency-Key', async () => {
    expect(bearer.length).toBeGreaterThan(40);
    const deep = nested(6000);
    const seen: string[] = [];
    for (const id of bearer) {
      const { method, path } = operationTable[id];
      const url = path.replace(/\{[^}]+\}/g, 'x_01JD0000000000000000000000');
      for (const idempotencyKey of [null, `deep-${id}`]) {
        const answer = await server.call(method.toUpperCase(), url, {
          rawBody: deep,
          headers: {
            'Content-Type': 'application/json',
            ...(idempotencyKey && method !== 'delete' ? { 'Idempotency-Key': idempotencyKey } : {}),
          },
        });
        seen.push(`${id} ${answer.status} ${answer.body?.code}`);
      }
    }
    expect(seen.filter((line) => !line.endsWith(' 400 invalid_json'))).toEqual([]);
  });

  test('64 levels are read as any body is: a free-form field (tool parameters) that deep is taken', async () => {
    // The body's own object, its tools array, the tool, its function: four levels around the parameters.
    const chat = (levels: number) => ({
      model: 'sandbox-writer',
      messages: [{ role: 'user', content: 'Say hello' }],
      tools: [{ type: 'function', function: { name: 'deep', parameters: JSON.parse(nested(levels)) } }],
    });
    const taken = await server.call('POST', '/v1/chat/completions', {
      body: chat(MAX_JSON_DEPTH - 4),
      headers: { 'Idempotency-Key': 'deep-but-allowed' },
    });
    expect(taken.status, taken.text).not.toBe(400);
    expect(taken.status, taken.text).toBeLessThan(500);
    const refused = await server.call('POST', '/v1/chat/completions', {
      body: chat(MAX_JSON_DEPTH - 3),
      headers: { 'Idempotency-Key': 'too-deep' },
    });
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 400, code: 'invalid_json' });
  });

  test('a YAML body deeper than the bound is 400 invalid_json too, however deep', async () => {
    for (const yaml of [
      `name: deep\nsteps: ${'['.repeat(65)}${']'.repeat(65)}\n`,
      `name: deep\nsteps: ${'['.repeat(1000)}${']'.repeat(1000)}\n`,
      `name: deep\nsteps: ${'{a: '.repeat(1000)}1${'}'.repeat(1000)}\n`,
      `name: deep\nsteps: ${'['.repeat(6000)}${']'.repeat(6000)}\n`,
    ]) {
      const answer = await server.call('POST', '/v1/workflows', {
        rawBody: yaml,
        headers: { 'Content-Type': 'application/yaml' },
      });
      expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 400, code: 'invalid_json' });
    }
  });
});

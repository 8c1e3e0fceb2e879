// The validator's Ajv validators are compiled at build time (`npm run generate`, scripts/validators.ts) into
// generated/validators.cjs, and handed to express-openapi-validator by src/platform/validator-schema-roots.ts in
// place of compiling them at an operation's first request. These tests fail when the validator stops using them:
// a schema it compiles at run time is counted. Times are measured by `npm run bench:first-calls`, not asserted here.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { operationTable } from '../../generated/operations.ts';
import { driveValidator, exampleRequests } from '../../scripts/validators.ts';
import { openApiDocument } from '../../src/platform/spec.ts';
import { sharedValidatorMiddleware } from '../../src/platform/validation.ts';
import { validatorCompiles } from '../../src/platform/validator-schema-roots.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('the validators compiled at build time', () => {
  describe('a server', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer();
    });
    afterAll(async () => {
      await server?.close();
    });

    // First in this file, so that the validator's first request is the server's own GET /healthz and not the
    // generator's first operation: the validator writes defaults into the document as operations are first called.
    test('validates its first requests with them: the same problem documents, nothing compiled', async () => {
      const headers = { Authorization: `Bearer ${server.ownerKey}` };
      const invalid = await fetch(`${server.url}/v1/voices?limit=0`, { headers });
      expect(invalid.status).toBe(422);
      expect(await invalid.json()).toMatchObject({
        code: 'validation_failed',
        errors: [{ pointer: 'query/limit', detail: 'must be >= 1' }],
      });
      const valid = await fetch(`${server.url}/v1/voices?limit=1`, { headers });
      expect(valid.status).toBe(200);
      expect(await valid.json()).toMatchObject({ data: [], next_cursor: null });
      const body = await fetch(`${server.url}/v1/projects`, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json; charset=utf-8' },
        body: JSON.stringify({ name: 7 }),
      });
      expect(body.status).toBe(422);
      expect(await body.json()).toMatchObject({ errors: [{ pointer: '/name', detail: 'must be string' }] });
      expect(validatorCompiles().compiled).toBe(0);
    });

    // The build asks a string's length in UTF-16 units before counting its characters (scripts/validators.ts,
    // lengthChecksFirst): the bounds stay counted in characters, an emoji one character of two units.
    test('maxLength and minLength count characters', async () => {
      const create = (name: string) =>
        fetch(`${server.url}/v1/projects`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${server.ownerKey}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ name }),
        });
      expect((await create('🙂'.repeat(100))).status).toBe(201);
      const over = await create('🙂'.repeat(101));
      expect(over.status).toBe(422);
      expect(await over.json()).toMatchObject({
        errors: [{ pointer: '/name', detail: 'must NOT have more than 100 characters' }],
      });
      expect((await create(`${'🙂'.repeat(99)}ab`)).status).toBe(422);
      expect((await create('a'.repeat(100))).status).toBe(201);
      expect((await create('a'.repeat(101))).status).toBe(422);
      const empty = (await (await create('')).json()) as { errors: unknown[] };
      expect(empty.errors).toContainEqual({ pointer: '/name', detail: 'must NOT have fewer than 1 characters' });
      expect(validatorCompiles().compiled).toBe(0);
    });
  });

  test("every operation's example request passes the request validation, and nothing is compiled at run time", async () => {
    const requests = exampleRequests(openApiDocument);
    const passed = await driveValidator(sharedValidatorMiddleware(), requests);
    expect([...passed].sort()).toEqual(Object.keys(operationTable).sort());
    const compiles = validatorCompiles();
    // Each distinct schema once (many answers share one: the problem responses).
    expect(compiles.generated).toBeGreaterThan(Object.keys(operationTable).length);
    expect(compiles.compiled, 'schemas compiled at run time: run `npm run generate`').toBe(0);
  });
});

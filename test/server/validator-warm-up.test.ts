// The validator's warm-up (src/platform/validator-warm-up.ts): before a server listens, every operation's documented
// example request goes through the process's shared validator, so that the validators of each operation are compiled
// before its first real call. Each example must pass the request validation, or the operation's response validators
// would be left to its first real call. Times are measured by `npm run bench:first-calls`, not asserted here.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { operationTable } from '../../generated/operations.ts';
import { warmUpValidator } from '../../src/platform/validator-warm-up.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('validator warm-up', () => {
  // It compiles the validators of every operation, which takes seconds on a busy machine.
  test('every operation is sent once and every example request passes the request validation', {
    timeout: 180_000,
  }, async () => {
    const result = await warmUpValidator();
    expect(result.operations).toBe(Object.keys(operationTable).length);
    expect(result.validated).toBe(result.operations);
  });

  describe('a server started with VALIDATOR_WARM_UP=true', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer({ env: { VALIDATOR_WARM_UP: 'true' } });
    });
    afterAll(async () => {
      await server?.close();
    });

    test('answers its first requests as a cold one does: validated, with the same problem documents', async () => {
      const invalid = await fetch(`${server.url}/v1/voices?limit=0`, {
        headers: { Authorization: `Bearer ${server.ownerKey}` },
      });
      expect(invalid.status).toBe(422);
      expect(await invalid.json()).toMatchObject({
        code: 'validation_failed',
        errors: [{ pointer: expect.stringContaining('limit') }],
      });
      const valid = await fetch(`${server.url}/v1/voices?limit=1`, {
        headers: { Authorization: `Bearer ${server.ownerKey}` },
      });
      expect(valid.status).toBe(200);
      expect(await valid.json()).toMatchObject({ data: [], next_cursor: null });
    });
  });
});

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';

describe.each(databaseKinds)('the server on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ database: kind });
  });
  afterAll(async () => {
    await server?.close();
  });

  test('answers GET /v1/workspace with the calling key', async () => {
    const answer = await server.call('GET', '/v1/workspace');
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      id: server.workspaceId,
      object: 'workspace',
      caller: { api_key_id: server.ownerKeyId, role: 'owner' },
    });
  });
});

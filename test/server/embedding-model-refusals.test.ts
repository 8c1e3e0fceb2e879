// An embedding model cannot write text: a chatbot, a project's default model and a workflow step that name one are
// refused when they are created, with the field that names it, instead of at their first generation.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('embedding models where a chat model is needed', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  const post = async (path: string, body: unknown, contentType = 'application/json') => {
    const response = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${server.ownerKey}`, 'Content-Type': contentType },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return {
      status: response.status,
      body: (await response.json()) as { code?: string; errors?: Array<{ pointer: string; detail: string }> },
    };
  };

  test('a chatbot on sandbox-embedding is refused at /model; on sandbox-writer it is created', async () => {
    const refused = await post('/v1/chatbots', { name: 'Help', model: 'sandbox-embedding', instructions: 'Answer.' });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({
      code: 'validation_failed',
      errors: [{ pointer: '/model', detail: expect.stringContaining('embedding model') }],
    });
    expect(
      (await post('/v1/chatbots', { name: 'Help', model: 'sandbox-writer', instructions: 'Answer.' })).status,
    ).toBe(201);
  });

  test("a project's default_model that is an embedding model is refused at /default_model", async () => {
    const refused = await post('/v1/projects', { name: 'Launch', default_model: 'text-embedding-3-small' });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({
      code: 'validation_failed',
      errors: [{ pointer: '/default_model', detail: expect.stringContaining('embedding model') }],
    });
  });

  test('a workflow step on an embedding model is refused at its model', async () => {
    const definition = {
      name: 'Notes',
      steps: [{ id: 'draft', type: 'generate', model: 'sandbox-embedding', prompt: 'Write release notes.' }],
    };
    const refused = await post('/v1/workflows', definition);
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toContainEqual({
      pointer: '/steps/0/model',
      detail: "sandbox-embedding is not a chat model of the catalogue in this workspace's region",
    });
  });
});

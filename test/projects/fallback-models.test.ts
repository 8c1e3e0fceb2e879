// A project's default fallback models (`fallback_models`) through the API, on SQLite and PostgreSQL, with the real
// provider packages in front of fake upstreams on loopback: set, shown, replaced and cleared on the project, checked
// like the other model references (unknown 404 model_not_found, an embedding model 422, each at its pointer); tried by
// the chat completions and responses that name the project (`project_id`) and no `models`, whose usage is then the
// project's; the request's own `models` wins; a default that cannot serve a request is left out, not refused; an
// unknown `project_id` is 404.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { expectProblem } from '../support/expect.ts';
import { type FakeProvider, startFakeAnthropic, startFakeOpenAi } from '../support/fake-providers.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { schemaErrors } from '../support/spec.ts';

const CLAUDE = 'claude-haiku-4-5';
/** A well-formed project id that names no project. */
const UNKNOWN_PROJECT_ID = 'prj_01JD1N4Q8R2S5T7V9W3X6Y0Z1A';

describe.each(databaseKinds)('project fallback models on %s', (kind) => {
  let openai: FakeProvider;
  let anthropic: FakeProvider;
  let server: TestServer;
  let counter = 0;

  beforeAll(async () => {
    [openai, anthropic] = await Promise.all([startFakeOpenAi(), startFakeAnthropic()]);
    server = await startTestServer({
      database: kind,
      env: {
        OPENAI_API_KEY: 'sk-test-openai',
        OPENAI_BASE_URL: openai.url,
        ANTHROPIC_API_KEY: 'sk-ant-test',
        ANTHROPIC_BASE_URL: anthropic.url,
        PROVIDER_MAX_RETRIES: '0',
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await Promise.all([openai, anthropic].map((fake) => fake?.close()));
  });

  async function newWorkspace() {
    const created = await createWorkspace(server.platform.db, {
      name: `Project fallbacks ${++counter}`,
      region: server.platform.config.region,
      now: new Date(),
    });
    return { key: created.secret, workspaceId: created.workspace.id };
  }

  async function newProject(key: string, body: Record<string, unknown>): Promise<string> {
    const answer = await server.call('POST', '/v1/projects', { key, body: { name: `Project ${++counter}`, ...body } });
    expect(answer.status, answer.text).toBe(201);
    return answer.body.id;
  }

  async function usageRows(workspaceId: string) {
    const rows = await server.platform.db
      .selectFrom('usage_records')
      .select(['model', 'project_id'])
      .where('workspace_id', '=', workspaceId)
      .orderBy('id')
      .execute();
    return rows.map((row) => ({ model: row.model, project_id: row.project_id }));
  }

  const complete = (key: string, body: Record<string, unknown>): Promise<Answer> =>
    server.call('POST', '/v1/chat/completions', { key, body });
  const ask = { messages: [{ role: 'user', content: 'A subject line for the sale' }], max_completion_tokens: 60 };

  test('set on creation, shown, replaced by an update and cleared with []; none by default', async () => {
    const { key } = await newWorkspace();
    const created = await server.call('POST', '/v1/projects', {
      key,
      body: { name: 'Spring', fallback_models: [CLAUDE, 'gpt-4o-mini'] },
    });
    expect(created.status, created.text).toBe(201);
    expect(schemaErrors('/components/schemas/Project', created.body)).toEqual([]);
    expect(created.body.fallback_models).toEqual([CLAUDE, 'gpt-4o-mini']);
    expect((await server.call('GET', `/v1/projects/${created.body.id}`, { key })).body.fallback_models).toEqual([
      CLAUDE,
      'gpt-4o-mini',
    ]);
    const replaced = await server.call('PATCH', `/v1/projects/${created.body.id}`, {
      key,
      body: { fallback_models: ['gpt-4.1-mini'] },
    });
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.body.fallback_models).toEqual(['gpt-4.1-mini']);
    const cleared = await server.call('PATCH', `/v1/projects/${created.body.id}`, {
      key,
      body: { fallback_models: [] },
    });
    expect(cleared.body.fallback_models).toEqual([]);
    const plain = await server.call('POST', '/v1/projects', { key, body: { name: 'Plain' } });
    expect(plain.body.fallback_models).toEqual([]);
    // A model whose provider is not configured here is taken, as for default_model.
    const later = await server.call('POST', '/v1/projects', {
      key,
      body: { name: 'Later', fallback_models: ['gemini-2.5-flash-lite'] },
    });
    expect(later.status, later.text).toBe(201);
  });

  test('refused like the other model references: unknown, an embedding model, a duplicate, more than five', async () => {
    const { key } = await newWorkspace();
    const unknown = await server.call('POST', '/v1/projects', {
      key,
      body: { name: 'A', fallback_models: [CLAUDE, 'gpt-9-imaginary'] },
    });
    expectProblem(unknown, 404, 'model_not_found');
    expect(unknown.body.errors).toEqual([{ pointer: '/fallback_models/1', detail: 'is not a model of the catalogue' }]);
    const embedding = await server.call('POST', '/v1/projects', {
      key,
      body: { name: 'B', fallback_models: ['text-embedding-3-small'] },
    });
    expectProblem(embedding, 422, 'validation_failed');
    expect(embedding.body.errors[0].pointer).toBe('/fallback_models/0');
    const id = await newProject(key, {});
    const update = await server.call('PATCH', `/v1/projects/${id}`, {
      key,
      body: { fallback_models: ['text-embedding-3-small'] },
    });
    expectProblem(update, 422, 'validation_failed');
    expect(update.body.errors[0].pointer).toBe('/fallback_models/0');
    expectProblem(
      await server.call('PATCH', `/v1/projects/${id}`, { key, body: { fallback_models: [CLAUDE, CLAUDE] } }),
      422,
      'validation_failed',
    );
    expectProblem(
      await server.call('PATCH', `/v1/projects/${id}`, {
        key,
        body: { fallback_models: ['a', 'b', 'c', 'd', 'e', 'f'] },
      }),
      422,
      'validation_failed',
    );
    expect((await server.call('GET', `/v1/projects/${id}`, { key })).body.fallback_models).toEqual([]);
  });

  test("a chat completion naming the project and no models falls back to its default; the usage is the project's", async () => {
    const { key, workspaceId } = await newWorkspace();
    const projectId = await newProject(key, { fallback_models: [CLAUDE] });
    openai.enqueue({ error: { status: 503 } });
    anthropic.enqueue({ text: 'Spring sale: 20% off every plan', usage: { input: 31, output: 11 } });
    const answer = await complete(key, { model: 'gpt-4o-mini', project_id: projectId, ...ask });
    expect(answer.status, answer.text).toBe(200);
    expect(schemaErrors('/components/schemas/ChatCompletion', answer.body)).toEqual([]);
    expect(answer.body.model).toBe(CLAUDE);
    expect(answer.body.models_tried).toEqual([{ model: 'gpt-4o-mini', code: 'upstream_unavailable', status: 503 }]);
    expect(await usageRows(workspaceId)).toEqual([{ model: CLAUDE, project_id: projectId }]);
    const usage = await server.call('GET', `/v1/usage?project_id=${projectId}`, { key });
    expect(usage.status).toBe(200);
    expect(usage.body.totals.cost_usd).toBeGreaterThan(0);

    // Without a failure the request's model answers; models_tried says fallbacks were in play.
    openai.enqueue({ text: 'Sale!', usage: { input: 5, output: 2 } });
    const direct = await complete(key, { model: 'gpt-4o-mini', project_id: projectId, ...ask });
    expect(direct.body).toMatchObject({ model: 'gpt-4o-mini', models_tried: [] });
  });

  test("the request's own models win over the project's; with n over 1 the default does not apply", async () => {
    const { key } = await newWorkspace();
    const projectId = await newProject(key, { fallback_models: [CLAUDE] });
    openai.enqueue({ error: { status: 503 } });
    openai.enqueue({ text: 'From the other OpenAI model', usage: { input: 5, output: 4 } });
    const anthropicBefore = anthropic.requests.length;
    const own = await complete(key, { model: 'gpt-4o-mini', models: ['gpt-4.1-mini'], project_id: projectId, ...ask });
    expect(own.status, own.text).toBe(200);
    expect(own.body.model).toBe('gpt-4.1-mini');
    expect(anthropic.requests.length).toBe(anthropicBefore);

    // n = 2 with `models` is refused; with the project's default the request is served without fallbacks.
    openai.enqueue({ text: 'One', usage: { input: 5, output: 1 } });
    openai.enqueue({ text: 'Two', usage: { input: 5, output: 1 } });
    const two = await complete(key, { model: 'gpt-4o-mini', project_id: projectId, n: 2, ...ask });
    expect(two.status, two.text).toBe(200);
    expect(two.body.choices).toHaveLength(2);
    expect(two.body).not.toHaveProperty('models_tried');
  });

  test("a default that cannot serve the request is left out, not refused: the request's own model, one lacking a capability", async () => {
    const { key } = await newWorkspace();
    // gpt-4o-mini is the request's model; chatgpt-4o-latest cannot call tools; claude can.
    const projectId = await newProject(key, { fallback_models: ['gpt-4o-mini', 'chatgpt-4o-latest', CLAUDE] });
    openai.enqueue({ error: { status: 503 } });
    anthropic.enqueue({ text: 'No tool needed.', usage: { input: 20, output: 4 } });
    const tools = [
      {
        type: 'function',
        function: { name: 'lookup', description: 'Looks a thing up.', parameters: { type: 'object', properties: {} } },
      },
    ];
    const answer = await complete(key, { model: 'gpt-4o-mini', project_id: projectId, tools, ...ask });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.model).toBe(CLAUDE);
    expect(answer.body.models_tried).toEqual([{ model: 'gpt-4o-mini', code: 'upstream_unavailable', status: 503 }]);
    // The same list given as the request's own `models` is refused where it cannot serve the request.
    const refused = await complete(key, {
      model: 'gpt-4o-mini',
      models: ['gpt-4o-mini', 'chatgpt-4o-latest', CLAUDE],
      tools,
      ...ask,
    });
    expectProblem(refused, 422, 'validation_failed');
    expect(refused.body.errors[0].pointer).toBe('/models/1');
  });

  test('a default list that leaves no model for the request is no fallback: the answer names none tried', async () => {
    const { key } = await newWorkspace();
    // gpt-4o-mini is the request's model and chatgpt-4o-latest cannot call tools: neither can serve it.
    const projectId = await newProject(key, { fallback_models: ['gpt-4o-mini', 'chatgpt-4o-latest'] });
    openai.enqueue({ text: 'No tool needed.', usage: { input: 20, output: 4 } });
    const tools = [
      {
        type: 'function',
        function: { name: 'lookup', description: 'Looks a thing up.', parameters: { type: 'object', properties: {} } },
      },
    ];
    const answer = await complete(key, { model: 'gpt-4o-mini', project_id: projectId, tools, ...ask });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.model).toBe('gpt-4o-mini');
    expect(answer.body).not.toHaveProperty('models_tried');
  });

  test("an unknown project_id is 404 at /project_id, on chat completions and responses; another workspace's too", async () => {
    const { key } = await newWorkspace();
    const other = await newWorkspace();
    const theirs = await newProject(other.key, { fallback_models: [CLAUDE] });
    for (const projectId of [UNKNOWN_PROJECT_ID, theirs]) {
      const chat = await complete(key, { model: 'sandbox-writer', project_id: projectId, ...ask });
      expectProblem(chat, 404, 'not_found');
      expect(chat.body.errors).toEqual([{ pointer: '/project_id', detail: 'is not a project of this workspace' }]);
      expect(chat.body.error).toMatchObject({ code: 'not_found', param: 'project_id' });
      const response = await server.call('POST', '/v1/responses', {
        key,
        body: { model: 'sandbox-writer', project_id: projectId, input: 'Hello' },
      });
      expectProblem(response, 404, 'not_found');
    }
  });

  test("Responses API: the project's default answers when the model fails; the response names it", async () => {
    const { key, workspaceId } = await newWorkspace();
    const projectId = await newProject(key, { fallback_models: [CLAUDE] });
    openai.enqueue({ error: { status: 503 } });
    anthropic.enqueue({ text: 'Spring sale: 20% off.', usage: { input: 40, output: 7 } });
    const answer = await server.call('POST', '/v1/responses', {
      key,
      body: { model: 'gpt-4o-mini', project_id: projectId, input: 'Announce the sale' },
    });
    expect(answer.status, answer.text).toBe(200);
    expect(schemaErrors('/components/schemas/Response', answer.body)).toEqual([]);
    expect(answer.body).toMatchObject({
      model: CLAUDE,
      models_tried: [{ model: 'gpt-4o-mini', code: 'upstream_unavailable', status: 503 }],
    });
    expect(await usageRows(workspaceId)).toEqual([{ model: CLAUDE, project_id: projectId }]);
  });
});

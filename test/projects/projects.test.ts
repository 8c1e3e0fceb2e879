// The project API against the real server on SQLite and PostgreSQL: create (defaults, Location), get, list (newest
// first, pages through next_cursor and Link, the `name` filter with LIKE's special characters), update (only the
// fields given; `null` clears), delete, the name rule (409 project_name_taken ignoring case, also under concurrent
// requests), roles, workspaces (another workspace's project is 404), the default voice (a voice of the workspace, or
// 404 with a pointer), validation problems, Idempotency-Key and the audit entries written with each change.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { ManualClock } from '../../src/platform/clock.ts';
import { expectProblem } from '../support/expect.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';

const PROJECT_ID = /^prj_[0-9A-HJKMNP-TV-Z]{26}$/;
/** A well-formed voice id that names no voice. */
const UNKNOWN_VOICE_ID = 'voc_01JD2Q7F8X3M4N5P6R7S8T9V0W';
const SAMPLE = readFileSync(new URL('../voices/samples/casual-coffee.txt', import.meta.url), 'utf8');

describe.each(databaseKinds)('projects on %s', (kind) => {
  let server: TestServer;
  const clock = new ManualClock('2026-11-20T10:00:00.000Z');
  let counter = 0;

  beforeAll(async () => {
    server = await startTestServer({ database: kind, clock });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** A workspace of its own, so that names and lists of one test are not another's. */
  async function newWorkspace() {
    const created = await createWorkspace(server.platform.db, {
      name: `Workspace ${++counter}`,
      region: server.platform.config.region,
      now: clock.now(),
    });
    return { key: created.secret, id: created.workspace.id };
  }

  async function create(key: string, body: Record<string, unknown>) {
    const answer = await server.call('POST', '/v1/projects', { key, body });
    expect(answer.status, answer.text).toBe(201);
    return answer.body as { id: string; name: string; [field: string]: unknown };
  }

  /** A voice of the key's workspace; a project takes it as its default while it trains. */
  async function newVoice(key: string): Promise<string> {
    const answer = await server.call('POST', '/v1/voices', { key, body: { name: 'House voice', sample_text: SAMPLE } });
    expect(answer.status, answer.text).toBe(202);
    return answer.body.id as string;
  }

  async function listIds(key: string, query = ''): Promise<string[]> {
    const answer = await server.call('GET', `/v1/projects?limit=100${query}`, { key });
    expect(answer.status, answer.text).toBe(200);
    return (answer.body.data as Array<{ id: string }>).map((p) => p.id);
  }

  async function auditEntries(key: string) {
    const answer = await server.call('GET', '/v1/audit-logs?action=project.*&limit=100', { key });
    expect(answer.status, answer.text).toBe(200);
    return answer.body.data as Array<{
      action: string;
      target: { type: string; id: string; display_name: string };
      details: Record<string, unknown>;
    }>;
  }

  test('create answers 201 with a Location and the defaults; get returns the same project', async () => {
    const { key } = await newWorkspace();
    const answer = await server.call('POST', '/v1/projects', { key, body: { name: 'Help centre' } });
    expect(answer.status, answer.text).toBe(201);
    expect(answer.body).toEqual({
      id: expect.stringMatching(PROJECT_ID),
      object: 'project',
      name: 'Help centre',
      description: null,
      default_voice_id: null,
      default_model: null,
      fallback_models: [],
      metadata: {},
      created_at: clock.now().toISOString(),
      updated_at: clock.now().toISOString(),
    });
    expect(answer.headers.get('location')).toBe(`/v1/projects/${answer.body.id}`);
    const read = await server.call('GET', answer.headers.get('location')!, { key });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(answer.body);
  });

  test('create takes every field as given', async () => {
    const { key } = await newWorkspace();
    const body = {
      name: 'Spring campaign 2027',
      description: 'Spring range',
      default_voice_id: await newVoice(key),
      default_model: 'gpt-4o-mini',
      metadata: { team: 'growth' },
    };
    expect(await create(key, body)).toMatchObject(body);
  });

  test('the list is newest first, pages with limit=1 through next_cursor and Link', async () => {
    const { key } = await newWorkspace();
    const ids: string[] = [];
    for (const name of ['One', 'Two', 'Three']) {
      ids.unshift((await create(key, { name })).id);
      clock.advance(1);
    }
    expect(await listIds(key)).toEqual(ids);

    const seen: string[] = [];
    let path: string | null = '/v1/projects?limit=1';
    for (let i = 0; path && i < 10; i++) {
      const page: Answer = await server.call('GET', path, { key });
      expect(page.status).toBe(200);
      expect(page.body.data).toHaveLength(1);
      seen.push(page.body.data[0].id);
      const link = page.headers.get('link');
      if (page.body.next_cursor === null) {
        expect(link).toBeNull();
        path = null;
      } else {
        const next = new URL(/^<([^>]+)>; rel="next"$/.exec(link ?? '')![1]!);
        expect(next.searchParams.get('cursor')).toBe(page.body.next_cursor);
        path = next.pathname + next.search;
      }
    }
    expect(seen).toEqual(ids);
  });

  test('the name filter matches a part of the name ignoring case, and % and _ only as themselves', async () => {
    const { key } = await newWorkspace();
    const spring = await create(key, { name: 'Spring Campaign' });
    const autumn = await create(key, { name: 'Autumn campaign' });
    const percent = await create(key, { name: '100% organic' });
    const underscore = await create(key, { name: 'snake_case' });
    await create(key, { name: 'Help centre' });
    expect(new Set(await listIds(key, '&name=CAMPAIGN'))).toEqual(new Set([spring.id, autumn.id]));
    expect(await listIds(key, '&name=%25')).toEqual([percent.id]);
    expect(await listIds(key, '&name=_')).toEqual([underscore.id]);
    expect(await listIds(key, '&name=nothing')).toEqual([]);
  });

  test('update changes only the fields given; null clears a nullable field; metadata is replaced', async () => {
    const { key } = await newWorkspace();
    const project = await create(key, {
      name: 'Launch',
      description: 'All launch work',
      default_voice_id: await newVoice(key),
      default_model: 'gpt-4o-mini',
      metadata: { a: '1', b: '2' },
    });
    clock.advance(1000);
    const answer = await server.call('PATCH', `/v1/projects/${project.id}`, {
      key,
      body: { description: null, default_model: 'claude-3-5-haiku-latest', metadata: { c: '3' } },
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({
      ...project,
      description: null,
      default_model: 'claude-3-5-haiku-latest',
      metadata: { c: '3' },
      updated_at: clock.now().toISOString(),
    });
    const read = await server.call('GET', `/v1/projects/${project.id}`, { key });
    expect(read.body).toEqual(answer.body);

    const renamed = await server.call('PATCH', `/v1/projects/${project.id}`, {
      key,
      body: { name: 'Launch 2027', default_voice_id: null },
    });
    expect(renamed.body).toMatchObject({
      name: 'Launch 2027',
      default_voice_id: null,
      default_model: 'claude-3-5-haiku-latest',
      metadata: { c: '3' },
    });
  });

  test("default_voice_id must be a voice of the workspace: another workspace's or an unknown one is 404 with a pointer", async () => {
    const { key } = await newWorkspace();
    const other = await newWorkspace();
    const othersVoice = await newVoice(other.key);
    const ownVoice = await newVoice(key);
    for (const voiceId of [othersVoice, UNKNOWN_VOICE_ID]) {
      const refused = await server.call('POST', '/v1/projects', {
        key,
        body: { name: 'Borrowed voice', default_voice_id: voiceId },
      });
      expectProblem(refused, 404, 'not_found');
      expect(refused.body.errors).toEqual([
        { pointer: '/default_voice_id', detail: 'is not a voice of this workspace' },
      ]);
    }
    expect(await listIds(key)).toEqual([]);

    const project = await create(key, { name: 'Own voice', default_voice_id: ownVoice });
    expect(project.default_voice_id).toBe(ownVoice);
    for (const voiceId of [othersVoice, UNKNOWN_VOICE_ID]) {
      const refused = await server.call('PATCH', `/v1/projects/${project.id}`, {
        key,
        body: { default_voice_id: voiceId },
      });
      expectProblem(refused, 404, 'not_found');
      expect(refused.body.errors).toEqual([
        { pointer: '/default_voice_id', detail: 'is not a voice of this workspace' },
      ]);
    }
    expect((await server.call('GET', `/v1/projects/${project.id}`, { key })).body.default_voice_id).toBe(ownVoice);
    const cleared = await server.call('PATCH', `/v1/projects/${project.id}`, { key, body: { default_voice_id: null } });
    expect(cleared.status, cleared.text).toBe(200);
    expect(cleared.body.default_voice_id).toBeNull();
    const set = await server.call('PATCH', `/v1/projects/${project.id}`, { key, body: { default_voice_id: ownVoice } });
    expect(set.status, set.text).toBe(200);
    expect(set.body.default_voice_id).toBe(ownVoice);
  });

  test('default_model must be a model of the catalogue: an unknown one is 404 model_not_found with a pointer', async () => {
    const { key } = await newWorkspace();
    const refused = await server.call('POST', '/v1/projects', {
      key,
      body: { name: 'Unknown model', default_model: 'gpt-9-turbo' },
    });
    expectProblem(refused, 404, 'model_not_found');
    expect(refused.body.errors).toEqual([{ pointer: '/default_model', detail: 'is not a model of the catalogue' }]);
    expect(await listIds(key)).toEqual([]);

    // A model of the catalogue is taken whether or not its provider is configured here (no OpenAI key in the tests).
    const project = await create(key, { name: 'Known model', default_model: 'gpt-4o-mini' });
    expect(project.default_model).toBe('gpt-4o-mini');
    const unknown = await server.call('PATCH', `/v1/projects/${project.id}`, {
      key,
      body: { default_model: 'gpt-9-turbo' },
    });
    expectProblem(unknown, 404, 'model_not_found');
    expect(unknown.body.errors).toEqual([{ pointer: '/default_model', detail: 'is not a model of the catalogue' }]);
    expect((await server.call('GET', `/v1/projects/${project.id}`, { key })).body.default_model).toBe('gpt-4o-mini');
    const sandbox = await server.call('PATCH', `/v1/projects/${project.id}`, {
      key,
      body: { default_model: 'sandbox-writer' },
    });
    expect(sandbox.status, sandbox.text).toBe(200);
    expect(sandbox.body.default_model).toBe('sandbox-writer');
    const cleared = await server.call('PATCH', `/v1/projects/${project.id}`, { key, body: { default_model: null } });
    expect(cleared.body.default_model).toBeNull();
  });

  test("a default voice of another workspace saved before the check is not copied to the project's documents and chatbots", async () => {
    const { key } = await newWorkspace();
    const other = await newWorkspace();
    const othersVoice = await newVoice(other.key);
    await server.platform.db.updateTable('voices').set({ status: 'ready' }).where('id', '=', othersVoice).execute();
    const project = await create(key, { name: 'Legacy default' });
    await server.platform.db
      .updateTable('projects')
      .set({ default_voice_id: othersVoice })
      .where('id', '=', project.id)
      .execute();
    const document = await server.call('POST', '/v1/documents', {
      key,
      body: { title: 'Draft', project_id: project.id },
    });
    expect(document.status, document.text).toBe(201);
    expect(document.body.voice_id).toBeNull();
    const chatbot = await server.call('POST', '/v1/chatbots', {
      key,
      body: { name: 'Helper', model: 'sandbox-writer', instructions: 'Answer briefly.', project_id: project.id },
    });
    expect(chatbot.status, chatbot.text).toBe(201);
    expect(chatbot.body.voice_id).toBeNull();
  });

  test('delete answers 204; the project is gone and its name is free again', async () => {
    const { key } = await newWorkspace();
    const project = await create(key, { name: 'Short-lived' });
    const deleted = await server.call('DELETE', `/v1/projects/${project.id}`, { key });
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expectProblem(await server.call('GET', `/v1/projects/${project.id}`, { key }), 404, 'not_found');
    expectProblem(await server.call('DELETE', `/v1/projects/${project.id}`, { key }), 404, 'not_found');
    expect(await listIds(key)).toEqual([]);
    await create(key, { name: 'Short-lived' });
  });

  test('names are unique in the workspace ignoring case: 409 project_name_taken on create and rename', async () => {
    const { key } = await newWorkspace();
    const first = await create(key, { name: 'Spring Campaign' });
    const taken = await server.call('POST', '/v1/projects', { key, body: { name: 'spring campaign' } });
    expectProblem(taken, 409, 'project_name_taken');
    expect(taken.body.detail).toContain(first.id);

    const other = await create(key, { name: 'Autumn' });
    expectProblem(
      await server.call('PATCH', `/v1/projects/${other.id}`, { key, body: { name: 'SPRING CAMPAIGN' } }),
      409,
      'project_name_taken',
    );
    // A project may take its own name in another case.
    const recased = await server.call('PATCH', `/v1/projects/${first.id}`, { key, body: { name: 'spring campaign' } });
    expect(recased.status, recased.text).toBe(200);
    expect(recased.body.name).toBe('spring campaign');

    // Another workspace may use the name.
    const { key: otherKey } = await newWorkspace();
    await create(otherKey, { name: 'Spring Campaign' });
  });

  test('concurrent creations with one name: exactly one succeeds, the others are 409 project_name_taken', async () => {
    const { key } = await newWorkspace();
    const answers = await Promise.all(
      ['Launch', 'launch', 'LAUNCH', 'Launch', 'lAuNcH', 'Launch'].map((name) =>
        server.call('POST', '/v1/projects', { key, body: { name } }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    for (const answer of answers.filter((a) => a.status === 409)) expectProblem(answer, 409, 'project_name_taken');
    expect(await listIds(key)).toHaveLength(1);
  });

  test('concurrent renames to one name: exactly one succeeds', async () => {
    const { key } = await newWorkspace();
    const projects = [
      await create(key, { name: 'A' }),
      await create(key, { name: 'B' }),
      await create(key, { name: 'C' }),
    ];
    const answers = await Promise.all(
      projects.map((p) => server.call('PATCH', `/v1/projects/${p.id}`, { key, body: { name: 'Target' } })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409]);
  });

  test('roles: a viewer reads; an editor creates, updates and deletes', async () => {
    const viewer = await server.createKey('viewer');
    const editor = await server.createKey('editor');
    expectProblem(
      await server.call('POST', '/v1/projects', { key: viewer.secret, body: { name: 'By a viewer' } }),
      403,
      'insufficient_role',
    );
    const project = await create(editor.secret, { name: `By an editor ${++counter}` });
    expect((await server.call('GET', `/v1/projects/${project.id}`, { key: viewer.secret })).status).toBe(200);
    expect((await server.call('GET', '/v1/projects', { key: viewer.secret })).status).toBe(200);
    expectProblem(
      await server.call('PATCH', `/v1/projects/${project.id}`, { key: viewer.secret, body: { name: 'Renamed' } }),
      403,
      'insufficient_role',
    );
    expectProblem(
      await server.call('DELETE', `/v1/projects/${project.id}`, { key: viewer.secret }),
      403,
      'insufficient_role',
    );
    expect(
      (
        await server.call('PATCH', `/v1/projects/${project.id}`, {
          key: editor.secret,
          body: { description: 'By an editor' },
        })
      ).status,
    ).toBe(200);
    expect((await server.call('DELETE', `/v1/projects/${project.id}`, { key: editor.secret })).status).toBe(204);
    expectProblem(await server.call('GET', '/v1/projects', { key: null }), 401, 'unauthenticated');
  });

  test("another workspace's project is 404 for every operation and absent from the list", async () => {
    const a = await newWorkspace();
    const b = await newWorkspace();
    const project = await create(a.key, { name: 'Private to A' });
    expectProblem(await server.call('GET', `/v1/projects/${project.id}`, { key: b.key }), 404, 'not_found');
    expectProblem(
      await server.call('PATCH', `/v1/projects/${project.id}`, { key: b.key, body: { name: 'Taken over' } }),
      404,
      'not_found',
    );
    expectProblem(await server.call('DELETE', `/v1/projects/${project.id}`, { key: b.key }), 404, 'not_found');
    // Unknown here comes before the name rule: a name taken in B does not reveal anything about A's project.
    await create(b.key, { name: 'Taken in B' });
    expectProblem(
      await server.call('PATCH', `/v1/projects/${project.id}`, { key: b.key, body: { name: 'Taken in B' } }),
      404,
      'not_found',
    );
    expect(await listIds(b.key)).toHaveLength(1);
    expect(await listIds(b.key, '&name=private')).toEqual([]);
    const unchanged = await server.call('GET', `/v1/projects/${project.id}`, { key: a.key });
    expect(unchanged.body).toEqual(project);
  });

  test('invalid requests are 422 validation_failed naming the field', async () => {
    const { key } = await newWorkspace();
    const cases: Array<[unknown, string]> = [
      [{}, '/name'],
      [{ name: '' }, '/name'],
      [{ name: ' padded ' }, '/name'],
      [{ name: 'x'.repeat(101) }, '/name'],
      [{ name: 'Bad voice', default_voice_id: 'voice_123' }, '/default_voice_id'],
      [{ name: 'Bad model', default_model: 'GPT 4' }, '/default_model'],
      [{ name: 'Extra', owner: 'me' }, '/owner'],
      [{ name: 'Bad metadata', metadata: { key: 1 } }, '/metadata/key'],
    ];
    for (const [body, pointer] of cases) {
      const answer = await server.call('POST', '/v1/projects', { key, body });
      expectProblem(answer, 422, 'validation_failed');
      expect(
        answer.body.errors.map((e: { pointer: string }) => e.pointer),
        JSON.stringify(body),
      ).toContain(pointer);
    }
    const project = await create(key, { name: 'Valid' });
    expectProblem(
      await server.call('PATCH', `/v1/projects/${project.id}`, { key, body: {} }),
      422,
      'validation_failed',
    );
    expectProblem(
      await server.call('PATCH', `/v1/projects/${project.id}`, { key, body: { name: null } }),
      422,
      'validation_failed',
    );
    expectProblem(
      await server.call('GET', '/v1/projects/doc_01JDB2C3D4E5F6G7H8J9K0M1N2', { key }),
      422,
      'validation_failed',
    );
    expectProblem(await server.call('GET', '/v1/projects?limit=0', { key }), 422, 'validation_failed');
    expectProblem(await server.call('GET', '/v1/projects?name=', { key }), 422, 'validation_failed');
    expectProblem(await server.call('GET', '/v1/projects?archived=true', { key }), 422, 'validation_failed');
  });

  test('Idempotency-Key: the same create is replayed, not repeated; another body is 422 idempotency_key_reused', async () => {
    const { key } = await newWorkspace();
    const headers = { 'Idempotency-Key': `create-project-${++counter}` };
    const first = await server.call('POST', '/v1/projects', { key, body: { name: 'Once' }, headers });
    expect(first.status).toBe(201);
    const again = await server.call('POST', '/v1/projects', { key, body: { name: 'Once' }, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await listIds(key)).toEqual([first.body.id]);
    expectProblem(
      await server.call('POST', '/v1/projects', { key, body: { name: 'Twice' }, headers }),
      422,
      'idempotency_key_reused',
    );
  });

  test('each change writes its audit entry: project.created, project.updated, project.deleted', async () => {
    const { key } = await newWorkspace();
    const project = await create(key, { name: 'Audited' });
    await server.call('PATCH', `/v1/projects/${project.id}`, { key, body: { name: 'Audited twice', metadata: {} } });
    await server.call('DELETE', `/v1/projects/${project.id}`, { key });
    const entries = await auditEntries(key);
    expect(entries.map((e) => [e.action, e.target, e.details])).toEqual([
      [
        'project.deleted',
        { type: 'project', id: project.id, display_name: 'Audited twice' },
        { name: 'Audited twice' },
      ],
      [
        'project.updated',
        { type: 'project', id: project.id, display_name: 'Audited twice' },
        { changed: 'metadata,name', name: 'Audited twice' },
      ],
      ['project.created', { type: 'project', id: project.id, display_name: 'Audited' }, { name: 'Audited' }],
    ]);
    // A refused change writes nothing.
    await create(key, { name: 'Taken' });
    await server.call('POST', '/v1/projects', { key, body: { name: 'taken' } });
    expect((await auditEntries(key)).filter((e) => e.action === 'project.created')).toHaveLength(2);
  });
});

// Idempotency-Key on the real server, on SQLite and PostgreSQL (POST /v1/api-keys and POST /v1/members):
// - same key and same request → the stored answer (status, body, Location) with Idempotent-Replayed: true, and the
//   resource exists once; the first answer says Idempotent-Replayed: false;
// - same key, different request → 422 idempotency_key_reused; a stored 4xx of the handler is replayed too;
// - two identical requests at once → one runs, the other is 409 idempotency_key_in_use or the replay;
// - keys are scoped to the workspace, and to the calling API key's answer (another key cannot replay it);
// - after 24 hours (a ManualClock) the key runs the request again;
// - a request refused by validation stores nothing; a 5xx (a throwing handler, an answer that breaks the contract;
//   through the handlerOverrides test seam) releases the key;
// - the records are rows of idempotency_keys and survive a restart of the server on the same database.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { ManualClock } from '../../src/platform/clock.ts';
import { storedKey } from '../../src/platform/idempotency.ts';
import { type Answer, databaseKinds, freshDatabase, startTestServer, type TestServer } from '../support/server.ts';

const HOUR = 3_600_000;
let counter = 0;
/** A unique Idempotency-Key and a unique member email per use. */
const uniqueKey = (label: string) => `${label}-${process.pid}-${++counter}-${Math.random().toString(36).slice(2)}`;
const uniqueEmail = (label: string) => `${label}-${++counter}@idempotency.example`;

function expectProblem(answer: Answer, status: number, code: string): void {
  expect({ status: answer.status, code: answer.body?.code }).toEqual({ status, code });
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
}

describe.each(databaseKinds)('Idempotency-Key on %s', (kind) => {
  let server: TestServer;
  const clock = new ManualClock('2026-03-01T10:00:00.000Z');

  beforeAll(async () => {
    server = await startTestServer({ database: kind, clock, handlerOverrides: true });
  });
  afterAll(async () => {
    server?.handlerOverrides.clear();
    await server?.close();
  });

  const post = (path: string, body: unknown, idempotencyKey: string, key?: string) =>
    server.call('POST', path, { body, key, headers: { 'Idempotency-Key': idempotencyKey } });

  const keysNamed = async (name: string, workspaceId = server.workspaceId) =>
    server.platform.db
      .selectFrom('api_keys')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .where('name', '=', name)
      .execute();

  const membersWithEmail = async (email: string) =>
    server.platform.db
      .selectFrom('members')
      .innerJoin('users', 'users.id', 'members.user_id')
      .select('members.user_id')
      .where('members.workspace_id', '=', server.workspaceId)
      .where('users.email', '=', email)
      .execute();

  const record = (idempotencyKey: string, workspaceId = server.workspaceId) =>
    server.platform.db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('key', '=', storedKey(idempotencyKey))
      .executeTakeFirst();

  test('the same key and request get the stored answer again, and the key is created once', async () => {
    const key = uniqueKey('create');
    const body = { name: uniqueKey('key-name'), role: 'viewer' };
    const first = await post('/v1/api-keys', body, key);
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBe('false');

    for (let i = 0; i < 2; i++) {
      const again = await post('/v1/api-keys', body, key);
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('location')).toBe(first.headers.get('location'));
      expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
      // A replay is a new request: its own request id.
      expect(again.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    }
    expect(await keysNamed(body.name)).toHaveLength(1);

    const row = await record(key);
    expect(row).toMatchObject({ state: 'completed', response_status: 201 });
    // The stored answer is sealed (it can hold a secret); only the replay, which knows the key, can open it.
    expect(row!.response_body).not.toContain(first.body.id);
  });

  test('the same for members; a request without the key runs every time', async () => {
    const key = uniqueKey('member');
    const body = { email: uniqueEmail('replayed'), role: 'editor' };
    const first = await post('/v1/members', body, key);
    const again = await post('/v1/members', body, key);
    expect([first.status, again.status]).toEqual([201, 201]);
    expect([first.headers.get('idempotent-replayed'), again.headers.get('idempotent-replayed')]).toEqual([
      'false',
      'true',
    ]);
    expect(again.body).toEqual(first.body);
    expect(await membersWithEmail(body.email)).toHaveLength(1);

    const without = await server.call('POST', '/v1/members', { body });
    expectProblem(without, 409, 'member_already_exists');
    expect(without.headers.get('idempotent-replayed')).toBeNull();
  });

  test('the same key with a different request is 422 idempotency_key_reused', async () => {
    const key = uniqueKey('reused');
    const body = { name: uniqueKey('key-name'), role: 'viewer' };
    expect((await post('/v1/api-keys', body, key)).status).toBe(201);
    const differentBody = await post('/v1/api-keys', { ...body, role: 'editor' }, key);
    expectProblem(differentBody, 422, 'idempotency_key_reused');
    expect(differentBody.headers.get('idempotent-replayed')).toBe('false');
    const differentPath = await post('/v1/members', { email: uniqueEmail('other-path'), role: 'viewer' }, key);
    expectProblem(differentPath, 422, 'idempotency_key_reused');
    expect(await keysNamed(body.name)).toHaveLength(1);
  });

  test("another API key of the workspace cannot replay a key's answer", async () => {
    // An admin replaying an owner's "create an owner key" would otherwise get the new owner secret.
    const admin = await server.createKey('admin');
    const key = uniqueKey('owner-key');
    const body = { name: uniqueKey('owner-secret'), role: 'owner' };
    const first = await post('/v1/api-keys', body, key);
    expect(first.status).toBe(201);
    const byAdmin = await post('/v1/api-keys', body, key, admin.secret);
    expectProblem(byAdmin, 422, 'idempotency_key_reused');
    expect(byAdmin.text).not.toContain(first.body.secret);
  });

  test('a 4xx answer of the handler is stored and replayed', async () => {
    const email = uniqueEmail('conflict');
    expect((await server.call('POST', '/v1/members', { body: { email, role: 'viewer' } })).status).toBe(201);
    const key = uniqueKey('conflict');
    const first = await post('/v1/members', { email, role: 'viewer' }, key);
    expectProblem(first, 409, 'member_already_exists');
    expect(first.headers.get('idempotent-replayed')).toBe('false');
    const again = await post('/v1/members', { email, role: 'viewer' }, key);
    expectProblem(again, 409, 'member_already_exists');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await record(key)).toMatchObject({ state: 'completed', response_status: 409 });
  });

  test('two identical requests at once: exactly one runs, the other is 409 idempotency_key_in_use or the replay', async () => {
    for (let round = 0; round < 5; round++) {
      const key = uniqueKey('race');
      const body = { email: uniqueEmail('race'), role: 'viewer' };
      const answers = await Promise.all([post('/v1/members', body, key), post('/v1/members', body, key)]);
      const outcomes = answers
        .map((a) => `${a.status} ${a.body.code ?? ''} ${a.headers.get('idempotent-replayed')}`.replace(/ {2}/, ' '))
        .sort();
      expect([
        ['201 false', '201 true'],
        ['201 false', '409 idempotency_key_in_use false'],
      ]).toContainEqual(outcomes);
      const inUse = answers.find((a) => a.status === 409);
      if (inUse) {
        expectProblem(inUse, 409, 'idempotency_key_in_use');
        expect(Number(inUse.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
      expect(await membersWithEmail(body.email)).toHaveLength(1);
    }
  });

  test('keys are scoped to the workspace: the same key in two workspaces runs in both', async () => {
    const other = await createWorkspace(server.platform.db, {
      name: 'Other workspace',
      region: 'eu',
      now: clock.now(),
    });
    const key = uniqueKey('scoped');
    const body = { name: uniqueKey('scoped-name'), role: 'viewer' };
    const here = await post('/v1/api-keys', body, key);
    const there = await post('/v1/api-keys', body, key, other.secret);
    expect([here.status, there.status]).toEqual([201, 201]);
    expect([here.headers.get('idempotent-replayed'), there.headers.get('idempotent-replayed')]).toEqual([
      'false',
      'false',
    ]);
    expect(there.body.id).not.toBe(here.body.id);
    expect(await keysNamed(body.name)).toHaveLength(1);
    expect(await keysNamed(body.name, other.workspace.id)).toHaveLength(1);
  });

  test('after 24 hours the key runs the request again', async () => {
    const key = uniqueKey('expiry');
    const body = { name: uniqueKey('expiry-name'), role: 'viewer' };
    const first = await post('/v1/api-keys', body, key);
    expect(first.status).toBe(201);
    clock.advance(24 * HOUR - 1);
    const stillStored = await post('/v1/api-keys', body, key);
    expect(stillStored.headers.get('idempotent-replayed')).toBe('true');
    expect(stillStored.body.id).toBe(first.body.id);
    clock.advance(1);
    const after = await post('/v1/api-keys', body, key);
    expect(after.status).toBe(201);
    expect(after.headers.get('idempotent-replayed')).toBe('false');
    expect(after.body.id).not.toBe(first.body.id);
    expect(await keysNamed(body.name)).toHaveLength(2);
    // And with a different body too: the old record is gone, not "reused".
    clock.advance(24 * HOUR);
    const otherBody = await post('/v1/api-keys', { ...body, role: 'editor' }, key);
    expect(otherBody.status).toBe(201);
    expect(otherBody.headers.get('idempotent-replayed')).toBe('false');
  });

  test('a request refused by validation stores nothing; the corrected retry with the same key runs', async () => {
    const key = uniqueKey('invalid');
    const name = uniqueKey('invalid-name');
    const refused = await post('/v1/api-keys', { name, role: 'emperor' }, key);
    expectProblem(refused, 422, 'validation_failed');
    expect(await record(key)).toBeUndefined();
    const badJson = await server.call('POST', '/v1/api-keys', {
      rawBody: '{',
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key },
    });
    expectProblem(badJson, 400, 'invalid_json');
    expect(await record(key)).toBeUndefined();
    const corrected = await post('/v1/api-keys', { name, role: 'viewer' }, key);
    expect(corrected.status).toBe(201);
    expect(corrected.headers.get('idempotent-replayed')).toBe('false');
  });

  test('a handler that fails (500) releases the key: the retry runs', async () => {
    const key = uniqueKey('failed');
    const body = { name: uniqueKey('failed-name'), role: 'viewer' };
    let calls = 0;
    server.handlerOverrides.set('createApiKey', async () => {
      calls++;
      throw new Error('the database went away');
    });
    try {
      const failed = await post('/v1/api-keys', body, key);
      expectProblem(failed, 500, 'internal_error');
      expect(await record(key)).toBeUndefined();
      expectProblem(await post('/v1/api-keys', body, key), 500, 'internal_error');
      expect(calls).toBe(2);
    } finally {
      server.handlerOverrides.delete('createApiKey');
    }
    const retried = await post('/v1/api-keys', body, key);
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBe('false');
    expect(await keysNamed(body.name)).toHaveLength(1);
  });

  test('an answer that breaks the contract (500 response_validation_failed) releases the key: the retry runs', async () => {
    const key = uniqueKey('broken');
    const body = { name: uniqueKey('broken-name'), role: 'viewer' };
    server.handlerOverrides.set('createApiKey', async () => ({
      status: 201,
      contentType: 'application/json',
      body: { id: 'not an api key' },
    }));
    try {
      expectProblem(await post('/v1/api-keys', body, key), 500, 'response_validation_failed');
      expect(server.responseValidationErrors).toHaveLength(1);
      expect(await record(key)).toBeUndefined();
    } finally {
      server.handlerOverrides.delete('createApiKey');
      server.responseValidationErrors.length = 0;
    }
    const retried = await post('/v1/api-keys', body, key);
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBe('false');
  });

  test('Idempotency-Key is ignored on GET and DELETE (no Idempotent-Replayed)', async () => {
    const get = await server.call('GET', '/v1/workspace', { headers: { 'Idempotency-Key': uniqueKey('get') } });
    expect(get.status).toBe(200);
    expect(get.headers.get('idempotent-replayed')).toBeNull();
    const { id } = await server.createKey('viewer');
    const revoke = await server.call('DELETE', `/v1/api-keys/${id}`, {
      headers: { 'Idempotency-Key': uniqueKey('delete') },
    });
    expect(revoke.status).toBe(200);
    expect(revoke.headers.get('idempotent-replayed')).toBeNull();
  });
});

describe.each(databaseKinds)('Idempotency-Key records on %s', (kind) => {
  test('survive a restart of the server on the same database', async () => {
    const database = await freshDatabase(kind);
    try {
      const first = await startTestServer({ databaseUrl: database.url });
      const key = uniqueKey('durable');
      const body = { name: 'durable key', role: 'viewer' };
      let original: Answer;
      try {
        original = await first.call('POST', '/v1/api-keys', { body, headers: { 'Idempotency-Key': key } });
        expect(original.status).toBe(201);
      } finally {
        await first.close();
      }

      const second = await startTestServer({ databaseUrl: database.url, workspace: false });
      try {
        const replay = await second.call('POST', '/v1/api-keys', {
          key: first.ownerKey,
          body,
          headers: { 'Idempotency-Key': key },
        });
        expect(replay.status).toBe(201);
        expect(replay.headers.get('idempotent-replayed')).toBe('true');
        expect(replay.body).toEqual(original.body);
        const keys = await second.platform.db
          .selectFrom('api_keys')
          .select('id')
          .where('name', '=', 'durable key')
          .execute();
        expect(keys).toHaveLength(1);
      } finally {
        await second.close();
      }
    } finally {
      await database.drop();
    }
  });
});

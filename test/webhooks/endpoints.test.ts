// The webhook endpoint API against the real server on SQLite and PostgreSQL: create (the secret shown once, the
// defaults), list (newest first, pages, the `enabled` filter), get, update (each field, the URL checked again,
// `metadata` replaced), delete (its deliveries stay readable), the limit of 20 endpoints (also under concurrent
// creations), roles and workspaces, secret rotation's grace period, the audit log, disabling (pending deliveries end
// `failed`, no new ones) and Idempotency-Key on create. Delivery itself is tested elsewhere.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { ManualClock } from '../../src/platform/clock.ts';
import { eventually, expectProblem } from '../support/expect.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';

const HOUR_MS = 3600_000;
const ENDPOINT_ID = /^whe_[0-9A-HJKMNP-TV-Z]{26}$/;
const SECRET = /^whsec_[A-Za-z0-9_-]{43}$/;

describe.each(databaseKinds)('webhook endpoints on %s', (kind) => {
  let server: TestServer;
  let receiver: Receiver;
  let failingReceiver: Receiver;
  const clock = new ManualClock('2026-11-20T10:00:00.000Z');
  let counter = 0;

  beforeAll(async () => {
    receiver = await startReceiver();
    failingReceiver = await startReceiver();
    failingReceiver.respond = () => ({ status: 500, body: 'down' });
    server = await startTestServer({ database: kind, clock, env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } });
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
    await failingReceiver?.close();
  });

  /** A workspace of its own, so that endpoint counts and lists of one test are not another's. */
  async function newWorkspace() {
    const created = await createWorkspace(server.platform.db, {
      name: `Workspace ${++counter}`,
      region: server.platform.config.region,
      now: clock.now(),
    });
    return { key: created.secret, id: created.workspace.id, keyId: created.apiKey.id };
  }

  async function create(key: string, body: Record<string, unknown> = {}) {
    const answer = await server.call('POST', '/v1/webhooks/endpoints', {
      key,
      body: { url: `${receiver.url}/hook`, event_types: ['workspace.member.*'], ...body },
    });
    expect(answer.status, answer.text).toBe(201);
    return answer.body as { id: string; secret: string; [field: string]: unknown };
  }

  async function listAll(key: string, query = '') {
    const answer = await server.call('GET', `/v1/webhooks/endpoints?limit=100${query}`, { key });
    expect(answer.status).toBe(200);
    return answer.body.data as Array<{ id: string; enabled: boolean }>;
  }

  async function addMember(key: string) {
    const answer = await server.call('POST', '/v1/members', {
      key,
      body: { email: `person-${++counter}@endpoints.example`, role: 'viewer' },
    });
    expect(answer.status).toBe(201);
  }

  test('create answers 201 with a Location, the secret once, and the defaults', async () => {
    const { key } = await newWorkspace();
    const url = `${receiver.url}/hook`;
    const answer = await server.call('POST', '/v1/webhooks/endpoints', {
      key,
      body: { url, event_types: ['workspace.*', 'chat.thread.deleted'] },
    });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({
      id: expect.stringMatching(ENDPOINT_ID),
      object: 'webhook_endpoint',
      created_at: clock.now().toISOString(),
      updated_at: clock.now().toISOString(),
      url,
      description: null,
      event_types: ['workspace.*', 'chat.thread.deleted'],
      enabled: true,
      metadata: {},
      previous_secret_expires_at: null,
      secret: expect.stringMatching(SECRET),
    });
    expect(answer.headers.get('location')).toBe(`/v1/webhooks/endpoints/${answer.body.id}`);

    const read = await server.call('GET', answer.headers.get('location')!, { key });
    expect(read.status).toBe(200);
    const { secret: _secret, ...withoutSecret } = answer.body;
    expect(read.body).toEqual(withoutSecret);
    expect('secret' in read.body).toBe(false);
  });

  test('each endpoint gets its own secret', async () => {
    const { key } = await newWorkspace();
    const secrets = [await create(key), await create(key), await create(key)].map((e) => e.secret);
    expect(new Set(secrets).size).toBe(3);
  });

  test('create takes description, enabled and metadata as given', async () => {
    const { key } = await newWorkspace();
    const endpoint = await create(key, {
      description: 'CRM sync',
      enabled: false,
      metadata: { team: 'crm', env: 'staging' },
    });
    expect(endpoint).toMatchObject({
      description: 'CRM sync',
      enabled: false,
      metadata: { team: 'crm', env: 'staging' },
    });
  });

  test('the list is newest first, pages with limit=1 through next_cursor and Link, and filters on enabled', async () => {
    const { key } = await newWorkspace();
    const first = await create(key);
    clock.advance(1);
    const second = await create(key, { enabled: false });
    clock.advance(1);
    const third = await create(key);

    expect((await listAll(key)).map((e) => e.id)).toEqual([third.id, second.id, first.id]);
    expect((await listAll(key)).some((e) => 'secret' in e)).toBe(false);

    const pages: string[][] = [];
    let path: string | null = '/v1/webhooks/endpoints?limit=1';
    for (let i = 0; path && i < 10; i++) {
      const page: Answer = await server.call('GET', path, { key });
      expect(page.status).toBe(200);
      pages.push(page.body.data.map((e: { id: string }) => e.id));
      const link = page.headers.get('link');
      if (page.body.next_cursor === null) {
        expect(link).toBeNull();
        path = null;
      } else {
        const next = new URL(/^<([^>]+)>; rel="next"$/.exec(link ?? '')![1]!);
        expect(next.origin).toBe(server.url);
        expect(next.searchParams.get('cursor')).toBe(page.body.next_cursor);
        expect(next.searchParams.get('limit')).toBe('1');
        path = next.pathname + next.search;
      }
    }
    expect(pages).toEqual([[third.id], [second.id], [first.id]]);

    expect((await listAll(key, '&enabled=false')).map((e) => e.id)).toEqual([second.id]);
    expect((await listAll(key, '&enabled=true')).map((e) => e.id)).toEqual([third.id, first.id]);
  });

  test('an unknown endpoint id is 404 not_found on every operation', async () => {
    const { key } = await newWorkspace();
    const unknown = 'whe_01JD0A1B2C3D4E5F6G7H8J9K0M';
    expectProblem(await server.call('GET', `/v1/webhooks/endpoints/${unknown}`, { key }), 404, 'not_found');
    expectProblem(
      await server.call('PATCH', `/v1/webhooks/endpoints/${unknown}`, { key, body: { enabled: false } }),
      404,
      'not_found',
    );
    expectProblem(await server.call('DELETE', `/v1/webhooks/endpoints/${unknown}`, { key }), 404, 'not_found');
    expectProblem(
      await server.call('POST', `/v1/webhooks/endpoints/${unknown}/rotate-secret`, { key }),
      404,
      'not_found',
    );
  });

  test('PATCH changes each field it is given and keeps the others; the secret does not change', async () => {
    const { key } = await newWorkspace();
    const created = await create(key, { description: 'before', metadata: { a: '1', b: '2' } });
    const path = `/v1/webhooks/endpoints/${created.id}`;
    let expected: Record<string, unknown> = { ...created };
    delete expected.secret;

    const changes: Array<Record<string, unknown>> = [
      { url: `${receiver.url}/other-hook` },
      { event_types: ['*'] },
      { description: 'after' },
      { description: null },
      { enabled: false },
      { enabled: true },
      // The map is replaced, not merged: `a` and `b` go.
      { metadata: { c: '3' } },
      { metadata: {} },
    ];
    for (const change of changes) {
      clock.advance(1000);
      const answer = await server.call('PATCH', path, { key, body: change });
      expect(answer.status, JSON.stringify(change)).toBe(200);
      expected = { ...expected, ...change, updated_at: clock.now().toISOString() };
      expect(answer.body).toEqual(expected);
      expect((await server.call('GET', path, { key })).body).toEqual(expected);
    }
    expect(expected.created_at).toBe(created.created_at);

    const row = await server.platform.db
      .selectFrom('webhook_endpoints')
      .select('secret')
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow();
    expect(row.secret).toBe(created.secret);
  });

  test('PATCH checks a new url like create does, and an empty body is 422 validation_failed', async () => {
    const { key } = await newWorkspace();
    const created = await create(key);
    const path = `/v1/webhooks/endpoints/${created.id}`;
    for (const url of ['https://169.254.169.254/latest/meta-data', 'ftp://files.example/hook']) {
      const refused = await server.call('PATCH', path, { key, body: { url } });
      expectProblem(refused, 422, 'invalid_webhook_url');
      expect(refused.body.errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/url']);
    }
    expectProblem(await server.call('PATCH', path, { key, body: {} }), 422, 'validation_failed');
    expect((await server.call('GET', path, { key })).body.url).toBe(created.url);
  });

  test('delete answers 204, then the endpoint is 404; its deliveries stay listable by endpoint_id', async () => {
    const { key } = await newWorkspace();
    const endpoint = await create(key);
    const received = receiver.requests.length;
    await addMember(key);
    await receiver.waitFor(received + 1, 10_000);
    const before = await server.call('GET', `/v1/webhooks/deliveries?endpoint_id=${endpoint.id}`, { key });
    expect(before.body.data.length).toBe(1);

    const deleted = await server.call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { key });
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expectProblem(await server.call('GET', `/v1/webhooks/endpoints/${endpoint.id}`, { key }), 404, 'not_found');
    expectProblem(await server.call('DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, { key }), 404, 'not_found');
    expect(await listAll(key)).toEqual([]);

    const after = await server.call('GET', `/v1/webhooks/deliveries?endpoint_id=${endpoint.id}`, { key });
    expect(after.status).toBe(200);
    expect(after.body.data.map((d: { id: string; endpoint_id: string }) => [d.id, d.endpoint_id])).toEqual([
      [before.body.data[0].id, endpoint.id],
    ]);
    const delivery = await server.call('GET', `/v1/webhooks/deliveries/${before.body.data[0].id}`, { key });
    expect(delivery.status).toBe(200);
    expect(delivery.body.endpoint_id).toBe(endpoint.id);
  });

  test('the 21st endpoint is 422 webhook_endpoint_limit_reached; deleting one makes room', async () => {
    const { key } = await newWorkspace();
    const created = [];
    for (let i = 0; i < 20; i++) created.push(await create(key));
    expectProblem(
      await server.call('POST', '/v1/webhooks/endpoints', {
        key,
        body: { url: `${receiver.url}/hook`, event_types: ['*'] },
      }),
      422,
      'webhook_endpoint_limit_reached',
    );
    expect((await listAll(key)).length).toBe(20);
    expect((await server.call('DELETE', `/v1/webhooks/endpoints/${created[0]!.id}`, { key })).status).toBe(204);
    await create(key);
    expect((await listAll(key)).length).toBe(20);
  });

  test('25 concurrent creations make exactly 20 endpoints', async () => {
    const { key } = await newWorkspace();
    const answers = await Promise.all(
      Array.from({ length: 25 }, () =>
        server.call('POST', '/v1/webhooks/endpoints', {
          key,
          body: { url: `${receiver.url}/hook`, event_types: ['*'] },
        }),
      ),
    );
    expect(answers.filter((a) => a.status === 201).length).toBe(20);
    const refused = answers.filter((a) => a.status !== 201);
    expect(refused.map((a) => [a.status, a.body.code])).toEqual(Array(5).fill([422, 'webhook_endpoint_limit_reached']));
    const listed = await listAll(key);
    expect(listed.length).toBe(20);
    expect(new Set(listed.map((e) => e.id))).toEqual(
      new Set(answers.filter((a) => a.status === 201).map((a) => a.body.id)),
    );
  });

  test('editor and viewer keys are 403 insufficient_role on every endpoint operation; an admin key may do them all', async () => {
    const endpoint = await create(server.ownerKey);
    const path = `/v1/webhooks/endpoints/${endpoint.id}`;
    const operations: Array<[string, string, unknown]> = [
      ['GET', '/v1/webhooks/endpoints', undefined],
      ['POST', '/v1/webhooks/endpoints', { url: `${receiver.url}/hook`, event_types: ['*'] }],
      ['GET', path, undefined],
      ['PATCH', path, { description: 'changed' }],
      ['POST', `${path}/rotate-secret`, undefined],
      ['DELETE', path, undefined],
    ];
    for (const role of ['editor', 'viewer'] as const) {
      const { secret } = await server.createKey(role);
      for (const [method, target, body] of operations) {
        expectProblem(await server.call(method, target, { key: secret, body }), 403, 'insufficient_role');
      }
    }
    expect((await server.call('GET', path)).body.description).toBeNull();

    const admin = await server.createKey('admin');
    const expectedStatus = [200, 201, 200, 200, 200, 204];
    for (const [i, [method, target, body]] of operations.entries()) {
      const answer = await server.call(method, target, { key: admin.secret, body });
      expect(answer.status, `${method} ${target}`).toBe(expectedStatus[i]);
    }
    expectProblem(await server.call('GET', path), 404, 'not_found');
  });

  test("another workspace's key gets 404 not_found for this workspace's endpoint, and does not list it", async () => {
    const endpoint = await create(server.ownerKey);
    const path = `/v1/webhooks/endpoints/${endpoint.id}`;
    const other = await newWorkspace();
    expectProblem(await server.call('GET', path, { key: other.key }), 404, 'not_found');
    expectProblem(await server.call('PATCH', path, { key: other.key, body: { enabled: false } }), 404, 'not_found');
    expectProblem(await server.call('POST', `${path}/rotate-secret`, { key: other.key }), 404, 'not_found');
    expectProblem(await server.call('DELETE', path, { key: other.key }), 404, 'not_found');
    expect(await listAll(other.key)).toEqual([]);
    expect((await server.call('GET', path)).body).toMatchObject({ id: endpoint.id, enabled: true });
  });

  test('rotate-secret returns a new secret; the previous one is shown as expiring 24 h later, then null', async () => {
    const { key } = await newWorkspace();
    const endpoint = await create(key);
    const path = `/v1/webhooks/endpoints/${endpoint.id}`;
    clock.advance(5000);
    const rotatedAt = clock.now();
    const rotated = await server.call('POST', `${path}/rotate-secret`, { key });
    expect(rotated.status).toBe(200);
    const expiresAt = new Date(rotatedAt.getTime() + 24 * HOUR_MS).toISOString();
    expect(rotated.body).toMatchObject({
      id: endpoint.id,
      secret: expect.stringMatching(SECRET),
      previous_secret_expires_at: expiresAt,
      updated_at: rotatedAt.toISOString(),
    });
    expect(rotated.body.secret).not.toBe(endpoint.secret);

    const read = await server.call('GET', path, { key });
    expect(read.body.previous_secret_expires_at).toBe(expiresAt);
    expect('secret' in read.body).toBe(false);

    clock.advance(24 * HOUR_MS - 1);
    expect((await server.call('GET', path, { key })).body.previous_secret_expires_at).toBe(expiresAt);
    clock.advance(1);
    expect((await server.call('GET', path, { key })).body.previous_secret_expires_at).toBeNull();
    expect(
      (await listAll(key)).map((e) => (e as { previous_secret_expires_at?: unknown }).previous_secret_expires_at),
    ).toEqual([null]);
  });

  test('rotating again replaces the grace period: the expiry moves to 24 h after the second rotation', async () => {
    const { key } = await newWorkspace();
    const endpoint = await create(key);
    const path = `/v1/webhooks/endpoints/${endpoint.id}/rotate-secret`;
    const first = await server.call('POST', path, { key });
    clock.advance(HOUR_MS);
    const second = await server.call('POST', path, { key });
    expect(second.status).toBe(200);
    expect(new Set([endpoint.secret, first.body.secret, second.body.secret]).size).toBe(3);
    expect(second.body.previous_secret_expires_at).toBe(new Date(clock.now().getTime() + 24 * HOUR_MS).toISOString());
    const row = await server.platform.db
      .selectFrom('webhook_endpoints')
      .select(['secret', 'previous_secret'])
      .where('id', '=', endpoint.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ secret: second.body.secret, previous_secret: first.body.secret });
  });

  test('create, update, rotate and delete write webhook_endpoint.* audit entries', async () => {
    const { key, keyId } = await newWorkspace();
    const endpoint = await create(key);
    const path = `/v1/webhooks/endpoints/${endpoint.id}`;
    expect((await server.call('PATCH', path, { key, body: { enabled: false, description: 'paused' } })).status).toBe(
      200,
    );
    expect((await server.call('POST', `${path}/rotate-secret`, { key })).status).toBe(200);
    expect((await server.call('DELETE', path, { key })).status).toBe(204);

    const audit = await server.call('GET', '/v1/audit-logs?action=webhook_endpoint.*&limit=100', { key });
    expect(audit.status).toBe(200);
    const entries = audit.body.data as Array<{
      action: string;
      target: unknown;
      actor: { api_key_id: string };
      details: Record<string, unknown>;
    }>;
    expect(entries.map((e) => e.action)).toEqual([
      'webhook_endpoint.deleted',
      'webhook_endpoint.secret_rotated',
      'webhook_endpoint.updated',
      'webhook_endpoint.created',
    ]);
    for (const entry of entries) {
      expect(entry.target).toEqual({ type: 'webhook_endpoint', id: endpoint.id, display_name: endpoint.url });
      expect(entry.actor.api_key_id).toBe(keyId);
      expect(JSON.stringify(entry.details)).not.toContain('whsec_');
    }
    expect(entries[3]!.details).toEqual({ url: endpoint.url });
    expect(entries[2]!.details).toMatchObject({ changed: 'description,enabled', enabled: false });

    const exact = await server.call('GET', '/v1/audit-logs?action=webhook_endpoint.secret_rotated', { key });
    expect(exact.body.data.map((e: { action: string }) => e.action)).toEqual(['webhook_endpoint.secret_rotated']);
  });

  test('disabling an endpoint fails its pending delivery and stops new ones', async () => {
    const { key } = await newWorkspace();
    const endpoint = await create(key, { url: `${failingReceiver.url}/hook` });
    const received = failingReceiver.requests.length;
    await addMember(key);
    await failingReceiver.waitFor(received + 1, 10_000);

    const list = await server.call('GET', `/v1/webhooks/deliveries?endpoint_id=${endpoint.id}`, { key });
    expect(list.body.data.length).toBe(1);
    const deliveryPath = `/v1/webhooks/deliveries/${list.body.data[0].id}`;
    // The clock stands still, so the retry (10 s later) never falls due: the delivery stays pending.
    const pending = await eventually(
      () => server.call('GET', deliveryPath, { key }),
      (answer) => answer.body.attempts?.length === 1,
    );
    expect(pending.body).toMatchObject({
      status: 'pending',
      attempt_count: 1,
      last_response_status_code: 500,
      next_attempt_at: expect.any(String),
    });
    expect(pending.body.attempts[0]).toMatchObject({ number: 1, status: 'failed', response_status_code: 500 });

    const disabled = await server.call('PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, {
      key,
      body: { enabled: false },
    });
    expect(disabled.status).toBe(200);
    expect(disabled.body.enabled).toBe(false);
    const failed = await server.call('GET', deliveryPath, { key });
    expect(failed.body).toMatchObject({ status: 'failed', next_attempt_at: null, attempt_count: 1 });

    await addMember(key);
    const after = await server.call('GET', `/v1/webhooks/deliveries?endpoint_id=${endpoint.id}`, { key });
    expect(after.body.data.map((d: { id: string }) => d.id)).toEqual([list.body.data[0].id]);
    const events = await server.call('GET', '/v1/events?type=workspace.member.added', { key });
    expect(events.body.data.length).toBe(2);
  });

  test('an Idempotency-Key replay of create returns the same endpoint and secret, and creates one endpoint', async () => {
    const { key } = await newWorkspace();
    const body = { url: `${receiver.url}/hook`, event_types: ['*'], description: 'idempotent' };
    const headers = { 'Idempotency-Key': `create-endpoint-${kind}-${++counter}` };
    const first = await server.call('POST', '/v1/webhooks/endpoints', { key, body, headers });
    const again = await server.call('POST', '/v1/webhooks/endpoints', { key, body, headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(again.body.secret).toMatch(SECRET);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect((await listAll(key)).map((e) => e.id)).toEqual([first.body.id]);
  });
});

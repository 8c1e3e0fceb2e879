// The audit log and the request log of a workspace, against the real server on SQLite and PostgreSQL.
// Audit: every key and member change is an entry naming the acting key (id, name, role), the target, the details,
// the client's IP and user agent and the X-Request-Id of the request that made it; the filters select by action
// (exact or `resource.*`), actor, target and time. Request log: every request made with a key of the workspace —
// successes, 4xx answers, a refused revoked key — is a row with the X-Request-Id as its id and no secret anywhere;
// requests without a key of the workspace are not logged; the filters select by key, status (code or class),
// method, path prefix and time; a next-page Link keeps the filters in a form the API accepts back (`api_key.*`).
// A ManualClock gives each phase its own instant. Query values are sent percent-encoded (see `q`).

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { ManualClock } from '../../src/platform/clock.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';

const requestIdOf = (answer: Answer) => answer.headers.get('x-request-id')!;
/**
 * A query value percent-encoded as the contract requires: its parameters do not allow reserved characters, so `:`,
 * `/` and `*` must be encoded too (encodeURIComponent leaves `*` as it is).
 */
const q = (value: string) =>
  encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

interface AuditEntry {
  id: string;
  action: string;
  actor: { type: string; api_key_id: string | null; api_key_name: string | null; role: string | null };
  target: { type: string; id: string; display_name: string | null };
  details: Record<string, unknown>;
  ip: string | null;
  user_agent: string | null;
  request_id: string | null;
  created_at: string;
}

type RequestLogEntry = components['schemas']['RequestLogEntry'];

describe.each(databaseKinds)('logs on %s', (kind) => {
  let server: TestServer;
  const clock = new ManualClock();

  beforeAll(async () => {
    server = await startTestServer({ database: kind, clock });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Every item of a list, following next_cursor (bounded). */
  async function listAll<T>(path: string, key?: string): Promise<T[]> {
    const items: T[] = [];
    let url = `${path}${path.includes('?') ? '&' : '?'}limit=100`;
    for (let page = 0; page < 50; page++) {
      const answer = await server.call('GET', url, { key });
      expect({ url, status: answer.status, problem: answer.status === 200 ? undefined : answer.body }).toEqual({
        url,
        status: 200,
        problem: undefined,
      });
      items.push(...(answer.body.data as T[]));
      if (!answer.body.next_cursor) return items;
      const next = new URL(/^<([^>]+)>; rel="next"$/.exec(answer.headers.get('link') ?? '')![1]!);
      url = next.pathname + next.search;
    }
    throw new Error(`more than 50 pages at ${path}`);
  }

  describe('audit log', () => {
    const agent = 'audit-tests/2.0 (+https://example.test)';
    let admin: { id: string; secret: string };
    let changes: {
      created: { answer: Answer; id: string; secret: string };
      rotated: Answer;
      revoked: Answer;
      added: Answer;
      removed: Answer;
    };
    const instants: string[] = [];

    beforeAll(async () => {
      const created = await server.call('POST', '/v1/api-keys', { body: { name: 'Audit admin', role: 'admin' } });
      admin = { id: created.body.id, secret: created.body.secret };
      const as = { key: admin.secret, headers: { 'User-Agent': agent } };

      clock.advance(60_000);
      instants.push(clock.now().toISOString());
      const expiresAt = new Date(clock.now().getTime() + 30 * 86_400_000).toISOString();
      const keyAnswer = await server.call('POST', '/v1/api-keys', {
        ...as,
        body: { name: 'Zapier integration', role: 'editor', expires_at: expiresAt },
      });

      clock.advance(60_000);
      instants.push(clock.now().toISOString());
      const rotated = await server.call('POST', `/v1/api-keys/${keyAnswer.body.id}/rotate`, as);

      clock.advance(60_000);
      instants.push(clock.now().toISOString());
      const revoked = await server.call('DELETE', `/v1/api-keys/${keyAnswer.body.id}`, as);

      clock.advance(60_000);
      instants.push(clock.now().toISOString());
      const added = await server.call('POST', '/v1/members', {
        ...as,
        body: { email: 'Lucas.Martin@Northwind.example', role: 'editor' },
      });

      clock.advance(60_000);
      instants.push(clock.now().toISOString());
      const removed = await server.call('DELETE', `/v1/members/${added.body.id}`, as);

      expect([keyAnswer.status, rotated.status, revoked.status, added.status, removed.status]).toEqual([
        201, 200, 200, 201, 204,
      ]);
      changes = {
        created: { answer: keyAnswer, id: keyAnswer.body.id, secret: keyAnswer.body.secret },
        rotated,
        revoked,
        added,
        removed,
      };
      clock.advance(60_000);
    });

    test('each change is an entry with the acting key, target, details, IP, user agent and request id', async () => {
      const entries = await listAll<AuditEntry>(`/v1/audit-logs?actor_api_key_id=${admin.id}`);
      const actor = { type: 'api_key', api_key_id: admin.id, api_key_name: 'Audit admin', role: 'admin' };
      const keyTarget = { type: 'api_key', id: changes.created.id, display_name: 'Zapier integration' };
      const memberTarget = {
        type: 'member',
        id: changes.added.body.id,
        display_name: 'lucas.martin@northwind.example',
      };
      const common = { ip: '127.0.0.1', user_agent: agent };
      // Newest first.
      expect(entries.map(({ id: _id, ...entry }) => entry)).toEqual([
        {
          ...common,
          object: 'audit_log_entry',
          action: 'member.removed',
          actor,
          target: memberTarget,
          details: { email: 'lucas.martin@northwind.example', role: 'editor' },
          request_id: requestIdOf(changes.removed),
          created_at: instants[4],
        },
        {
          ...common,
          object: 'audit_log_entry',
          action: 'member.added',
          actor,
          target: memberTarget,
          details: { email: 'lucas.martin@northwind.example', role: 'editor' },
          request_id: requestIdOf(changes.added),
          created_at: instants[3],
        },
        {
          ...common,
          object: 'audit_log_entry',
          action: 'api_key.revoked',
          actor,
          target: keyTarget,
          details: {},
          request_id: requestIdOf(changes.revoked),
          created_at: instants[2],
        },
        {
          ...common,
          object: 'audit_log_entry',
          action: 'api_key.rotated',
          actor,
          target: keyTarget,
          details: { previous_secret_expires_at: changes.rotated.body.previous_secret_expires_at },
          request_id: requestIdOf(changes.rotated),
          created_at: instants[1],
        },
        {
          ...common,
          object: 'audit_log_entry',
          action: 'api_key.created',
          actor,
          target: keyTarget,
          details: { name: 'Zapier integration', role: 'editor', expires_at: changes.created.answer.body.expires_at },
          request_id: requestIdOf(changes.created.answer),
          created_at: instants[0],
        },
      ]);
      for (const entry of entries) expect(entry.id).toMatch(/^aud_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(changes.rotated.body.previous_secret_expires_at).toBe(
        new Date(Date.parse(instants[1]!) + 24 * 3_600_000).toISOString(),
      );
    });

    test('no entry holds a secret', async () => {
      const all = await server.call('GET', '/v1/audit-logs?limit=100');
      for (const secret of [
        changes.created.secret,
        changes.rotated.body.secret as string,
        admin.secret,
        server.ownerKey,
      ]) {
        expect(all.text).not.toContain(secret);
      }
    });

    test('the action filter matches an exact action or every action of a resource', async () => {
      const actions = async (filter: string) =>
        (await listAll<AuditEntry>(`/v1/audit-logs?actor_api_key_id=${admin.id}&action=${q(filter)}`)).map(
          (e) => e.action,
        );
      expect(await actions('api_key.created')).toEqual(['api_key.created']);
      expect(await actions('api_key.*')).toEqual(['api_key.revoked', 'api_key.rotated', 'api_key.created']);
      expect(await actions('member.*')).toEqual(['member.removed', 'member.added']);
      expect(await actions('member.added')).toEqual(['member.added']);
      expect(await actions('api_key')).toEqual([]);
      expect(await actions('api_key.create')).toEqual([]);
      // The owner key's key creations (the Audit admin key itself) are api_key.created too.
      const everyCreation = await listAll<AuditEntry>('/v1/audit-logs?action=api_key.created');
      expect(everyCreation.map((e) => e.target.id)).toEqual(expect.arrayContaining([admin.id, changes.created.id]));
      expect(everyCreation.every((e) => e.action === 'api_key.created')).toBe(true);
    });

    test('the actor and target filters select the changes made by a key and made to a resource', async () => {
      const byOwner = await listAll<AuditEntry>(`/v1/audit-logs?actor_api_key_id=${server.ownerKeyId}`);
      expect(byOwner.length).toBeGreaterThan(0);
      expect(byOwner.every((e) => e.actor.api_key_id === server.ownerKeyId)).toBe(true);
      expect(byOwner.map((e) => e.target.id)).toContain(admin.id);

      const toKey = await listAll<AuditEntry>(`/v1/audit-logs?target_id=${changes.created.id}`);
      expect(toKey.map((e) => e.action)).toEqual(['api_key.revoked', 'api_key.rotated', 'api_key.created']);
      const toMember = await listAll<AuditEntry>(
        `/v1/audit-logs?target_id=${changes.added.body.id}&actor_api_key_id=${admin.id}`,
      );
      expect(toMember.map((e) => e.action)).toEqual(['member.removed', 'member.added']);
      expect(
        await listAll<AuditEntry>(
          `/v1/audit-logs?target_id=${changes.created.id}&actor_api_key_id=${server.ownerKeyId}`,
        ),
      ).toEqual([]);
    });

    test('created_after is inclusive, created_before exclusive, and both accept any RFC 3339 offset', async () => {
      const actions = async (query: string) =>
        (await listAll<AuditEntry>(`/v1/audit-logs?actor_api_key_id=${admin.id}&${query}`)).map((e) => e.action);
      expect(await actions(`created_after=${q(instants[2]!)}`)).toEqual([
        'member.removed',
        'member.added',
        'api_key.revoked',
      ]);
      expect(await actions(`created_before=${q(instants[2]!)}`)).toEqual(['api_key.rotated', 'api_key.created']);
      expect(await actions(`created_after=${q(instants[1]!)}&created_before=${q(instants[3]!)}`)).toEqual([
        'api_key.revoked',
        'api_key.rotated',
      ]);
      // The same instant written with a +02:00 offset.
      const offset = new Date(Date.parse(instants[3]!) + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
      expect(await actions(`created_after=${q(offset)}`)).toEqual(['member.removed', 'member.added']);
    });

    test('the next-page link of a filtered list keeps the filters, encoded so that following it works', async () => {
      const filter = `action=${q('api_key.*')}&actor_api_key_id=${admin.id}&created_after=${q(instants[0]!)}&limit=1`;
      const seen: string[] = [];
      let path: string | undefined = `/v1/audit-logs?${filter}`;
      for (let page = 0; path && page < 10; page++) {
        const answer = await server.call('GET', path);
        expect({ path, status: answer.status, code: answer.body.code }).toEqual({ path, status: 200, code: undefined });
        seen.push(...answer.body.data.map((e: AuditEntry) => e.action));
        const link = answer.headers.get('link');
        expect(link === null).toBe(answer.body.next_cursor === null);
        if (!link) break;
        const next = new URL(/^<([^>]+)>; rel="next"$/.exec(link)![1]!);
        expect(Object.fromEntries(next.searchParams)).toEqual({
          action: 'api_key.*',
          actor_api_key_id: admin.id,
          created_after: instants[0],
          limit: '1',
          cursor: answer.body.next_cursor,
        });
        path = next.pathname + next.search;
      }
      expect(seen).toEqual(['api_key.revoked', 'api_key.rotated', 'api_key.created']);
    });

    test('a leap second is a valid bound (the next second), not a 500', async () => {
      const answer = await server.call('GET', `/v1/audit-logs?created_before=${q('2016-12-31T23:59:60Z')}`);
      expect(answer.status).toBe(200);
      expect(answer.body.data).toEqual([]);
      const requests = await server.call(
        'GET',
        `/v1/request-logs?created_after=${q('2016-12-31T23:59:60+00:00')}&limit=1`,
      );
      expect(requests.status).toBe(200);
      expect(requests.body.data.length).toBe(1);
    });

    test('a refused change writes no entry', async () => {
      const viewer = await server.createKey('viewer');
      const admin2 = await server.createKey('admin');
      const refused = [
        await server.call('POST', '/v1/api-keys', { key: viewer.secret, body: { name: 'nope', role: 'viewer' } }),
        await server.call('POST', '/v1/api-keys', { key: admin2.secret, body: { name: 'nope', role: 'owner' } }),
        await server.call('DELETE', `/v1/api-keys/${server.ownerKeyId}`, { key: admin2.secret }),
        await server.call('POST', '/v1/api-keys', {
          key: admin2.secret,
          body: { name: 'nope', role: 'viewer', expires_at: '2000-01-01T00:00:00Z' },
        }),
      ];
      expect(refused.map((a) => a.status)).toEqual([403, 403, 403, 422]);
      const rows = await server.platform.db
        .selectFrom('audit_log_entries')
        .select('id')
        .where('request_id', 'in', refused.map(requestIdOf))
        .execute();
      expect(rows).toEqual([]);
    });

    test('invalid filters are 422 validation_failed', async () => {
      for (const [query, pointer] of [
        ['action=API_KEY', 'query/action'],
        ['actor_api_key_id=usr_01KY51922251RZN0J0KZDFGA75', 'query/actor_api_key_id'],
        ['created_after=yesterday', 'query/created_after'],
      ]) {
        const answer = await server.call('GET', `/v1/audit-logs?${query}`);
        expect({
          status: answer.status,
          code: answer.body.code,
          pointers: answer.body.errors?.map((e: { pointer: string }) => e.pointer),
        }).toEqual({
          status: 422,
          code: 'validation_failed',
          pointers: [pointer],
        });
      }
    });

    test("another workspace's audit log holds only its own changes", async () => {
      const other = await createWorkspace(server.platform.db, { name: 'Other', region: 'eu', now: clock.now() });
      expect(
        (await server.call('POST', '/v1/api-keys', { key: other.secret, body: { name: 'Other key', role: 'viewer' } }))
          .status,
      ).toBe(201);
      const entries = await listAll<AuditEntry>('/v1/audit-logs', other.secret);
      expect(entries.map((e) => [e.action, e.actor.api_key_id])).toEqual([['api_key.created', other.apiKey.id]]);
      expect(await listAll<AuditEntry>(`/v1/audit-logs?actor_api_key_id=${admin.id}`, other.secret)).toEqual([]);
    });
  });

  describe('request log', () => {
    const agent = 'request-log-tests/1.0';
    let key: { id: string; secret: string };
    let revoked: { id: string; secret: string };
    const made: Array<{
      answer: Answer;
      method: string;
      path: string;
      operationId: string | null;
      keyId: string;
      at: string;
    }> = [];
    const unlogged: Answer[] = [];
    let phaseTwo: string;
    let routeNotFound: Answer;

    beforeAll(async () => {
      key = await server.createKey('admin');
      revoked = await server.createKey('viewer');
      expect((await server.call('DELETE', `/v1/api-keys/${revoked.id}`)).status).toBe(200);
      clock.advance(3_600_000);

      const as = (secret: string) => ({ key: secret, headers: { 'User-Agent': agent } });
      const record = async (
        method: string,
        url: string,
        operationId: string | null,
        options: { secret?: string; body?: unknown } = {},
      ) => {
        const secret = options.secret ?? key.secret;
        const answer = await server.call(method, url, { ...as(secret), body: options.body });
        made.push({
          answer,
          method,
          path: url.split('?')[0]!,
          operationId,
          keyId: secret === revoked.secret ? revoked.id : key.id,
          at: clock.now().toISOString(),
        });
        return answer;
      };

      await record('GET', '/v1/workspace', 'getWorkspace');
      await record('GET', '/v1/api-keys?limit=2&role=viewer', 'listApiKeys');
      await record('GET', '/v1/api-keys?limit=0', 'listApiKeys');
      await record('GET', '/v1/api-keys/key_00000000000000000000000000', 'getApiKey');
      await record('POST', '/v1/members', 'addMember', { body: { email: 'not-an-email', role: 'viewer' } });
      await record('GET', '/v1/workspace', 'getWorkspace', { secret: revoked.secret });
      clock.advance(60_000);
      phaseTwo = clock.now().toISOString();
      await record('POST', '/v1/members', 'addMember', {
        body: { email: 'logged@request-log.example', role: 'viewer' },
      });
      routeNotFound = await server.call('GET', '/v1/no-such-route', as(key.secret));

      // Not requests of a key of this workspace.
      unlogged.push(await server.call('GET', '/v1/workspace', { key: null, headers: { 'User-Agent': agent } }));
      unlogged.push(
        await server.call('GET', '/v1/workspace', {
          key: 'cs_live_0000000000000000000000000000000000000000',
          headers: { 'User-Agent': agent },
        }),
      );
      unlogged.push(await server.call('GET', '/healthz', { key: null }));
      clock.advance(60_000);
    });

    const expectedRow = (entry: (typeof made)[number]) => ({
      id: requestIdOf(entry.answer),
      object: 'request_log_entry',
      api_key_id: entry.keyId,
      method: entry.method,
      path: entry.path,
      operation_id: entry.operationId,
      status: entry.answer.status,
      error_code: entry.answer.status >= 400 ? entry.answer.body.code : null,
      duration_ms: expect.any(Number),
      ip: '127.0.0.1',
      user_agent: agent,
      created_at: entry.at,
    });

    test('the requests made had the expected outcomes', () => {
      expect(made.map((m) => `${m.answer.status} ${m.answer.body?.code ?? ''}`.trim())).toEqual([
        '200',
        '200',
        '422 validation_failed',
        '404 not_found',
        '422 validation_failed',
        '401 unauthenticated',
        '201',
      ]);
      expect([routeNotFound.status, routeNotFound.body.code]).toEqual([404, 'route_not_found']);
      expect(unlogged.map((a) => a.status)).toEqual([401, 401, 200]);
    });

    test('every request of a key of the workspace is a row whose id is its X-Request-Id, newest first', async () => {
      const rows = await listAll<RequestLogEntry>(`/v1/request-logs?api_key_id=${key.id}`);
      const revokedRows = await listAll<RequestLogEntry>(`/v1/request-logs?api_key_id=${revoked.id}`);
      const mine = [...rows, ...revokedRows].filter((row) => made.some((m) => requestIdOf(m.answer) === row.id));
      const byId = new Map(mine.map((row) => [row.id, row]));
      expect(made.map((m) => byId.get(requestIdOf(m.answer)))).toEqual(made.map(expectedRow));
      for (const row of mine) {
        expect(Number.isInteger(row.duration_ms)).toBe(true);
        expect(row.duration_ms).toBeGreaterThanOrEqual(0);
      }
      const ids = rows.map((r) => r.id);
      expect(ids).toEqual([...ids].sort().reverse());
      // The revoked key's refused request is in the log, under the revoked key.
      expect(revokedRows.map((r) => [r.status, r.error_code])).toEqual([[401, 'unauthenticated']]);
    });

    test('requests without a key of the workspace are not logged', async () => {
      const ids = unlogged.map(requestIdOf);
      expect(ids.every((id) => /^req_[0-9A-HJKMNP-TV-Z]{26}$/.test(id))).toBe(true);
      await listAll<RequestLogEntry>('/v1/request-logs'); // flushes the writer
      const rows = await server.platform.db
        .selectFrom('request_log_entries')
        .select('id')
        .where('id', 'in', ids)
        .execute();
      expect(rows).toEqual([]);
    });

    test('no row holds a secret', async () => {
      await listAll<RequestLogEntry>('/v1/request-logs');
      const rows = await server.platform.db.selectFrom('request_log_entries').selectAll().execute();
      expect(rows.length).toBeGreaterThan(made.length);
      const text = JSON.stringify(rows) + JSON.stringify(await listAll<RequestLogEntry>('/v1/request-logs'));
      for (const secret of [
        key.secret,
        revoked.secret,
        server.ownerKey,
        'cs_live_0000000000000000000000000000000000000000',
      ]) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(secret.slice('cs_live_'.length));
      }
    });

    // RequestLogEntry documents `operation_id: null` for exactly these requests: app.ts notes the key of an unrouted
    // request before answering 404.
    test('a request with a key to an unknown route is logged with operation_id null', async () => {
      const rows = await listAll<RequestLogEntry>(`/v1/request-logs?api_key_id=${key.id}&status=404`);
      expect(rows.find((row) => row.id === requestIdOf(routeNotFound))).toEqual({
        id: requestIdOf(routeNotFound),
        object: 'request_log_entry',
        api_key_id: key.id,
        method: 'GET',
        path: '/v1/no-such-route',
        operation_id: null,
        status: 404,
        error_code: 'route_not_found',
        duration_ms: expect.any(Number),
        ip: '127.0.0.1',
        user_agent: agent,
        created_at: phaseTwo,
      });
    });

    test('the listing itself is logged, by the next listing', async () => {
      const first = await server.call('GET', `/v1/request-logs?api_key_id=${key.id}&limit=1`, { key: key.secret });
      expect(first.status).toBe(200);
      const second = await server.call('GET', `/v1/request-logs?api_key_id=${key.id}&limit=1`, { key: key.secret });
      expect(second.body.data[0]).toMatchObject({
        id: requestIdOf(first),
        operation_id: 'listRequestLogs',
        path: '/v1/request-logs',
        status: 200,
        error_code: null,
      });
    });

    test('the filters select by key, status code or class, method, path prefix and time', async () => {
      const ours = (rows: RequestLogEntry[]) =>
        rows
          .filter((r) => made.some((m) => requestIdOf(m.answer) === r.id))
          .map((r) => made.findIndex((m) => requestIdOf(m.answer) === r.id));
      const query = async (filter: string) => {
        const rows = await listAll<RequestLogEntry>(`/v1/request-logs?${filter}`);
        return { rows, ours: ours(rows) };
      };

      const byKey = await query(`api_key_id=${key.id}`);
      expect(byKey.rows.every((r) => r.api_key_id === key.id)).toBe(true);
      expect(byKey.ours).toEqual([6, 4, 3, 2, 1, 0]);

      const notFound = await query('status=404');
      expect(notFound.rows.every((r) => r.status === 404)).toBe(true);
      expect(notFound.ours).toEqual([3]);

      const clientErrors = await query('status=4xx');
      expect(clientErrors.rows.every((r) => r.status >= 400 && r.status < 500)).toBe(true);
      expect(clientErrors.ours).toEqual([5, 4, 3, 2]);

      const posts = await query(`method=POST&api_key_id=${key.id}`);
      expect(posts.rows.every((r) => r.method === 'POST')).toBe(true);
      expect(posts.ours).toEqual([6, 4]);

      const keys = await query(`path_prefix=${q('/v1/api-keys')}`);
      expect(keys.rows.every((r) => r.path.startsWith('/v1/api-keys'))).toBe(true);
      expect(keys.ours).toEqual([3, 2, 1]);
      expect((await query(`path_prefix=${q('/v1/api-keys/')}`)).ours).toEqual([3]);

      const later = await query(`created_after=${q(phaseTwo)}&api_key_id=${key.id}`);
      expect(later.rows.every((r) => r.created_at >= phaseTwo)).toBe(true);
      expect(later.ours).toEqual([6]);
      const earlier = await query(`created_before=${q(phaseTwo)}&api_key_id=${key.id}`);
      expect(earlier.rows.every((r) => r.created_at < phaseTwo)).toBe(true);
      expect(earlier.ours).toEqual([4, 3, 2, 1, 0]);

      const combined = await query(
        `status=4xx&method=GET&path_prefix=${q('/v1/')}&created_before=${q(phaseTwo)}&api_key_id=${key.id}`,
      );
      expect(combined.ours).toEqual([3, 2]);
    });

    test('invalid filters are 422 validation_failed', async () => {
      for (const [query, pointer] of [
        ['status=4x', 'query/status'],
        ['status=600', 'query/status'],
        ['method=TRACE', 'query/method'],
        ['path_prefix=v1', 'query/path_prefix'],
        [`path_prefix=${q('/v1/<script>')}`, 'query/path_prefix'],
        ['api_key_id=nope', 'query/api_key_id'],
      ]) {
        const answer = await server.call('GET', `/v1/request-logs?${query}`);
        expect({
          query,
          status: answer.status,
          code: answer.body.code,
          pointers: answer.body.errors?.map((e: { pointer: string }) => e.pointer),
        }).toEqual({
          query,
          status: 422,
          code: 'validation_failed',
          pointers: [pointer],
        });
      }
    });

    test("another workspace's request log holds only its own requests", async () => {
      const other = await createWorkspace(server.platform.db, { name: 'Other log', region: 'eu', now: clock.now() });
      const call = await server.call('GET', '/v1/workspace', { key: other.secret });
      const rows = await listAll<RequestLogEntry>('/v1/request-logs', other.secret);
      expect(rows.map((r) => [r.id, r.api_key_id])).toEqual([[requestIdOf(call), other.apiKey.id]]);
      expect(await listAll<RequestLogEntry>(`/v1/request-logs?api_key_id=${key.id}`, other.secret)).toEqual([]);
    });
  });
});

// Events against the real server on SQLite and PostgreSQL: what adding and removing members records (type, per
// workspace sequence without gaps, time, the specification's data keys), GET /v1/events (order, pages, type filters, time
// filters, roles, workspaces), GET /v1/event-types, that every event matches its message in the AsyncAPI
// document, and the 30-day retention of events and deliveries.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EVENT_TYPES } from '../../generated/webhooks.ts';
import { features } from '../../src/features/index.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { ManualClock } from '../../src/platform/clock.ts';
import { pruneExpired } from '../../src/platform/retention.ts';
import { asyncApiErrors, asyncapi, messageFor } from '../support/asyncapi.ts';
import { eventually, expectProblem } from '../support/expect.ts';
import { startReceiver } from '../support/receiver.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { type Json, schemaErrors, spec } from '../support/spec.ts';

const DAY_MS = 86_400_000;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const EVENT_ID = /^evt_[0-9A-HJKMNP-TV-Z]{26}$/;

describe('the AsyncAPI document', () => {
  test('has a message for every event type, whose payload is that type and whose channel lists it', () => {
    const channelMessages = Object.values<Json>(asyncapi.channels).flatMap((channel) =>
      Object.values<Json>(channel.messages ?? {}),
    );
    for (const type of EVENT_TYPES) {
      const message = messageFor(type);
      expect(message, type).toBeDefined();
      expect(message!.name, type).toBe(type);
      expect(
        channelMessages.some((m) => m.payload?.properties?.type?.const === type),
        type,
      ).toBe(true);
    }
    expect(Object.keys(asyncapi.components.messages).length).toBe(EVENT_TYPES.length);
  });

  test("each message's payload accepts the contract's example of its type and rejects it with another type", () => {
    for (const type of EVENT_TYPES) {
      const example = (Object.values<Json>(messageFor(type)!.examples ?? [])[0] as Json | undefined)?.payload;
      expect(example, type).toBeDefined();
      expect(asyncApiErrors(example), type).toEqual([]);
      const other = EVENT_TYPES.find((t) => t !== type)!;
      expect(asyncApiErrors({ ...example, type: other }).length, type).toBeGreaterThan(0);
    }
  });
});

describe.each(databaseKinds)('events on %s', (kind) => {
  let server: TestServer;
  const clock = new ManualClock('2026-11-20T10:00:00.000Z');
  let counter = 0;

  beforeAll(async () => {
    server = await startTestServer({ database: kind, clock });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** A workspace of its own, whose event sequence starts at 1. */
  async function newWorkspace(ownerEmail?: string) {
    const created = await createWorkspace(server.platform.db, {
      name: `Events ${++counter}`,
      region: server.platform.config.region,
      ownerEmail,
      now: clock.now(),
    });
    return { key: created.secret, id: created.workspace.id, keyId: created.apiKey.id };
  }

  async function addMember(key: string, role: 'admin' | 'editor' | 'viewer' = 'viewer') {
    const answer = await server.call('POST', '/v1/members', {
      key,
      body: { email: `person-${++counter}@events.example`, role },
    });
    expect(answer.status).toBe(201);
    return answer.body as { id: string; email: string; role: string; name: string | null };
  }

  async function listEvents(key: string, query = '') {
    const answer = await server.call('GET', `/v1/events?limit=100${query}`, { key });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.next_cursor).toBeNull();
    return answer.body.data as Json[];
  }

  /** Three events 1 s apart: A added, B added, A removed. */
  async function threeEvents() {
    const workspace = await newWorkspace();
    clock.advance(1000);
    const a = await addMember(workspace.key, 'editor');
    const addedA = clock.now().toISOString();
    clock.advance(1000);
    const b = await addMember(workspace.key);
    const addedB = clock.now().toISOString();
    clock.advance(1000);
    expect((await server.call('DELETE', `/v1/members/${a.id}`, { key: workspace.key })).status).toBe(204);
    const removedA = clock.now().toISOString();
    const events = await listEvents(workspace.key);
    expect(events.length).toBe(3);
    return {
      workspace,
      a,
      b,
      times: { addedA, addedB, removedA },
      ids: { removedA: events[0]!.id, addedB: events[1]!.id, addedA: events[2]!.id },
    };
  }

  test("adding and removing members records workspace.member.* events with sequence 1, 2, 3 and the specification's keys", async () => {
    const { workspace, a, b, times, ids } = await threeEvents();
    const added = (m: { id: string; email: string; role: string; name: string | null }) => ({
      user_id: m.id,
      email: m.email,
      role: m.role,
      scim_source: null,
      name: m.name,
    });
    const envelope = { object: 'event', workspace_id: workspace.id, test: false };
    // The workspace's owner key is a service key (it was created without an owner member): it removed A itself.
    const removed = {
      user_id: a.id,
      removed_at: times.removedA,
      removed_by: workspace.keyId,
      removed_by_api_key_id: workspace.keyId,
      email: a.email,
      role: a.role,
    };
    expect(await listEvents(workspace.key)).toEqual([
      {
        id: ids.removedA,
        ...envelope,
        type: 'workspace.member.removed',
        created: times.removedA,
        sequence: 3,
        data: removed,
      },
      {
        id: ids.addedB,
        ...envelope,
        type: 'workspace.member.added',
        created: times.addedB,
        sequence: 2,
        data: added(b),
      },
      {
        id: ids.addedA,
        ...envelope,
        type: 'workspace.member.added',
        created: times.addedA,
        sequence: 1,
        data: added(a),
      },
    ]);
    // The data keys come in the specification's order, then the extra ones.
    const removedRaw = JSON.parse(
      (await server.call('GET', `/v1/events/${ids.removedA}`, { key: workspace.key })).text,
    );
    expect(Object.keys(removedRaw.data)).toEqual([
      'user_id',
      'removed_at',
      'removed_by',
      'removed_by_api_key_id',
      'email',
      'role',
    ]);
    for (const id of Object.values(ids)) expect(id).toMatch(EVENT_ID);
    for (const created of Object.values(times)) expect(created).toMatch(ISO_MS);
    // The envelope's fields come in the contract's order.
    const raw = await server.call('GET', `/v1/events/${ids.addedA}`, { key: workspace.key });
    expect(Object.keys(JSON.parse(raw.text))).toEqual([
      'id',
      'object',
      'type',
      'created',
      'workspace_id',
      'sequence',
      'test',
      'data',
    ]);
  });

  test('each workspace has its own sequence', async () => {
    const first = await newWorkspace();
    const second = await newWorkspace();
    await addMember(first.key);
    await addMember(second.key);
    await addMember(first.key);
    expect((await listEvents(first.key)).map((e) => e.sequence)).toEqual([2, 1]);
    expect((await listEvents(second.key)).map((e) => e.sequence)).toEqual([1]);
  });

  test('events added at the same time get consecutive sequences without gaps', async () => {
    const workspace = await newWorkspace();
    await Promise.all(Array.from({ length: 8 }, () => addMember(workspace.key)));
    expect((await listEvents(workspace.key)).map((e) => e.sequence)).toEqual([8, 7, 6, 5, 4, 3, 2, 1]);
  });

  test('pages of limit=1 follow next_cursor and Link, newest first', async () => {
    const { workspace, ids } = await threeEvents();
    const pages: string[][] = [];
    let path: string | null = '/v1/events?limit=1&type=workspace.*';
    for (let i = 0; path && i < 10; i++) {
      const page: Answer = await server.call('GET', path, { key: workspace.key });
      expect(page.status, page.text).toBe(200);
      pages.push(page.body.data.map((e: Json) => e.id));
      if (page.body.next_cursor === null) {
        expect(page.headers.get('link')).toBeNull();
        path = null;
      } else {
        const next = new URL(/^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')![1]!);
        expect(next.searchParams.get('cursor')).toBe(page.body.next_cursor);
        // The link keeps the filter.
        expect(next.searchParams.get('type')).toBe('workspace.*');
        path = next.pathname + next.search;
      }
    }
    expect(pages).toEqual([[ids.removedA], [ids.addedB], [ids.addedA]]);
  });

  test('the type filter takes an exact type, a wildcard of whole segments or *', async () => {
    const { workspace, ids } = await threeEvents();
    const filtered = async (type: string) => (await listEvents(workspace.key, `&type=${type}`)).map((e) => e.id);
    const all = [ids.removedA, ids.addedB, ids.addedA];
    expect(await filtered('workspace.member.added')).toEqual([ids.addedB, ids.addedA]);
    expect(await filtered('workspace.member.removed')).toEqual([ids.removedA]);
    expect(await filtered('workspace.*')).toEqual(all);
    expect(await filtered('workspace.member.*')).toEqual(all);
    expect(await filtered('*')).toEqual(all);
    expect(await filtered('chat.*')).toEqual([]);
    expect(await filtered('voice.trained')).toEqual([]);
    expect(await filtered('audit.*')).toEqual([]);
    expectProblem(
      await server.call('GET', '/v1/events?type=workspace.mem*', { key: workspace.key }),
      422,
      'validation_failed',
    );
    expectProblem(
      await server.call('GET', '/v1/events?type=nothing.happened', { key: workspace.key }),
      422,
      'validation_failed',
    );
  });

  test('created_gte is inclusive, created_lt exclusive, and both take any RFC 3339 offset', async () => {
    const { workspace, ids, times } = await threeEvents();
    const filtered = async (query: string) => (await listEvents(workspace.key, query)).map((e) => e.id);
    expect(await filtered(`&created_gte=${times.addedB}`)).toEqual([ids.removedA, ids.addedB]);
    expect(await filtered(`&created_lt=${times.addedB}`)).toEqual([ids.addedA]);
    expect(await filtered(`&created_gte=${times.addedB}&created_lt=${times.removedA}`)).toEqual([ids.addedB]);
    expect(await filtered(`&created_gte=${times.removedA}&created_lt=${times.removedA}`)).toEqual([]);
    // The same instant as addedB, one hour ahead of UTC (`+` encoded: a raw one is a space in a query).
    const plusOne = new Date(Date.parse(times.addedB) + 3600_000).toISOString().replace('Z', '%2B01:00');
    expect(await filtered(`&created_gte=${plusOne}`)).toEqual([ids.removedA, ids.addedB]);
    expect(await filtered(`&type=workspace.member.added&created_gte=${times.addedB}`)).toEqual([ids.addedB]);
  });

  test("GET /v1/events/{id} returns the listed event; an unknown id and another workspace's event are 404 not_found", async () => {
    const { workspace, ids } = await threeEvents();
    const listed = await listEvents(workspace.key);
    for (const event of listed) {
      const read = await server.call('GET', `/v1/events/${event.id}`, { key: workspace.key });
      expect(read.status).toBe(200);
      expect(read.body).toEqual(event);
    }
    expectProblem(
      await server.call('GET', '/v1/events/evt_01JD0A1B2C3D4E5F6G7H8J9K0M', { key: workspace.key }),
      404,
      'not_found',
    );
    const other = await newWorkspace();
    expectProblem(await server.call('GET', `/v1/events/${ids.addedA}`, { key: other.key }), 404, 'not_found');
    expect(await listEvents(other.key)).toEqual([]);
    expectProblem(
      await server.call('GET', '/v1/events/not-an-event-id', { key: workspace.key }),
      422,
      'validation_failed',
    );
  });

  test('viewer and editor keys may read events and event types', async () => {
    const { workspace, ids } = await threeEvents();
    for (const role of ['viewer', 'editor'] as const) {
      const { secret } = await server.createKey(role, { key: workspace.key });
      const list = await server.call('GET', '/v1/events', { key: secret });
      expect(list.status).toBe(200);
      expect(list.body.data.map((e: Json) => e.id)).toEqual([ids.removedA, ids.addedB, ids.addedA]);
      expect((await server.call('GET', `/v1/events/${ids.addedB}`, { key: secret })).status).toBe(200);
      expect((await server.call('GET', '/v1/event-types', { key: secret })).status).toBe(200);
    }
    expectProblem(await server.call('GET', '/v1/events', { key: null }), 401, 'unauthenticated');
  });

  test('a removal refused with last_owner records no event, and the next event takes the next sequence', async () => {
    const workspace = await newWorkspace('owner@events.example');
    await addMember(workspace.key);
    const owners = await server.call('GET', '/v1/members?role=owner', { key: workspace.key });
    const owner = owners.body.data[0] as { id: string };
    // The workspace's owner key acts for that owner, who cannot remove themselves: a service key asks instead.
    const service = await server.call('POST', '/v1/api-keys', {
      key: workspace.key,
      body: { name: 'service', role: 'owner', user_id: null },
    });
    expectProblem(
      await server.call('DELETE', `/v1/members/${owner.id}`, { key: service.body.secret }),
      409,
      'last_owner',
    );
    expect((await listEvents(workspace.key)).map((e) => [e.type, e.sequence])).toEqual([['workspace.member.added', 1]]);
    await addMember(workspace.key);
    expect((await listEvents(workspace.key)).map((e) => e.sequence)).toEqual([2, 1]);
  });

  test('every recorded event matches the AsyncAPI payload schema of its type', async () => {
    const { workspace } = await threeEvents();
    const events = await listEvents(workspace.key);
    expect(new Set(events.map((e) => e.type))).toEqual(new Set(['workspace.member.added', 'workspace.member.removed']));
    for (const event of events) expect(asyncApiErrors(event), event.type).toEqual([]);
    // The check can fail: data without one of the specification's keys, or with the old nested shape, is not valid.
    for (const event of events) {
      for (const key of Object.keys(event.data)) {
        const { [key]: _, ...without } = event.data;
        expect(asyncApiErrors({ ...event, data: without }), `${event.type} without ${key}`).not.toEqual([]);
      }
    }
    expect(
      asyncApiErrors({
        ...events[0],
        data: { member: { id: events[0]!.data.user_id, email: events[0]!.data.email, role: 'viewer' } },
      }).length,
    ).toBeGreaterThan(0);
  });

  test("GET /v1/event-types lists the 14 types in the contract's order, each with its schema and a valid example", async () => {
    const answer = await server.call('GET', '/v1/event-types');
    expect(answer.status).toBe(200);
    expect(answer.body.next_cursor).toBeNull();
    const entries = answer.body.data as Array<{
      object: string;
      type: string;
      description: string;
      schema_name: string;
      example_payload: Json;
    }>;
    expect(entries.length).toBe(14);
    // The contract's own example of the catalogue is the catalogue: descriptions, schema names and examples.
    expect(entries).toEqual(spec.components.examples.EventTypeList.value.data);
    expect(entries.map((e) => e.type)).toEqual(spec.components.schemas.EventType.enum);
    expect(new Set(entries.map((e) => e.type))).toEqual(new Set(EVENT_TYPES));
    for (const entry of entries) {
      expect(entry.object).toBe('event_type');
      expect(spec.components.schemas[entry.schema_name], entry.schema_name).toBeDefined();
      expect(entry.example_payload.type, entry.type).toBe(entry.type);
      expect(schemaErrors(`/components/schemas/${entry.schema_name}`, entry.example_payload), entry.type).toEqual([]);
      expect(asyncApiErrors(entry.example_payload), entry.type).toEqual([]);
    }
  });
});

describe.each(databaseKinds)('event retention on %s', (kind) => {
  test('events leave GET /v1/events after 30 days; pruning deletes old events and ended deliveries, not pending ones', async () => {
    const clock = new ManualClock('2026-11-20T10:00:00.000Z');
    const ok = await startReceiver();
    const failing = await startReceiver();
    failing.respond = () => ({ status: 500 });
    const server = await startTestServer({ database: kind, clock, env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } });
    try {
      const { db } = server.platform;
      const create = async (url: string) => {
        const answer = await server.call('POST', '/v1/webhooks/endpoints', {
          body: { url, event_types: ['workspace.member.*'] },
        });
        expect(answer.status).toBe(201);
        return answer.body.id as string;
      };
      const delivered = await create(`${ok.url}/hook`);
      const pending = await create(`${failing.url}/pending`);
      const ended = await create(`${failing.url}/ended`);
      const add = async (email: string) =>
        expect((await server.call('POST', '/v1/members', { body: { email, role: 'viewer' } })).status).toBe(201);

      const start = clock.now();
      await add('old@retention.example');
      const deliveryOf = async (endpointId: string) =>
        (await server.call('GET', `/v1/webhooks/deliveries?endpoint_id=${endpointId}`)).body.data[0].id as string;
      const oldDeliveries = {
        delivered: await deliveryOf(delivered),
        pending: await deliveryOf(pending),
        ended: await deliveryOf(ended),
      };
      // The first attempt of each is recorded: delivered; failed with a retry due 10 s later (the clock stands still).
      for (const id of Object.values(oldDeliveries)) {
        await eventually(
          () => server.call('GET', `/v1/webhooks/deliveries/${id}`),
          (answer) => answer.body.attempts?.length === 1,
        );
      }
      expect((await server.call('PATCH', `/v1/webhooks/endpoints/${ended}`, { body: { enabled: false } })).status).toBe(
        200,
      );
      const statusOf = async (id: string) =>
        (await db.selectFrom('webhook_deliveries').select('status').where('id', '=', id).executeTakeFirst())?.status;
      expect([
        await statusOf(oldDeliveries.delivered),
        await statusOf(oldDeliveries.pending),
        await statusOf(oldDeliveries.ended),
      ]).toEqual(['delivered', 'pending', 'failed']);

      // Exactly 30 days later the event is still in the window; a millisecond later it is not.
      clock.set(new Date(start.getTime() + 30 * DAY_MS));
      const oldEvents = (await server.call('GET', '/v1/events')).body.data as Json[];
      expect(oldEvents.map((e) => e.created)).toEqual([start.toISOString()]);
      const oldEventId = oldEvents[0]!.id as string;
      clock.advance(1);
      await add('new@retention.example');
      const visible = (await server.call('GET', '/v1/events')).body.data as Json[];
      expect(visible.map((e) => e.data.email)).toEqual(['new@retention.example']);
      expectProblem(await server.call('GET', `/v1/events/${oldEventId}`), 404, 'not_found');

      await pruneExpired(db, clock.now(), features);

      const events = await db
        .selectFrom('events')
        .select(['id', 'created_at'])
        .where('workspace_id', '=', server.workspaceId)
        .execute();
      expect(events.map((e) => e.id)).toEqual([visible[0]!.id]);
      const deliveries = await db
        .selectFrom('webhook_deliveries')
        .select(['id', 'event_id', 'status'])
        .where('workspace_id', '=', server.workspaceId)
        .execute();
      const kept = new Set(deliveries.map((d) => d.id));
      expect(kept.has(oldDeliveries.pending)).toBe(true);
      expect(kept.has(oldDeliveries.delivered)).toBe(false);
      expect(kept.has(oldDeliveries.ended)).toBe(false);
      // The new event's deliveries: to the two enabled endpoints.
      expect(deliveries.filter((d) => d.event_id === visible[0]!.id).length).toBe(2);
      // Attempts go with their delivery.
      const orphans = await db
        .selectFrom('webhook_attempts')
        .select('delivery_id')
        .where('delivery_id', 'in', [oldDeliveries.delivered, oldDeliveries.ended])
        .execute();
      expect(orphans).toEqual([]);
      const pendingAttempts = await db
        .selectFrom('webhook_attempts')
        .select('delivery_id')
        .where('delivery_id', '=', oldDeliveries.pending)
        .execute();
      expect(pendingAttempts.length).toBeGreaterThanOrEqual(1);
    } finally {
      await server.close();
      await ok.close();
      await failing.close();
    }
  });
});

// Migration 006_event_catalogue: a database written before the specification's event catalogue (at 286ad9e: old
// type names in endpoint filters, member events whose data is {member: {...}}, deliveries carrying those payloads)
// is converted, and the API answers it 200 where it answered 500 response_validation_failed.
import { createHash } from 'node:crypto';
import { type Kysely, Migrator } from 'kysely';
import { describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import type { EventType } from '../../generated/webhooks.ts';
import { features } from '../../src/features/index.ts';
import { eventTypeCatalogue } from '../../src/features/webhooks/events.ts';
import { type EventData, recordEvent } from '../../src/features/webhooks/record-event.ts';
import { allMigrations, openStorage } from '../../src/storage/database.ts';
import type { Database } from '../../src/storage/schema.ts';
import { databaseKinds, freshDatabase, startTestServer } from '../support/server.ts';

const WS = 'ws_01JD0A1B2C3D4E5F6G7H8J9K0M';
const OWNER = 'usr_01JD0A1B2C3D4E5F6G7H8J9K01';
const ADDED = 'usr_01JD0A1B2C3D4E5F6G7H8J9K02';
const BY_SERVICE = 'usr_01JD0A1B2C3D4E5F6G7H8J9K03';
const UNAUDITED = 'usr_01JD0A1B2C3D4E5F6G7H8J9K04';
const OWNER_KEY = 'key_01JD0A1B2C3D4E5F6G7H8J9K01';
const SERVICE_KEY = 'key_01JD0A1B2C3D4E5F6G7H8J9K02';
const SECRET = 'cs_live_migrationmigrationmigrationmigration12';
const ENDPOINT_OLD = 'whe_01JD0A1B2C3D4E5F6G7H8J9K01';
const ENDPOINT_ALL = 'whe_01JD0A1B2C3D4E5F6G7H8J9K02';
const evt = (n: number) => `evt_01JD0A1B2C3D4E5F6G7H8J9K0${n}`;
const dlv = (n: number) => `dlv_01JD0A1B2C3D4E5F6G7H8J9K0${n}`;

describe.each(databaseKinds)('migration 006_event_catalogue on %s', (kind) => {
  test('converts filters, member events and deliveries of the earlier catalogue; the API answers them', async () => {
    const database = await freshDatabase(kind);
    // Recent instants: events older than 30 days are outside GET /v1/events.
    const base = Date.now() - 3_600_000;
    const at = (second: number) => new Date(base + second * 1000).toISOString();

    // The database as 286ad9e left it: migrations 001 and 002 only, rows in their old shapes.
    const storage = openStorage(database.url);
    try {
      // biome-ignore lint/suspicious/noExplicitAny: the tables as migrations 001 and 002 made them, not as storage/schema.ts describes them now
      const old = storage.db as unknown as Kysely<any>;
      const migrations = allMigrations(features);
      const before = { '001_platform': migrations['001_platform']!, '002_webhooks': migrations['002_webhooks']! };
      const { error } = await new Migrator({
        db: old,
        provider: { getMigrations: async () => before },
      }).migrateToLatest();
      expect(error).toBeUndefined();

      await old
        .insertInto('workspaces')
        .values({ id: WS, name: 'Upgraded', region: 'eu', created_at: at(0), updated_at: at(0), event_sequence: 4 })
        .execute();
      await old
        .insertInto('users')
        .values([
          { id: OWNER, email: 'owner@upgrade.example', name: 'Olive Owner', created_at: at(0) },
          { id: ADDED, email: 'added@upgrade.example', name: 'Ada Added', created_at: at(1) },
          { id: BY_SERVICE, email: 'service@upgrade.example', name: null, created_at: at(1) },
          { id: UNAUDITED, email: 'unaudited@upgrade.example', name: null, created_at: at(1) },
        ])
        .execute();
      await old
        .insertInto('members')
        .values({ workspace_id: WS, user_id: OWNER, role: 'owner', added_at: at(0), added_by_api_key_id: null })
        .execute();
      const key = (id: string, role: string, createdBy: string | null, secretHash: string) => ({
        id,
        workspace_id: WS,
        name: id,
        role,
        secret_hash: secretHash,
        last4: 'ab12',
        previous_secret_hash: null,
        previous_secret_expires_at: null,
        created_by_api_key_id: createdBy,
        created_at: at(0),
        updated_at: at(0),
        last_used_at: null,
        expires_at: null,
        rotated_at: null,
        revoked_at: null,
      });
      // The owner's key (migration 003 gives it to the owner member), and a service key it created.
      await old
        .insertInto('api_keys')
        .values([
          key(OWNER_KEY, 'owner', null, createHash('sha256').update(SECRET).digest('hex')),
          key(SERVICE_KEY, 'admin', OWNER_KEY, 'hash-of-the-service-key'),
        ])
        .execute();

      const member = (id: string, email: string, role: string) => ({ member: { id, email, role } });
      const events = [
        {
          id: evt(1),
          type: 'workspace.member.added',
          sequence: 1,
          data: member(ADDED, 'added@upgrade.example', 'editor'),
          created_at: at(10),
        },
        // Removed by the owner's key, then by the service key; the third removal has no audit entry.
        {
          id: evt(2),
          type: 'workspace.member.removed',
          sequence: 2,
          data: member(ADDED, 'added@upgrade.example', 'editor'),
          created_at: at(20),
        },
        {
          id: evt(3),
          type: 'workspace.member.removed',
          sequence: 3,
          data: member(BY_SERVICE, 'service@upgrade.example', 'viewer'),
          created_at: at(30),
        },
        {
          id: evt(4),
          type: 'workspace.member.removed',
          sequence: 4,
          data: member(UNAUDITED, 'unaudited@upgrade.example', 'viewer'),
          created_at: at(40),
        },
      ];
      await old
        .insertInto('events')
        .values(events.map((e) => ({ ...e, workspace_id: WS, data: JSON.stringify(e.data) })))
        .execute();
      const audit = (id: string, action: string, target: string, actor: string, createdAt: string) => ({
        id,
        workspace_id: WS,
        action,
        actor_type: 'api_key',
        actor_api_key_id: actor,
        actor_api_key_name: actor,
        actor_role: 'owner',
        target_type: 'member',
        target_id: target,
        target_display_name: null,
        details: '{}',
        ip: '127.0.0.1',
        user_agent: null,
        request_id: null,
        created_at: createdAt,
      });
      await old
        .insertInto('audit_log_entries')
        .values([
          audit('aud_01JD0A1B2C3D4E5F6G7H8J9K01', 'member.added', ADDED, OWNER_KEY, at(10)),
          audit('aud_01JD0A1B2C3D4E5F6G7H8J9K02', 'member.removed', ADDED, OWNER_KEY, at(20)),
          audit('aud_01JD0A1B2C3D4E5F6G7H8J9K03', 'member.removed', BY_SERVICE, SERVICE_KEY, at(30)),
        ])
        .execute();

      const endpoint = (id: string, eventTypes: string[]) => ({
        id,
        workspace_id: WS,
        url: `https://receiver.example/${id}`,
        description: null,
        event_types: JSON.stringify(eventTypes),
        enabled: 1,
        metadata: '{}',
        secret: 'whsec_secret',
        previous_secret: null,
        previous_secret_expires_at: null,
        created_at: at(0),
        updated_at: at(0),
      });
      await old
        .insertInto('webhook_endpoints')
        .values([
          endpoint(ENDPOINT_OLD, [
            'voice.training.completed',
            'voice.training.failed',
            'voice.training.*',
            'document.version.created',
            'document.version.*',
            'chatbot.conversation.rated',
            'workflow.run.failed',
            'workflow.run.awaiting_approval',
            'workspace.member.*',
          ]),
          endpoint(ENDPOINT_ALL, [
            '*',
            'workflow.run.completed',
            'workflow.run.failed',
            'chatbot.conversation.escalated',
          ]),
        ])
        .execute();

      /** An event row as 286ad9e stored it (its `data` in the old shapes). */
      type OldEvent = { id: string; type: string; sequence: number; data: unknown; created_at: string };
      // The payload as 286ad9e sent it: the envelope, then the stored data.
      const payloadOf = (e: OldEvent, test = false) =>
        `{"id":"${e.id}","object":"event","type":"${e.type}","created":"${e.created_at}","workspace_id":"${WS}","sequence":${e.sequence},"test":${test},"data":${JSON.stringify(e.data)}}`;
      const delivery = (id: string, e: OldEvent, status: string, nextAttemptAt: string | null) => ({
        id,
        workspace_id: WS,
        endpoint_id: ENDPOINT_OLD,
        event_id: e.id,
        event_type: e.type,
        sequence: e.sequence,
        ordered: 1,
        manual: 0,
        test: 0,
        payload: payloadOf(e),
        status,
        attempt_count: status === 'delivered' ? 1 : 0,
        next_attempt_at: nextAttemptAt,
        last_attempt_at: status === 'delivered' ? e.created_at : null,
        last_response_status_code: status === 'delivered' ? 200 : null,
        delivered_at: status === 'delivered' ? e.created_at : null,
        created_at: e.created_at,
        leased_until: null,
        lease_token: null,
      });
      const voiceTest = {
        id: evt(5),
        type: 'voice.training.completed',
        sequence: 4,
        data: { voice: { id: 'bv_01JD0A1B2C3D4E5F6G7H8J9K01', name: 'Old' } },
        created_at: at(50),
      };
      await old
        .insertInto('webhook_deliveries')
        .values([
          delivery(dlv(1), events[0]!, 'delivered', null),
          delivery(dlv(2), events[1]!, 'delivered', null),
          // The queue's head is the removal nobody audited (it goes); the one behind it must become due.
          delivery(dlv(3), events[3]!, 'pending', at(40)),
          { ...delivery(dlv(4), events[2]!, 'pending', null), sequence: 5 },
          {
            ...delivery(dlv(5), voiceTest, 'delivered', null),
            manual: 1,
            test: 1,
            ordered: 0,
            payload: payloadOf(voiceTest, true),
          },
        ])
        .execute();
    } finally {
      await storage.close();
    }

    // Upgrade: the server migrates to the latest at start. No worker: the deliveries stay as the migration left them.
    const server = await startTestServer({ databaseUrl: database.url, env: { WEBHOOKS_WORKER: 'false' } });
    try {
      const call = (path: string) => server.call('GET', path, { key: SECRET });

      const listed = await call('/v1/events?limit=100');
      expect(listed.status, listed.text).toBe(200);
      const byId = new Map<string, components['schemas']['Event']>(
        listed.body.data.map((e: components['schemas']['Event']) => [e.id, e]),
      );
      expect([...byId.keys()].sort()).toEqual([evt(1), evt(2), evt(3)]);
      expect(byId.get(evt(1))!.data).toEqual({
        user_id: ADDED,
        email: 'added@upgrade.example',
        role: 'editor',
        scim_source: null,
        name: 'Ada Added',
      });
      expect(byId.get(evt(2))!.data).toEqual({
        user_id: ADDED,
        removed_at: at(20),
        removed_by: OWNER,
        removed_by_api_key_id: OWNER_KEY,
        email: 'added@upgrade.example',
        role: 'editor',
      });
      // A service key stands for itself.
      expect(byId.get(evt(3))!.data).toMatchObject({
        user_id: BY_SERVICE,
        removed_by: SERVICE_KEY,
        removed_by_api_key_id: SERVICE_KEY,
      });
      expect((await call(`/v1/events/${evt(2)}`)).status).toBe(200);
      expect((await call(`/v1/events/${evt(4)}`)).status).toBe(404);

      const endpoints = await call('/v1/webhooks/endpoints');
      expect(endpoints.status, endpoints.text).toBe(200);
      const filters = new Map(
        endpoints.body.data.map((e: components['schemas']['WebhookEndpoint']) => [e.id, e.event_types]),
      );
      expect(filters.get(ENDPOINT_OLD)).toEqual([
        'voice.trained',
        'voice.training_failed',
        'voice.*',
        'document.published',
        'document.*',
        'chatbot.csat.received',
        'workflow.run.completed',
        'workflow.run.approval_required',
        'workspace.member.*',
      ]);
      expect(filters.get(ENDPOINT_ALL)).toEqual(['*', 'workflow.run.completed', 'chatbot.conversation.escalated']);

      const deliveries = await call('/v1/webhooks/deliveries?limit=100');
      expect(deliveries.status, deliveries.text).toBe(200);
      expect(deliveries.body.data.map((d: components['schemas']['WebhookDelivery']) => d.id).sort()).toEqual([
        dlv(1),
        dlv(2),
        dlv(4),
        dlv(5),
      ]);
      for (const id of [dlv(1), dlv(2), dlv(4), dlv(5)])
        expect((await call(`/v1/webhooks/deliveries/${id}`)).status).toBe(200);
      // Delivered and pending deliveries carry their event as GET /v1/events shows it now.
      expect((await call(`/v1/webhooks/deliveries/${dlv(2)}`)).body.payload).toEqual(byId.get(evt(2)));
      const pending = await call(`/v1/webhooks/deliveries/${dlv(4)}`);
      expect(pending.body.payload).toEqual(byId.get(evt(3)));
      expect(pending.body.next_attempt_at).not.toBeNull();
      // The old test delivery is one of the new type, with its example.
      const tested = (await call(`/v1/webhooks/deliveries/${dlv(5)}`)).body;
      expect(tested).toMatchObject({
        event_type: 'voice.trained',
        test: true,
        payload: { id: evt(5), type: 'voice.trained', test: true },
      });
      expect(tested.payload.data).toEqual(
        eventTypeCatalogue.find((e) => e.type === 'voice.trained')!.example_payload.data,
      );

      // What the old filters meant, the new ones receive: a voice.trained event and a failed run reach the endpoint.
      const db = server.platform.db as Kysely<Database>;
      const example = <T extends EventType>(type: T) =>
        eventTypeCatalogue.find((e) => e.type === type)!.example_payload.data as EventData<T>;
      const [trained, failedRun] = await db
        .transaction()
        .execute(async (trx) => [
          await recordEvent(trx, WS, 'voice.trained', example('voice.trained'), new Date()),
          await recordEvent(
            trx,
            WS,
            'workflow.run.completed',
            { ...example('workflow.run.completed'), status: 'failure' },
            new Date(),
          ),
        ]);
      for (const eventId of [trained, failedRun]) {
        const sent = await call(`/v1/webhooks/deliveries?event_id=${eventId}`);
        expect(sent.status).toBe(200);
        expect(sent.body.data.map((d: components['schemas']['WebhookDelivery']) => d.endpoint_id).sort()).toEqual(
          [ENDPOINT_OLD, ENDPOINT_ALL].sort(),
        );
      }
    } finally {
      await server.close();
      await database.drop();
    }
  });
});

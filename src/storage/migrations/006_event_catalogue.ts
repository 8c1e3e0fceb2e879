// The event catalogue of the specification (issue 9) replaced the one that databases created before it hold: old
// type names in endpoint filters, events and deliveries, and member events whose `data` is `{member: {...}}`. Every
// response is validated against the contract, so unconverted rows answered 500. This converts them; docs/webhooks.md
// ("Upgrading from the earlier catalogue") says what becomes of what.
import type { Kysely, Migration } from 'kysely';
import { eventTypeCatalogue } from '../../features/webhooks/events.ts';
import { eventPayload } from '../../features/webhooks/record-event.ts';

/** The earlier catalogue's names that the specification's renamed, old → new. */
export const RENAMED_TYPES: Record<string, string> = {
  'voice.training.completed': 'voice.trained',
  'voice.training.failed': 'voice.training_failed',
  'chatbot.conversation.rated': 'chatbot.csat.received',
  // workflow.run.completed now carries `status`: `failure` is what workflow.run.failed told.
  'workflow.run.failed': 'workflow.run.completed',
  'workflow.run.awaiting_approval': 'workflow.run.approval_required',
  // A saved version is not a publication; document.published is the nearest event the catalogue has.
  'document.version.created': 'document.published',
};

/** Wildcards that no longer select anything, old → the nearest that does. */
const RENAMED_WILDCARDS: Record<string, string> = { 'voice.training.*': 'voice.*', 'document.version.*': 'document.*' };

/** An endpoint's filters in the new catalogue: renamed, de-duplicated, in their first order. */
export function convertFilters(filters: readonly string[]): string[] {
  return [...new Set(filters.map((filter) => RENAMED_TYPES[filter] ?? RENAMED_WILDCARDS[filter] ?? filter))];
}

interface OldMember {
  id: string;
  email: string;
  role: string;
}
interface EventRow {
  id: string;
  workspace_id: string;
  type: string;
  sequence: number | string;
  created_at: string;
}

const MEMBER_TYPES = new Set(['workspace.member.added', 'workspace.member.removed']);

export const eventCatalogue: Migration = {
  async up(untyped: Kysely<unknown>) {
    // biome-ignore lint/suspicious/noExplicitAny: the tables as they were at this migration, not as storage/schema.ts describes them now
    const db = untyped as Kysely<any>;
    const now = new Date().toISOString();

    // Endpoint filters.
    for (const endpoint of await db.selectFrom('webhook_endpoints').select(['id', 'event_types']).execute()) {
      const filters = JSON.parse(endpoint.event_types) as string[];
      const converted = convertFilters(filters);
      if (JSON.stringify(converted) !== JSON.stringify(filters)) {
        await db.updateTable('webhook_endpoints').set({ event_types: JSON.stringify(converted) }).where('id', '=', endpoint.id).execute();
      }
    }

    // The new `data` of an old member event, or undefined when it cannot be made (no remover on record).
    const memberData = async (event: EventRow, data: { member?: OldMember }): Promise<Record<string, unknown> | undefined> => {
      const member = data.member;
      if (!member) return data as Record<string, unknown>; // already in the new shape
      if (event.type === 'workspace.member.added') {
        const user = await db.selectFrom('users').select('name').where('id', '=', member.id).executeTakeFirst();
        return { user_id: member.id, email: member.email, role: member.role, scim_source: null, name: user?.name ?? null };
      }
      // The old event did not say who removed the member; the audit entry written in the same transaction (same
      // workspace, target and instant) names the API key, and migration 003 tells whose key it is.
      const audit = await db
        .selectFrom('audit_log_entries')
        .select('actor_api_key_id')
        .where('workspace_id', '=', event.workspace_id)
        .where('action', '=', 'member.removed')
        .where('target_id', '=', member.id)
        .where('created_at', '=', event.created_at)
        .where('actor_api_key_id', 'is not', null)
        .executeTakeFirst();
      if (!audit) return undefined;
      const key = await db.selectFrom('api_keys').select('user_id').where('id', '=', audit.actor_api_key_id).executeTakeFirst();
      return {
        user_id: member.id,
        removed_at: event.created_at,
        removed_by: key?.user_id ?? audit.actor_api_key_id,
        removed_by_api_key_id: audit.actor_api_key_id,
        email: member.email,
        role: member.role,
      };
    };

    // Events: member events get the new keys. Only the member operations recorded events before, so no other type
    // can be there; one that is (written by hand) cannot be converted and goes, as does a removal nobody audited.
    const doomedEvents: string[] = [];
    for (const event of await db.selectFrom('events').select(['id', 'workspace_id', 'type', 'sequence', 'created_at', 'data']).execute()) {
      const data = MEMBER_TYPES.has(event.type) ? await memberData(event, JSON.parse(event.data)) : undefined;
      if (!data) doomedEvents.push(event.id);
      else await db.updateTable('events').set({ data: JSON.stringify(data) }).where('id', '=', event.id).execute();
    }
    if (doomedEvents.length > 0) await db.deleteFrom('events').where('id', 'in', doomedEvents).execute();

    // Deliveries: the API types `payload` by the event schemas, so delivered ones are rewritten too (their historic
    // bytes would answer 500), and pending ones are sent in the new shape, which receivers now expect. A test
    // delivery carried the example of its type: it gets the example of the new type. A real one gets its event's
    // converted data, made from its own payload (its event may be pruned already while it is still pending). Others
    // (none was ever made: only member events were recorded) cannot be converted and go.
    const examples = new Map(eventTypeCatalogue.map((entry) => [entry.type as string, entry.example_payload.data]));
    const doomedDeliveries: { id: string; endpoint_id: string }[] = [];
    const deliveries = await db.selectFrom('webhook_deliveries').select(['id', 'endpoint_id', 'event_type', 'test', 'payload']).execute();
    for (const delivery of deliveries) {
      const sent = JSON.parse(delivery.payload) as EventRow & { created: string; data: { member?: OldMember } };
      const type = RENAMED_TYPES[delivery.event_type] ?? delivery.event_type;
      const test = Number(delivery.test) === 1;
      let data: unknown;
      if (test) data = examples.get(type);
      else if (MEMBER_TYPES.has(type)) data = await memberData({ ...sent, type, created_at: sent.created }, sent.data);
      if (data === undefined) {
        doomedDeliveries.push(delivery);
        continue;
      }
      const payload = eventPayload(
        { id: sent.id, type, created_at: sent.created, workspace_id: sent.workspace_id, sequence: Number(sent.sequence), data: JSON.stringify(data) },
        test,
      );
      if (payload !== delivery.payload || type !== delivery.event_type) {
        await db.updateTable('webhook_deliveries').set({ event_type: type, payload }).where('id', '=', delivery.id).execute();
      }
    }
    if (doomedDeliveries.length > 0) {
      await db.deleteFrom('webhook_deliveries').where('id', 'in', doomedDeliveries.map((d) => d.id)).execute();
      // A deleted delivery may have been its endpoint's queue head: the next pending one becomes due (the worker's
      // startNextInQueue, for a queue whose head is gone).
      for (const endpointId of new Set(doomedDeliveries.map((d) => d.endpoint_id))) {
        const pending = await db
          .selectFrom('webhook_deliveries')
          .select(['id', 'next_attempt_at'])
          .where('endpoint_id', '=', endpointId)
          .where('status', '=', 'pending')
          .where('ordered', '=', 1)
          .orderBy('sequence')
          .execute();
        if (pending.length > 0 && pending.every((d) => d.next_attempt_at === null)) {
          await db.updateTable('webhook_deliveries').set({ next_attempt_at: now }).where('id', '=', pending[0]!.id).execute();
        }
      }
    }
  },
};

// The event catalogue of the specification replaced the one that databases created before it hold: old
// type names in endpoint filters, events and deliveries, and member events whose `data` is `{member: {...}}`. Every
// response is validated against the contract, so unconverted rows answered 500. This converts them; docs/webhooks.md
// ("Upgrading from the earlier catalogue") says what becomes of what.
//
// A migration runs as it was written, whatever the code becomes: what it needs from the webhooks feature (the example
// `data` of each event type, the delivered envelope) is copied here as it was when this migration was written, not
// imported: the feature's code changes later, a migration never does.
import type { Kysely, Migration } from 'kysely';

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
        await db
          .updateTable('webhook_endpoints')
          .set({ event_types: JSON.stringify(converted) })
          .where('id', '=', endpoint.id)
          .execute();
      }
    }

    // The new `data` of an old member event, or undefined when it cannot be made (no remover on record).
    const memberData = async (
      event: EventRow,
      data: { member?: OldMember },
    ): Promise<Record<string, unknown> | undefined> => {
      const member = data.member;
      if (!member) return data as Record<string, unknown>; // already in the new shape
      if (event.type === 'workspace.member.added') {
        const user = await db.selectFrom('users').select('name').where('id', '=', member.id).executeTakeFirst();
        return {
          user_id: member.id,
          email: member.email,
          role: member.role,
          scim_source: null,
          name: user?.name ?? null,
        };
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
      const key = await db
        .selectFrom('api_keys')
        .select('user_id')
        .where('id', '=', audit.actor_api_key_id)
        .executeTakeFirst();
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
    for (const event of await db
      .selectFrom('events')
      .select(['id', 'workspace_id', 'type', 'sequence', 'created_at', 'data'])
      .execute()) {
      const data = MEMBER_TYPES.has(event.type) ? await memberData(event, JSON.parse(event.data)) : undefined;
      if (!data) doomedEvents.push(event.id);
      else
        await db
          .updateTable('events')
          .set({ data: JSON.stringify(data) })
          .where('id', '=', event.id)
          .execute();
    }
    if (doomedEvents.length > 0) await db.deleteFrom('events').where('id', 'in', doomedEvents).execute();

    // Deliveries: the API types `payload` by the event schemas, so delivered ones are rewritten too (their historic
    // bytes would answer 500), and pending ones are sent in the new shape, which receivers now expect. A test
    // delivery carried the example of its type: it gets the example of the new type. A real one gets its event's
    // converted data, made from its own payload (its event may be pruned already while it is still pending). Others
    // (none was ever made: only member events were recorded) cannot be converted and go.
    const examples = new Map(Object.entries(EXAMPLE_DATA));
    const doomedDeliveries: { id: string; endpoint_id: string }[] = [];
    const deliveries = await db
      .selectFrom('webhook_deliveries')
      .select(['id', 'endpoint_id', 'event_type', 'test', 'payload'])
      .execute();
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
        {
          id: sent.id,
          type,
          created_at: sent.created,
          workspace_id: sent.workspace_id,
          sequence: Number(sent.sequence),
          data: JSON.stringify(data),
        },
        test,
      );
      if (payload !== delivery.payload || type !== delivery.event_type) {
        await db
          .updateTable('webhook_deliveries')
          .set({ event_type: type, payload })
          .where('id', '=', delivery.id)
          .execute();
      }
    }
    if (doomedDeliveries.length > 0) {
      await db
        .deleteFrom('webhook_deliveries')
        .where(
          'id',
          'in',
          doomedDeliveries.map((d) => d.id),
        )
        .execute();
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
          await db
            .updateTable('webhook_deliveries')
            .set({ next_attempt_at: now })
            .where('id', '=', pending[0]!.id)
            .execute();
        }
      }
    }
  },
};

/** The envelope of an event as delivered (webhooks' `eventPayload` when this migration was written): the exact text. */
function eventPayload(
  event: { id: string; type: string; created_at: string; workspace_id: string; sequence: number; data: string },
  test: boolean,
): string {
  return (
    `{"id":${JSON.stringify(event.id)},"object":"event","type":${JSON.stringify(event.type)},"created":${JSON.stringify(event.created_at)},` +
    `"workspace_id":${JSON.stringify(event.workspace_id)},"sequence":${Number(event.sequence)},"test":${test},"data":${event.data}}`
  );
}

/** The contract's example `data` of each event type of the catalogue this migration converts to (its test deliveries). */
const EXAMPLE_DATA: Record<string, unknown> = {
  'chat.message.created': {
    thread_id: 'thr_01JDA4M7Q2X9F3K8N5P6R1S2T3',
    message_id: 'msg_01JDHQKB6Y3P8S1V4X7Z0C2E5G',
    role: 'assistant',
    content: 'Spring is here, and so are our new single-origin roasts. Fresh from the drum every Tuesday and Friday.',
    model: 'gpt-4o-mini',
    voice_id: 'voc_01JD2Q7F8X3M4N5P6R7S8T9V0W',
  },
  'document.published': {
    document_id: 'doc_01JD1F4G5H6J7K8M9N0P1Q2R3S',
    published_at: '2026-11-20T11:47:30.911Z',
    author: 'usr_01JCZ8Q3W4E5R6T7Y8V9X0Z1A2',
    project_id: 'prj_01JD1N4Q8R2S5T7V9W3X6Y0Z1A',
    title: 'Spring launch announcement',
  },
  'voice.trained': {
    voice_id: 'voc_01JD2Q7F8X3M4N5P6R7S8T9V0W',
    sample_word_count: 256,
    sliders: {
      formality: 28,
      warmth: 78,
      humor: 35,
      enthusiasm: 45,
      conciseness: 62,
      complexity: 22,
      assertiveness: 58,
    },
    banned_phrases: ['world-class', 'game-changer', 'synergy', 'artisanal', 'unparalleled', 'elevate your'],
    name: 'Northwind house voice',
    language: 'en-GB',
    trained_at: '2026-11-20T10:04:51.622Z',
  },
  'chatbot.conversation.escalated': {
    conversation_id: 'conv_01JDQKFBF5KZNWJ47TAN9ZT24M',
    intent: 'billing',
    transcript_url:
      'https://eu.content-service.example/v1/chatbots/bot_01JDDJ8FSSZ5AWSH8VHTPRE95B/conversations/conv_01JDQKFBF5KZNWJ47TAN9ZT24M',
    requested_agent: 'the billing team',
    chatbot_id: 'bot_01JDDJ8FSSZ5AWSH8VHTPRE95B',
    source: 'manual',
    reason: 'complaint',
    note: 'Wants a refund on the annual plan; needs a human decision.',
  },
  'chatbot.csat.received': {
    conversation_id: 'conv_01JDNPZX45HY43KWJRP1XPA7Z3',
    score: 4,
    comment: 'Quick answer, but I had to ask twice.',
    language: 'en-GB',
    chatbot_id: 'bot_01JDDJ8FSSZ5AWSH8VHTPRE95B',
    source: 'embed',
  },
  'workflow.run.completed': {
    workflow_id: 'wf_01JD3E28JT97KB6CQ643DZVMXX',
    run_id: 'run_01JDRNJ47E65GH2BH8VGS9ZM5H',
    status: 'success',
    duration_ms: 5521034,
    cost_usd: 0.0417,
    error: null,
  },
  'workflow.run.approval_required': {
    workflow_id: 'wf_01JD3E28JT97KB6CQ643DZVMXX',
    run_id: 'run_01JDM9S346Q3D25VT4F5V37E3S',
    step_id: 'legal_review',
    approval_url:
      'https://eu.content-service.example/v1/workflows/wf_01JD3E28JT97KB6CQ643DZVMXX/runs/run_01JDM9S346Q3D25VT4F5V37E3S/steps/legal_review/approve',
    approver_role: 'admin',
    expires_at: '2026-11-22T13:40:33.071Z',
  },
  'workspace.member.added': {
    user_id: 'usr_01JD9EE0ZBGJ09TQM83XSSSS6Y',
    email: 'priya.nair@acme-marketing.example',
    role: 'editor',
    scim_source: null,
    name: 'Priya Nair',
  },
  'workspace.member.removed': {
    user_id: 'usr_01JD9GPQY77ZXYYK596NGYA1DQ',
    removed_at: '2026-11-20T09:30:02.117Z',
    removed_by: 'usr_01JCZ8Q3W4E5R6T7Y8V9X0Z1A2',
    removed_by_api_key_id: 'key_01JD1C2D3E4F5G6H7J8K9M0N1P',
    email: 'tom.becker@acme-marketing.example',
    role: 'viewer',
  },
  'audit.policy.violation': {
    rule_id: 'voice.banned_phrases',
    project_id: 'prj_01JD1N4Q8R2S5T7V9W3X6Y0Z1A',
    user_id: 'usr_01JCZ8Q3W4E5R6T7Y8V9X0Z1A2',
    blocked_at: '2026-11-20T14:11:52.391Z',
    reason: 'The output used the banned phrase "world-class" of the voice Northwind house voice.',
    voice_id: 'voc_01JD2Q7F8X3M4N5P6R7S8T9V0W',
  },
  'chat.thread.deleted': {
    thread_id: 'thr_01JD804GVA35RJFJ2XBAHW0GQN',
    deleted_at: '2026-11-20T14:26:45.802Z',
  },
  'voice.training_failed': {
    voice_id: 'voc_01JDYP57RCYBVN5SXS5AA819X9',
    failure_reason: 'sample_not_distinctive',
    failure_message:
      'The sample mixes five unrelated styles (legal notice, social post, recipe, press release, formal apology); send about 300 words of typical copy in one style.',
    sample_word_count: 214,
    name: 'Support replies',
  },
};

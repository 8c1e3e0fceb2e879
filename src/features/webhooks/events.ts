// Events: the one way a feature tells subscribers what happened. `recordEvent` writes the event and its deliveries
// in the transaction of the change (no event without its change, no change without its event), then the delivery
// worker sends them. Also the catalogue of event types, read from the contract, and GET /v1/events, /v1/event-types.
import type { Kysely, Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import type { EventType } from '../../../generated/webhooks.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { paginate, pageRequest, toPage } from '../../platform/pagination.ts';
import { RETENTION_DAYS } from '../../platform/retention.ts';
import { notFound } from '../../platform/problems.ts';
import { openApiDocument } from '../../platform/spec.ts';
import type { Database, EventsTable } from '../../storage/schema.ts';
import { parseInstant } from '../workspace/time.ts';
import { deliveriesCreated } from './signal.ts';
import { forUpdate } from '../../storage/locks.ts';

type Schemas = components['schemas'];
/** The `data` of an event type, from its schema in the contract (`WorkspaceMemberAddedEvent`…). */
type EventSchemaName<T extends EventType> = { [K in keyof Schemas]: Schemas[K] extends { object: 'event'; type: T } ? K : never }[keyof Schemas];
export type EventData<T extends EventType> = Schemas[EventSchemaName<T>] extends { data: infer D } ? D : never;

// ---------------------------------------------------------------------------------------------------------------
// The catalogue, from the contract: the EventType enum (in its order), and for each type its webhook in the
// OpenAPI `webhooks` section (description, schema, example).

interface WebhookOperation {
  description: string;
  requestBody: { content: { 'application/json': { schema: { $ref: string }; examples: Record<string, { $ref: string }> } } };
}
const components_ = openApiDocument.components as { schemas: Record<string, { enum?: string[] }>; examples: Record<string, { value: unknown }> };
const webhooks = openApiDocument.webhooks as Record<string, { post: WebhookOperation }>;

/** Every event type, in the order of the contract's EventType enum. */
export const EVENT_TYPE_ORDER = components_.schemas.EventType!.enum as EventType[];

export const eventTypeCatalogue: Schemas['EventTypeDescriptor'][] = EVENT_TYPE_ORDER.map((type) => {
  const operation = webhooks[type]!.post;
  const body = operation.requestBody.content['application/json'];
  const exampleRef = Object.values(body.examples)[0]!.$ref;
  return {
    object: 'event_type',
    type,
    // The first paragraph says when the event happens and what `data` holds; the rest is delivery boilerplate.
    description: operation.description.split('\n\n')[0]!.replace(/\s+/g, ' ').trim(),
    schema_name: body.schema.$ref.replace('#/components/schemas/', ''),
    example_payload: components_.examples[exampleRef.replace('#/components/examples/', '')]!.value as Schemas['Event'],
  };
});

/** Whether an endpoint's filters (exact types, `prefix.*` wildcards of whole segments, `*`) select this type. */
export function filterMatches(filter: string, type: string): boolean {
  if (filter === '*' || filter === type) return true;
  return filter.endsWith('.*') && type.startsWith(filter.slice(0, -1));
}

export function filtersMatch(filters: readonly string[], type: string): boolean {
  return filters.some((filter) => filterMatches(filter, type));
}

/** The known types a filter selects, for `type in (…)` queries. */
export function typesMatching(filter: string): EventType[] {
  return EVENT_TYPE_ORDER.filter((type) => filterMatches(filter, type));
}

// ---------------------------------------------------------------------------------------------------------------
// Recording.

/**
 * The event as delivered and as GET /v1/events shows it, as the exact JSON text of every delivery: the envelope's
 * fields in the contract's order, then `data` as it was stored.
 */
export function eventPayload(event: Pick<EventsTable, 'id' | 'type' | 'created_at' | 'workspace_id' | 'sequence' | 'data'>, test = false): string {
  return (
    `{"id":${JSON.stringify(event.id)},"object":"event","type":${JSON.stringify(event.type)},"created":${JSON.stringify(event.created_at)},` +
    `"workspace_id":${JSON.stringify(event.workspace_id)},"sequence":${Number(event.sequence)},"test":${test},"data":${event.data}}`
  );
}

/**
 * Records an event of the workspace in the caller's transaction, with the next `sequence`, and creates its
 * deliveries to every enabled endpoint that subscribes to the type. `data` is typed by the contract's event schema.
 */
export async function recordEvent<T extends EventType>(trx: Transaction<Database>, workspaceId: string, type: T, data: EventData<T>, now: Date): Promise<string> {
  // The row lock of this update orders concurrent events of one workspace (PostgreSQL); SQLite has one writer.
  const { event_sequence } = await trx
    .updateTable('workspaces')
    .set((eb) => ({ event_sequence: eb('event_sequence', '+', 1) }))
    .where('id', '=', workspaceId)
    .returning('event_sequence')
    .executeTakeFirstOrThrow();
  const event = { id: newId('evt', now), workspace_id: workspaceId, type, sequence: Number(event_sequence), data: JSON.stringify(data), created_at: iso(now) };
  await trx.insertInto('events').values(event).execute();

  // The endpoints' rows are locked until commit: the worker, finishing an endpoint's queue head, takes the same lock
  // before it looks for the next one, so it cannot miss a delivery that this transaction queues behind the head.
  const endpoints = await forUpdate(
    trx.selectFrom('webhook_endpoints').select(['id', 'event_types']).where('workspace_id', '=', workspaceId).where('enabled', '=', 1),
    trx,
  ).execute();
  const subscribed = endpoints.filter((endpoint) => filtersMatch(JSON.parse(endpoint.event_types) as string[], type)).map((e) => e.id);
  if (subscribed.length === 0) return event.id;
  // Per endpoint, a delivery waits (next_attempt_at null) while an earlier one of the queue is still pending.
  const busy = new Set(
    (
      await trx
        .selectFrom('webhook_deliveries')
        .select('endpoint_id')
        .distinct()
        .where('endpoint_id', 'in', subscribed)
        .where('status', '=', 'pending')
        .where('ordered', '=', 1)
        .execute()
    ).map((row) => row.endpoint_id),
  );
  const payload = eventPayload(event);
  await trx
    .insertInto('webhook_deliveries')
    .values(
      subscribed.map((endpointId) => ({
        id: newId('dlv', now),
        workspace_id: workspaceId,
        endpoint_id: endpointId,
        event_id: event.id,
        event_type: type,
        sequence: event.sequence,
        ordered: 1,
        manual: 0,
        test: 0,
        payload,
        status: 'pending' as const,
        attempt_count: 0,
        next_attempt_at: busy.has(endpointId) ? null : event.created_at,
        last_attempt_at: null,
        last_response_status_code: null,
        delivered_at: null,
        created_at: event.created_at,
        leased_until: null,
        lease_token: null,
      })),
    )
    .execute();
  await deliveriesCreated(trx);
  return event.id;
}

// ---------------------------------------------------------------------------------------------------------------
// The API.

const DAY_MS = 86_400_000;

/** The oldest instant of the event window: older events are pruned and can be neither listed nor replayed. */
export function eventWindowStart(now: Date): string {
  return iso(new Date(now.getTime() - RETENTION_DAYS.events * DAY_MS));
}

export function presentEvent(row: EventsTable): Schemas['Event'] {
  return JSON.parse(eventPayload(row)) as Schemas['Event'];
}

const utc = (value: string) => iso(parseInstant(value));

export function eventsOf(db: Kysely<Database> | Transaction<Database>, workspaceId: string, now: Date) {
  return db.selectFrom('events').selectAll().where('workspace_id', '=', workspaceId).where('created_at', '>=', eventWindowStart(now));
}

export const eventHandlers = {
  async listEvents(request, context) {
    const { type, created_gte, created_lt } = request.query;
    const page = pageRequest(request.query);
    let query = eventsOf(context.platform.db, context.caller.workspace.id, context.now);
    if (type && type !== '*') query = query.where('type', 'in', [...typesMatching(type), '']);
    if (created_gte) query = query.where('created_at', '>=', utc(created_gte));
    if (created_lt) query = query.where('created_at', '<', utc(created_lt));
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const { body, headers } = toPage(rows, page, (row) => ({ id: row.id }), presentEvent, context.url);
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async getEvent(request, context) {
    const row = await eventsOf(context.platform.db, context.caller.workspace.id, context.now).where('id', '=', request.path.id).executeTakeFirst();
    if (!row) throw notFound('event', request.path.id);
    return { status: 200, contentType: 'application/json', body: presentEvent(row) };
  },

  async listEventTypes() {
    return { status: 200, contentType: 'application/json', body: { data: eventTypeCatalogue, next_cursor: null } };
  },
} satisfies Pick<Handlers<RequestContext>, 'listEvents' | 'getEvent' | 'listEventTypes'>;

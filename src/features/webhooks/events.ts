// The catalogue of event types, read from the contract, and GET /v1/events, /v1/event-types. Features record events
// with recordEvent (record-event.ts).
import type { Kysely, Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import type { EventType } from '../../../generated/webhooks.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { parseInstant } from '../../platform/instant.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound } from '../../platform/problems.ts';
import { RETENTION_DAYS } from '../../platform/retention.ts';
import { openApiDocument } from '../../platform/spec.ts';
import type { Database } from '../../storage/schema.ts';
import { eventPayload, filterMatches } from './record-event.ts';
import type { EventsTable } from './schema.ts';

type Schemas = components['schemas'];

// ---------------------------------------------------------------------------------------------------------------
// The catalogue, from the contract: the EventType enum (in its order), and for each type its webhook in the
// OpenAPI `webhooks` section (description, schema, example).

interface WebhookOperation {
  description: string;
  requestBody: {
    content: { 'application/json': { schema: { $ref: string }; examples: Record<string, { $ref: string }> } };
  };
}
const components_ = openApiDocument.components as {
  schemas: Record<string, { enum?: string[] }>;
  examples: Record<string, { value: unknown }>;
};
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

/** The known types a filter selects, for `type in (…)` queries. */
export function typesMatching(filter: string): EventType[] {
  return EVENT_TYPE_ORDER.filter((type) => filterMatches(filter, type));
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
  return db
    .selectFrom('events')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('created_at', '>=', eventWindowStart(now));
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
    const row = await eventsOf(context.platform.db, context.caller.workspace.id, context.now)
      .where('id', '=', request.path.id)
      .executeTakeFirst();
    if (!row) throw notFound('event', request.path.id);
    return { status: 200, contentType: 'application/json', body: presentEvent(row) };
  },

  async listEventTypes() {
    return { status: 200, contentType: 'application/json', body: { data: eventTypeCatalogue, next_cursor: null } };
  },
} satisfies Pick<Handlers<RequestContext>, 'listEvents' | 'getEvent' | 'listEventTypes'>;

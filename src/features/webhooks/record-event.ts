// recordEvent: the one way a feature tells subscribers what happened. It writes the event and its deliveries in the
// transaction of the change (no event without its change, no change without its event); the delivery worker then
// sends them. Every feature calls it as
//
//     await recordEvent(trx, workspaceId, 'document.published', { ...the data of the contract's event schema }, now);
import { sql, type Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { EventType } from '../../../generated/webhooks.ts';
import { iso } from '../../platform/clock.ts';
import { newId } from '../../platform/ids.ts';
import { notifyOnCommit } from '../../platform/jobs/notify.ts';
import { forUpdate } from '../../storage/locks.ts';
import { ONE, PENDING } from '../../storage/partial-indexes.ts';
import type { Database } from '../../storage/schema.ts';
import { DELIVERIES_CHANNEL } from './channel.ts';
import type { EventsTable } from './schema.ts';

export type { EventType };

type Schemas = components['schemas'];
/** The `data` of an event type, from its schema in the contract (`WorkspaceMemberAddedEvent`…). */
type EventSchemaName<T extends EventType> = {
  [K in keyof Schemas]: Schemas[K] extends { object: 'event'; type: T } ? K : never;
}[keyof Schemas];
export type EventData<T extends EventType> = Schemas[EventSchemaName<T>] extends { data: infer D } ? D : never;

/**
 * The event as delivered and as GET /v1/events shows it, as the exact JSON text of every delivery: the envelope's
 * fields in the contract's order, then `data` as it was stored.
 */
export function eventPayload(
  event: Pick<EventsTable, 'id' | 'type' | 'created_at' | 'workspace_id' | 'sequence' | 'data'>,
  test = false,
): string {
  return (
    `{"id":${JSON.stringify(event.id)},"object":"event","type":${JSON.stringify(event.type)},"created":${JSON.stringify(event.created_at)},` +
    `"workspace_id":${JSON.stringify(event.workspace_id)},"sequence":${Number(event.sequence)},"test":${test},"data":${event.data}}`
  );
}

/**
 * Records an event of the workspace in the caller's transaction, with the next `sequence`, and creates its
 * deliveries to every enabled endpoint that subscribes to the type. `data` is typed by the contract's event schema.
 */
export async function recordEvent<T extends EventType>(
  trx: Transaction<Database>,
  workspaceId: string,
  type: T,
  data: EventData<T>,
  now: Date,
): Promise<string> {
  // The row lock of this update orders concurrent events of one workspace (PostgreSQL); SQLite has one writer.
  const { event_sequence } = await trx
    .updateTable('workspaces')
    .set((eb) => ({ event_sequence: eb('event_sequence', '+', 1) }))
    .where('id', '=', workspaceId)
    .returning('event_sequence')
    .executeTakeFirstOrThrow();
  const event = {
    id: newId('evt', now),
    workspace_id: workspaceId,
    type,
    sequence: Number(event_sequence),
    data: JSON.stringify(data),
    created_at: iso(now),
  };
  await trx.insertInto('events').values(event).execute();

  // The endpoints' rows are locked until commit: the worker, finishing an endpoint's queue head, takes the same lock
  // before it looks for the next one, so it cannot miss a delivery that this transaction queues behind the head. In id
  // order, as the worker takes them (two transactions locking the same rows in different orders could deadlock).
  const endpoints = await forUpdate(
    trx
      .selectFrom('webhook_endpoints')
      .select(['id', 'event_types'])
      .where('workspace_id', '=', workspaceId)
      .where('enabled', '=', 1)
      .orderBy('id'),
    trx,
  ).execute();
  const subscribed = endpoints
    .filter((endpoint) => filtersMatch(JSON.parse(endpoint.event_types) as string[], type))
    .map((e) => e.id);
  if (subscribed.length === 0) return event.id;
  // Per endpoint, a delivery waits (next_attempt_at null) while an earlier one of the queue is still pending.
  // One probe of the queue index per endpoint (a `distinct` over the pending deliveries read every one of them).
  const busy = new Set(
    (
      await trx
        .selectFrom('webhook_endpoints as e')
        .select('e.id')
        .where('e.id', 'in', subscribed)
        .where(({ exists, selectFrom }) =>
          exists(
            selectFrom('webhook_deliveries as d')
              .select(sql.lit(1).as('one'))
              .whereRef('d.endpoint_id', '=', 'e.id')
              .where('d.status', '=', PENDING)
              .where('d.ordered', '=', ONE),
          ),
        )
        .execute()
    ).map((row) => row.id),
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
  await notifyOnCommit(trx, DELIVERIES_CHANNEL);
  return event.id;
}

/** Whether an endpoint's filters (exact types, `prefix.*` wildcards of whole segments, `*`) select this type. */
export function filterMatches(filter: string, type: string): boolean {
  if (filter === '*' || filter === type) return true;
  return filter.endsWith('.*') && type.startsWith(filter.slice(0, -1));
}

export function filtersMatch(filters: readonly string[], type: string): boolean {
  return filters.some((filter) => filterMatches(filter, type));
}

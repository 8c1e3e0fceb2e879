// Deliveries: their history (every attempt, the payload), test events, and replay. Tests and replays go out at
// once, outside their endpoint's ordered queue (`ordered` 0); a replay is retried on the usual schedule, a test
// is attempted once.
import type { Transaction } from 'kysely';
import { decodeTime } from 'ulid';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import { byRequest, recordAudit } from '../../platform/audit.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { parseInstant } from '../../platform/instant.ts';
import { notifyOnCommit } from '../../platform/jobs/notify.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem } from '../../platform/problems.ts';
import { isPostgres } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';
import { DELIVERIES_CHANNEL } from './channel.ts';
import { EVENT_TYPE_ORDER, eventTypeCatalogue, eventWindowStart, typesMatching } from './events.ts';
import { presentDelivery, presentDeliverySummary } from './presenters.ts';
import { eventPayload, filtersMatch } from './record-event.ts';
import type { WebhookDeliveriesTable } from './schema.ts';

type Schemas = components['schemas'];
const utc = (value: string) => iso(parseInstant(value));

/** A delivery that goes out at once, outside the ordered queue. */
function manualDelivery(
  now: Date,
  workspaceId: string,
  endpointId: string,
  event: { id: string; type: string; sequence: number },
  payload: string,
  test: boolean,
): WebhookDeliveriesTable {
  return {
    id: newId('dlv', now),
    workspace_id: workspaceId,
    endpoint_id: endpointId,
    event_id: event.id,
    event_type: event.type,
    sequence: event.sequence,
    ordered: 0,
    manual: 1,
    test: test ? 1 : 0,
    payload,
    status: 'pending',
    attempt_count: 0,
    next_attempt_at: iso(now),
    last_attempt_at: null,
    last_response_status_code: null,
    delivered_at: null,
    created_at: iso(now),
    leased_until: null,
    lease_token: null,
  };
}

/** When an event id says it was made (ms); undefined for an id that fits the pattern but is no ULID (time too large). */
function idTime(eventId: string): number | undefined {
  try {
    return decodeTime(eventId.slice('evt_'.length));
  } catch {
    return undefined;
  }
}

function deliveriesOf(db: RequestContext['platform']['db'] | Transaction<Database>, workspaceId: string, now: Date) {
  // The 30 days of history, and any delivery still pending (retention keeps those until they end).
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where((eb) => eb.or([eb('created_at', '>=', eventWindowStart(now)), eb('status', '=', 'pending')]));
}

export const deliveryHandlers = {
  async sendWebhookEndpointTest(request, context) {
    const workspace = context.caller.workspace;
    const delivery = await context.platform.db.transaction().execute(async (trx) => {
      const endpoint = await trx
        .selectFrom('webhook_endpoints')
        .select(['id', 'event_types'])
        .where('workspace_id', '=', workspace.id)
        .where('id', '=', request.path.id)
        .executeTakeFirst();
      if (!endpoint) throw notFound('webhook endpoint', request.path.id);
      const filters = JSON.parse(endpoint.event_types) as string[];
      const type =
        request.body?.event_type ?? EVENT_TYPE_ORDER.find((t) => filtersMatch(filters, t)) ?? EVENT_TYPE_ORDER[0]!;
      const example = eventTypeCatalogue.find((entry) => entry.type === type)!.example_payload;
      const { event_sequence } = await trx
        .selectFrom('workspaces')
        .select('event_sequence')
        .where('id', '=', workspace.id)
        .executeTakeFirstOrThrow();
      // The example's data under a new id, now, in this workspace. `sequence` repeats the workspace's latest (at
      // least 1, the schema's minimum) so that it is never mistaken for a gap.
      const event = { id: newId('evt', context.now), type, sequence: Math.max(1, Number(event_sequence)) };
      const payload = eventPayload(
        { ...event, created_at: iso(context.now), workspace_id: workspace.id, data: JSON.stringify(example.data) },
        true,
      );
      const row = manualDelivery(context.now, workspace.id, endpoint.id, event, payload, true);
      await trx.insertInto('webhook_deliveries').values(row).execute();
      await notifyOnCommit(trx, DELIVERIES_CHANNEL);
      return row;
    });
    return { status: 202, contentType: 'application/json', body: presentDelivery(delivery, []) };
  },

  async listWebhookDeliveries(request, context) {
    const { endpoint_id, event_id, event_type, status, created_gte, created_lt } = request.query;
    const page = pageRequest(request.query);
    let query = deliveriesOf(context.platform.db, context.caller.workspace.id, context.now);
    if (endpoint_id) query = query.where('endpoint_id', '=', endpoint_id);
    if (event_id) query = query.where('event_id', '=', event_id);
    if (event_type && event_type !== '*') query = query.where('event_type', 'in', [...typesMatching(event_type), '']);
    if (status) query = query.where('status', '=', status);
    if (created_gte) query = query.where('created_at', '>=', utc(created_gte));
    if (created_lt) query = query.where('created_at', '<', utc(created_lt));
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const { body, headers } = toPage(rows, page, (row) => ({ id: row.id }), presentDeliverySummary, context.url);
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async getWebhookDelivery(request, context) {
    const { db } = context.platform;
    // One snapshot for both reads: the worker records an attempt and the delivery's new state in one transaction, and
    // two reads apart could straddle it (PostgreSQL's read committed showed an attempt while attempt_count was still 0).
    const transaction = isPostgres(db) ? db.transaction().setIsolationLevel('repeatable read') : db.transaction();
    const found = await transaction.execute(async (trx) => {
      const row = await deliveriesOf(trx, context.caller.workspace.id, context.now)
        .where('id', '=', request.path.id)
        .executeTakeFirst();
      if (!row) return undefined;
      const attempts = await trx
        .selectFrom('webhook_attempts')
        .selectAll()
        .where('delivery_id', '=', row.id)
        .orderBy('number')
        .execute();
      return { row, attempts };
    });
    if (!found) throw notFound('webhook delivery', request.path.id);
    return { status: 200, contentType: 'application/json', body: presentDelivery(found.row, found.attempts) };
  },

  async replayWebhookEvents(request, context) {
    const { event_ids, endpoint_id } = request.body;
    const workspaceId = context.caller.workspace.id;
    const windowStart = eventWindowStart(context.now);
    const created = await context.platform.db.transaction().execute(async (trx) => {
      const endpoints = await trx
        .selectFrom('webhook_endpoints')
        .select(['id', 'event_types'])
        .where('workspace_id', '=', workspaceId)
        .$if(endpoint_id !== undefined, (q) => q.where('id', '=', endpoint_id!))
        .$if(endpoint_id === undefined, (q) => q.where('enabled', '=', 1))
        .orderBy('id')
        .execute();
      if (endpoint_id !== undefined && endpoints.length === 0) {
        throw new Problem('not_found', `No webhook endpoint ${endpoint_id} in this workspace.`, {
          errors: [{ pointer: '/endpoint_id', detail: 'no such webhook endpoint' }],
        });
      }
      const events = new Map(
        (
          await trx
            .selectFrom('events')
            .selectAll()
            .where('workspace_id', '=', workspaceId)
            .where('id', 'in', event_ids)
            .execute()
        ).map((e) => [e.id, e]),
      );
      // All or nothing: every event is checked before any delivery is created.
      event_ids.forEach((id, i) => {
        const event = events.get(id);
        // An event past the window may be pruned already; its id still tells when it happened.
        const happened = event ? Date.parse(event.created_at) : idTime(id);
        if (happened !== undefined && happened < Date.parse(windowStart)) {
          throw new Problem(
            'event_too_old',
            `Event ${id} happened at ${iso(new Date(happened))}, more than 30 days ago; only events of the last 30 days can be replayed.`,
            {
              errors: [{ pointer: `/event_ids/${i}`, detail: 'older than 30 days' }],
            },
          );
        }
        if (!event)
          throw new Problem('not_found', `No event ${id} in this workspace.`, {
            errors: [{ pointer: `/event_ids/${i}`, detail: 'no such event' }],
          });
      });
      const rows: WebhookDeliveriesTable[] = [];
      for (const id of event_ids) {
        const event = events.get(id)!;
        const payload = eventPayload(event);
        for (const endpoint of endpoints) {
          if (endpoint_id === undefined && !filtersMatch(JSON.parse(endpoint.event_types) as string[], event.type))
            continue;
          rows.push(
            manualDelivery(
              context.now,
              workspaceId,
              endpoint.id,
              { id: event.id, type: event.type, sequence: Number(event.sequence) },
              payload,
              false,
            ),
          );
        }
      }
      if (rows.length > 0) {
        await trx.insertInto('webhook_deliveries').values(rows).execute();
        await notifyOnCommit(trx, DELIVERIES_CHANNEL);
      }
      await recordAudit(trx, byRequest(context), {
        action: 'webhook.replay_requested',
        target: endpoint_id
          ? { type: 'webhook_endpoint', id: endpoint_id, display_name: null }
          : { type: 'workspace', id: workspaceId, display_name: null },
        details: { event_count: event_ids.length, delivery_count: rows.length, endpoint_id: endpoint_id ?? null },
      });
      return rows;
    });
    const body: Schemas['WebhookReplay'] = { object: 'webhook_replay', data: created.map(presentDeliverySummary) };
    return { status: 202, contentType: 'application/json', body };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  'sendWebhookEndpointTest' | 'listWebhookDeliveries' | 'getWebhookDelivery' | 'replayWebhookEvents'
>;

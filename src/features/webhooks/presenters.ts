// Webhook rows as the API shows them (the shapes are the spec's, through the generated types).
import type { Selectable } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import { iso } from '../../platform/clock.ts';
import type { WebhookAttemptsTable, WebhookDeliveriesTable, WebhookEndpointsTable } from './schema.ts';

type Schemas = components['schemas'];

export function presentEndpoint(row: Selectable<WebhookEndpointsTable>, now: Date): Schemas['WebhookEndpoint'] {
  const previousActive = row.previous_secret_expires_at !== null && row.previous_secret_expires_at > iso(now);
  return {
    id: row.id,
    object: 'webhook_endpoint',
    created_at: row.created_at,
    updated_at: row.updated_at,
    url: row.url,
    description: row.description,
    event_types: JSON.parse(row.event_types) as Schemas['WebhookEndpoint']['event_types'],
    enabled: row.enabled === 1,
    metadata: JSON.parse(row.metadata) as Schemas['Metadata'],
    previous_secret_expires_at: previousActive ? row.previous_secret_expires_at : null,
  };
}

export function presentEndpointWithSecret(
  row: Selectable<WebhookEndpointsTable>,
  now: Date,
): Schemas['WebhookEndpointWithSecret'] {
  return { ...presentEndpoint(row, now), secret: row.secret };
}

export function presentDeliverySummary(row: Selectable<WebhookDeliveriesTable>): Schemas['WebhookDeliverySummary'] {
  return {
    id: row.id,
    object: 'webhook_delivery',
    endpoint_id: row.endpoint_id,
    event_id: row.event_id,
    event_type: row.event_type as Schemas['EventType'],
    status: row.status,
    attempt_count: row.attempt_count,
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at : null,
    last_attempt_at: row.last_attempt_at,
    last_response_status_code: row.last_response_status_code,
    manual: row.manual === 1,
    test: row.test === 1,
    created_at: row.created_at,
    delivered_at: row.delivered_at,
  };
}

export function presentDelivery(
  row: Selectable<WebhookDeliveriesTable>,
  attempts: Selectable<WebhookAttemptsTable>[],
): Schemas['WebhookDelivery'] {
  return {
    ...presentDeliverySummary(row),
    attempts: attempts.map((attempt) => ({
      number: attempt.number,
      trigger: attempt.trigger,
      started_at: attempt.started_at,
      status: attempt.status,
      response_status_code: attempt.response_status_code,
      response_body: attempt.response_body,
      duration_ms: attempt.duration_ms,
      error: attempt.error,
    })),
    payload: JSON.parse(row.payload) as Schemas['Event'],
  };
}

// The webhooks feature's tables: the events it records (each workspace's, in order), the endpoints they are sent to,
// and every delivery and attempt. Merged into the platform's Database interface (see src/features/projects/schema.ts).
declare module '../../storage/schema.ts' {
  interface Database {
    events: EventsTable;
    webhook_endpoints: WebhookEndpointsTable;
    webhook_deliveries: WebhookDeliveriesTable;
    webhook_attempts: WebhookAttemptsTable;
  }
}

export interface EventsTable {
  id: string;
  workspace_id: string;
  type: string;
  /** Per-workspace counter, from workspaces.event_sequence. */
  sequence: number;
  /** JSON of the event's `data`. */
  data: string;
  created_at: string;
}

export interface WebhookEndpointsTable {
  id: string;
  workspace_id: string;
  url: string;
  description: string | null;
  /** JSON array of event type filters (`voice.trained`, `chatbot.*`, `*`). */
  event_types: string;
  enabled: number;
  /** JSON object. */
  metadata: string;
  /** The signing secret, kept readable: every attempt signs with it. */
  secret: string;
  /** The secret before the last rotation, still signing until previous_secret_expires_at. */
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookDeliveriesTable {
  id: string;
  workspace_id: string;
  /** Not a foreign key: deliveries stay readable for 30 days after their endpoint is deleted. */
  endpoint_id: string;
  event_id: string;
  event_type: string;
  /** The event's workspace sequence: the order of the endpoint's queue. */
  sequence: number;
  /** 1 when the delivery is in its endpoint's ordered queue; 0 for replays and tests, which go out at once. */
  ordered: number;
  manual: number;
  test: number;
  /** The exact body POSTed at every attempt. */
  payload: string;
  status: 'pending' | 'delivered' | 'failed';
  attempt_count: number;
  /** When the next attempt is due; null while waiting behind an earlier delivery of the endpoint, and once final. */
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_response_status_code: number | null;
  delivered_at: string | null;
  created_at: string;
  /** While a worker sends an attempt: until when the delivery is its own (a crashed worker's lease runs out). */
  leased_until: string | null;
  lease_token: string | null;
}

export interface WebhookAttemptsTable {
  delivery_id: string;
  number: number;
  workspace_id: string;
  trigger: 'scheduled' | 'manual';
  started_at: string;
  status: 'succeeded' | 'failed';
  response_status_code: number | null;
  response_body: string | null;
  duration_ms: number;
  error: 'timeout' | 'dns' | 'connection_refused' | 'connection_reset' | 'tls' | 'address_blocked' | null;
}

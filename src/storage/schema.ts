// The tables, as Kysely sees them. Portable types only, so one schema and one set of queries serve SQLite and
// PostgreSQL: ids and timestamps are text (ISO 8601 UTC with milliseconds, which sorts correctly as text),
// JSON is text, booleans are integers 0/1.
import type { Generated } from 'kysely';

type Role = 'owner' | 'admin' | 'editor' | 'viewer';

export interface WorkspacesTable {
  id: string;
  name: string;
  region: 'eu' | 'us';
  created_at: string;
  updated_at: string;
  /** The last `sequence` given to an event of this workspace. */
  event_sequence: Generated<number>;
}

export interface ApiKeysTable {
  id: string;
  workspace_id: string;
  name: string;
  role: Role;
  /** SHA-256 (hex) of the current secret. */
  secret_hash: string;
  last4: string;
  /** SHA-256 of the secret before the last rotation, valid until previous_secret_expires_at. */
  previous_secret_hash: string | null;
  previous_secret_expires_at: string | null;
  created_by_api_key_id: string | null;
  created_at: string;
  updated_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  rotated_at: string | null;
  revoked_at: string | null;
}

export interface UsersTable {
  id: string;
  email: string;
  name: string | null;
  created_at: string;
}

export interface MembersTable {
  workspace_id: string;
  user_id: string;
  role: Role;
  added_at: string;
  added_by_api_key_id: string | null;
}

export interface AuditLogEntriesTable {
  id: string;
  workspace_id: string;
  action: string;
  actor_type: 'api_key' | 'system';
  actor_api_key_id: string | null;
  actor_api_key_name: string | null;
  actor_role: Role | null;
  target_type: string;
  target_id: string;
  target_display_name: string | null;
  /** JSON object. */
  details: string;
  ip: string | null;
  user_agent: string | null;
  request_id: string | null;
  created_at: string;
}

export interface RequestLogEntriesTable {
  id: string;
  workspace_id: string;
  api_key_id: string;
  method: string;
  path: string;
  operation_id: string | null;
  status: number;
  error_code: string | null;
  duration_ms: number;
  ip: string;
  user_agent: string | null;
  created_at: string;
}

export interface IdempotencyKeysTable {
  workspace_id: string;
  key: string;
  /** SHA-256 of method, path and body: "the same request". */
  fingerprint: string;
  state: 'running' | 'completed';
  response_status: number | null;
  /** JSON object of the response headers worth replaying. */
  response_headers: string | null;
  response_body: string | null;
  created_at: string;
  expires_at: string;
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

export interface Database {
  workspaces: WorkspacesTable;
  api_keys: ApiKeysTable;
  users: UsersTable;
  members: MembersTable;
  audit_log_entries: AuditLogEntriesTable;
  request_log_entries: RequestLogEntriesTable;
  idempotency_keys: IdempotencyKeysTable;
  events: EventsTable;
}

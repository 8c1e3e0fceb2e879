// The tables, as Kysely sees them. Portable types only, so one schema and one set of queries serve SQLite and
// PostgreSQL: ids and timestamps are text (ISO 8601 UTC with milliseconds, which sorts correctly as text),
// JSON is text, booleans are integers 0/1.
import type { Generated } from 'kysely';
import type { components } from '../../generated/openapi.ts';

type Role = components['schemas']['Role'];
type Region = components['schemas']['Region'];

export interface WorkspacesTable {
  id: string;
  name: string;
  region: Region;
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
  /** The member the key acts on behalf of; null for a service key, which belongs to no person. */
  user_id: string | null;
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
  /** The directory that provisioned the member through SCIM; null for a member added through the API. */
  scim_source: string | null;
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

/**
 * The tables of the platform and of the features that keep theirs here. A feature may instead declare its own tables
 * beside its code by merging into this interface (`declare module '../../storage/schema.ts' { interface Database { … } }`,
 * as src/features/projects/schema.ts does), so that adding a feature edits no file of the platform.
 */
export interface Database {
  workspaces: WorkspacesTable;
  api_keys: ApiKeysTable;
  users: UsersTable;
  members: MembersTable;
  audit_log_entries: AuditLogEntriesTable;
  request_log_entries: RequestLogEntriesTable;
  idempotency_keys: IdempotencyKeysTable;
  jobs: JobsTable;
  served_addresses: ServedAddressesTable;
}

/** Where a region's servers are reached, as the last one to start said (src/platform/served-addresses.ts). */
export interface ServedAddressesTable {
  region: string;
  base_url: string;
  updated_at: string;
}

/** A leased job of the platform's job runner (src/platform/jobs/runner.ts). */
export interface JobsTable {
  id: string;
  /** Which handler runs it: `<feature>.<what>` (`voices.train`). */
  kind: string;
  workspace_id: string | null;
  /** JSON. */
  payload: string;
  /** `pending` until it succeeds (`done`) or has used its attempts (`failed`); leased while it runs. */
  status: 'pending' | 'done' | 'failed';
  /** Attempts started so far. */
  attempts: number;
  max_attempts: number;
  /** When it is due: created, or the next retry. */
  run_at: string;
  leased_until: string | null;
  lease_token: string | null;
  last_error: string | null;
  created_at: string;
  finished_at: string | null;
}

// Database rows as the API shows them (the shapes are the spec's, through the generated types).
import type { Selectable } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import { keyStatus } from '../../platform/auth.ts';
import { iso } from '../../platform/clock.ts';
import type { ApiKeyRow } from '../../platform/context.ts';
import type { AuditLogEntriesTable, MembersTable, RequestLogEntriesTable, UsersTable } from '../../storage/schema.ts';

type Schemas = components['schemas'];

export function presentApiKey(key: ApiKeyRow, now: Date): Schemas['ApiKey'] {
  const status = keyStatus(key, now);
  const graceOpen =
    status === 'active' && key.previous_secret_expires_at !== null && key.previous_secret_expires_at > iso(now);
  return {
    id: key.id,
    object: 'api_key',
    name: key.name,
    role: key.role,
    user_id: key.user_id,
    status,
    redacted_value: `cs_live_…${key.last4}`,
    last4: key.last4,
    created_at: key.created_at,
    updated_at: key.updated_at,
    created_by_api_key_id: key.created_by_api_key_id,
    last_used_at: key.last_used_at,
    expires_at: key.expires_at,
    rotated_at: key.rotated_at,
    previous_secret_expires_at: graceOpen ? key.previous_secret_expires_at : null,
    revoked_at: key.revoked_at,
  };
}

export type MemberRow = Selectable<MembersTable> & Pick<Selectable<UsersTable>, 'email' | 'name'>;

export function presentMember(row: MemberRow): Schemas['Member'] {
  return {
    id: row.user_id,
    object: 'member',
    email: row.email,
    name: row.name,
    role: row.role,
    added_at: row.added_at,
    added_by_api_key_id: row.added_by_api_key_id,
    scim_source: row.scim_source,
  };
}

export function presentAuditLogEntry(row: Selectable<AuditLogEntriesTable>): Schemas['AuditLogEntry'] {
  return {
    id: row.id,
    object: 'audit_log_entry',
    action: row.action,
    actor: {
      type: row.actor_type,
      api_key_id: row.actor_api_key_id,
      api_key_name: row.actor_api_key_name,
      role: row.actor_role,
    },
    target: { type: row.target_type, id: row.target_id, display_name: row.target_display_name },
    details: JSON.parse(row.details),
    ip: row.ip,
    user_agent: row.user_agent,
    request_id: row.request_id,
    created_at: row.created_at,
  };
}

export function presentRequestLogEntry(row: Selectable<RequestLogEntriesTable>): Schemas['RequestLogEntry'] {
  return {
    id: row.id,
    object: 'request_log_entry',
    api_key_id: row.api_key_id,
    method: row.method as Schemas['RequestLogEntry']['method'],
    path: row.path,
    operation_id: row.operation_id,
    status: row.status,
    error_code: row.error_code as Schemas['ErrorCode'] | null,
    duration_ms: row.duration_ms,
    ip: row.ip,
    user_agent: row.user_agent,
    created_at: row.created_at,
  };
}

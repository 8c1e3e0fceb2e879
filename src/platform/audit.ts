// The audit log: every change to a workspace's access or configuration, written in the transaction of the change.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../storage/schema.ts';
import type { RequestContext } from './context.ts';
import { iso } from './clock.ts';
import { newId } from './ids.ts';

export interface AuditEntry {
  action: string;
  target: { type: string; id: string; display_name: string | null };
  details?: Record<string, string | number | boolean | null>;
}

export async function recordAudit(db: Kysely<Database> | Transaction<Database>, context: RequestContext, entry: AuditEntry): Promise<void> {
  const { apiKey, workspace } = context.caller;
  await db
    .insertInto('audit_log_entries')
    .values({
      id: newId('aud', context.now),
      workspace_id: workspace.id,
      action: entry.action,
      actor_type: 'api_key',
      actor_api_key_id: apiKey.id,
      actor_api_key_name: apiKey.name,
      actor_role: apiKey.role,
      target_type: entry.target.type,
      target_id: entry.target.id,
      target_display_name: entry.target.display_name,
      details: JSON.stringify(entry.details ?? {}),
      ip: context.ip,
      user_agent: context.userAgent,
      request_id: context.requestId,
      created_at: iso(context.now),
    })
    .execute();
}

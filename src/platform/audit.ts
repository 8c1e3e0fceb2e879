// The audit log: every change to a workspace's access or configuration, written in the transaction of the change,
// naming who made it. A request audits as its API key (byRequest); the CLI, workers and anything else the service
// does on its own audit as `system`, with `details.via` saying which (bySystem).
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../storage/schema.ts';
import { iso } from './clock.ts';
import type { RequestContext, Role } from './context.ts';
import { newId } from './ids.ts';

/** Who made the change (the contract's AuditLogActor). */
export type AuditActor =
  | { type: 'api_key'; apiKeyId: string; name: string; role: Role }
  | { type: 'system'; via: string };

/** Where a change audited by a request came from; null for the system. */
export interface RequestFacts {
  ip: string;
  userAgent: string | null;
  requestId: string;
}

/** The workspace, the actor, the request when there is one, and the instant of the change. */
export interface AuditOrigin {
  workspaceId: string;
  actor: AuditActor;
  request: RequestFacts | null;
  now: Date;
}

export interface AuditEntry {
  action: string;
  target: { type: string; id: string; display_name: string | null };
  details?: Record<string, string | number | boolean | null>;
}

/** The origin of a change made by a request: its workspace, its API key as the actor, its IP, user agent and id. */
export function byRequest(context: RequestContext): AuditOrigin {
  const { apiKey, workspace } = context.caller;
  return {
    workspaceId: workspace.id,
    actor: { type: 'api_key', apiKeyId: apiKey.id, name: apiKey.name, role: apiKey.role },
    request: { ip: context.ip, userAgent: context.userAgent, requestId: context.requestId },
    now: context.now,
  };
}

/** The origin of a change the service made on its own: `via` names how (`cli`, a worker's or job kind's name). */
export function bySystem(workspaceId: string, via: string, now: Date): AuditOrigin {
  return { workspaceId, actor: { type: 'system', via }, request: null, now };
}

/** Writes the entry, from byRequest(context) or bySystem(…). */
export async function recordAudit(
  db: Kysely<Database> | Transaction<Database>,
  origin: AuditOrigin,
  entry: AuditEntry,
): Promise<void> {
  const { actor, request, now } = origin;
  const details = actor.type === 'system' ? { ...entry.details, via: actor.via } : (entry.details ?? {});
  await db
    .insertInto('audit_log_entries')
    .values({
      id: newId('aud', now),
      workspace_id: origin.workspaceId,
      action: entry.action,
      actor_type: actor.type,
      actor_api_key_id: actor.type === 'api_key' ? actor.apiKeyId : null,
      actor_api_key_name: actor.type === 'api_key' ? actor.name : null,
      actor_role: actor.type === 'api_key' ? actor.role : null,
      target_type: entry.target.type,
      target_id: entry.target.id,
      target_display_name: entry.target.display_name,
      details: JSON.stringify(details),
      ip: request?.ip ?? null,
      user_agent: request?.userAgent ?? null,
      request_id: request?.requestId ?? null,
      created_at: iso(now),
    })
    .execute();
}

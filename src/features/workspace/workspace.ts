// The workspace itself: created by the CLI (or the demo seed) with its first owner key; read with GET /v1/workspace.
import { type Kysely, sql, type Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import type { Config, Region } from '../../config.ts';
import { iso } from '../../platform/clock.ts';
import type { ApiKeyRow, RequestContext, WorkspaceRow } from '../../platform/context.ts';
import { IDEMPOTENCY_RETENTION_HOURS } from '../../platform/idempotency.ts';
import { newId } from '../../platform/ids.ts';
import { RATE_LIMIT } from '../../platform/rate-limit.ts';
import { RETENTION_DAYS } from '../../platform/retention.ts';
import { isPostgres } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';
import { insertApiKey } from './api-keys.ts';
import { userByEmail } from './members.ts';

export interface NewWorkspace {
  workspace: WorkspaceRow;
  apiKey: ApiKeyRow;
  secret: string;
}

type WorkspaceInput = { name: string; region: Region; ownerEmail?: string; keyName?: string; now?: Date };

/** A workspace with one owner key (and, given an email, its first owner member, whose key it is), in one transaction. */
export async function createWorkspace(db: Kysely<Database>, input: WorkspaceInput): Promise<NewWorkspace> {
  return db.transaction().execute((trx) => insertWorkspace(trx, input));
}

/**
 * The database's first workspace, as createWorkspace makes it, or undefined where there is one already. Several servers
 * started at once on a new database each find none: the transaction lets one of them make it (SQLite's write
 * transactions exclude each other; on PostgreSQL a lock on the table waits for the one that makes it).
 */
export async function createFirstWorkspace(
  db: Kysely<Database>,
  input: WorkspaceInput,
): Promise<NewWorkspace | undefined> {
  // Every start but the first finds one without a write transaction.
  if (await db.selectFrom('workspaces').select('id').limit(1).executeTakeFirst()) return undefined;
  return db.transaction().execute(async (trx) => {
    if (isPostgres(trx)) {
      // Bounded, as SQLite's busy_timeout bounds its wait: a lock held elsewhere fails the seed, not the start.
      await sql`set local lock_timeout = '5s'`.execute(trx);
      await sql`lock table workspaces in share row exclusive mode`.execute(trx);
    }
    if (await trx.selectFrom('workspaces').select('id').limit(1).executeTakeFirst()) return undefined;
    return insertWorkspace(trx, input);
  });
}

async function insertWorkspace(trx: Transaction<Database>, input: WorkspaceInput): Promise<NewWorkspace> {
  const now = input.now ?? new Date();
  const workspace: WorkspaceRow = {
    id: newId('ws', now),
    name: input.name,
    region: input.region,
    created_at: iso(now),
    updated_at: iso(now),
    event_sequence: 0,
  };
  await trx.insertInto('workspaces').values(workspace).execute();
  // Given an owner, the owner key is theirs; without one it is a service key.
  let ownerId: string | null = null;
  if (input.ownerEmail) {
    ownerId = await userByEmail(trx, input.ownerEmail.toLowerCase(), null, now);
    await trx
      .insertInto('members')
      .values({
        workspace_id: workspace.id,
        user_id: ownerId,
        role: 'owner',
        added_at: iso(now),
        added_by_api_key_id: null,
      })
      .execute();
  }
  const { key, secret } = await insertApiKey(trx, {
    workspaceId: workspace.id,
    name: input.keyName ?? 'Owner key',
    role: 'owner',
    expiresAt: null,
    createdBy: null,
    userId: ownerId,
    now,
  });
  return { workspace, apiKey: key, secret };
}

/** The workspace as GET /v1/workspace shows it, without `caller` (the CLI shows it with no key calling). */
export function presentWorkspace(
  workspace: WorkspaceRow,
  config: Config,
): Omit<components['schemas']['Workspace'], 'caller'> {
  return {
    id: workspace.id,
    object: 'workspace',
    name: workspace.name,
    region: workspace.region,
    base_url: config.regionBaseUrls[workspace.region],
    created_at: workspace.created_at,
    updated_at: workspace.updated_at,
    limits: {
      rate_limit_requests: RATE_LIMIT.requests,
      rate_limit_window_seconds: RATE_LIMIT.windowSeconds,
      idempotency_key_retention_hours: IDEMPOTENCY_RETENTION_HOURS,
      event_retention_days: RETENTION_DAYS.events,
      request_log_retention_days: RETENTION_DAYS.requestLog,
      audit_log_retention_days: RETENTION_DAYS.auditLog,
    },
  };
}

export const workspaceHandlers = {
  async getWorkspace(_request, context) {
    const { workspace, apiKey } = context.caller;
    return {
      status: 200,
      contentType: 'application/json',
      body: {
        ...presentWorkspace(workspace, context.platform.config),
        caller: { api_key_id: apiKey.id, api_key_name: apiKey.name, role: apiKey.role, user_id: context.caller.userId },
      },
    };
  },
} satisfies Pick<Handlers<RequestContext>, 'getWorkspace'>;

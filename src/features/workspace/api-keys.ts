// API keys: create (the secret shown once), list, get, rotate (the old secret keeps working 24 hours), revoke.
import type { Kysely, Transaction } from 'kysely';
import type { Handlers } from '../../../generated/operations.ts';
import { byRequest, recordAudit } from '../../platform/audit.ts';
import { hashSecret, newSecret } from '../../platform/auth.ts';
import { iso } from '../../platform/clock.ts';
import { type ApiKeyRow, atLeast, callerName, type RequestContext, type Role } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { parseInstant } from '../../platform/instant.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem, validationFailed } from '../../platform/problems.ts';
import { forUpdate } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';
import { presentApiKey } from './presenters.ts';

export const ROTATION_GRACE_MS = 24 * 3_600_000;
/** Rotations of one key that may race; past this many lost races the request answers 409 conflict. */
const MAX_ROTATION_ATTEMPTS = 10;

/** Inserts a key and returns it with its secret, which exists nowhere else afterwards. */
export async function insertApiKey(
  db: Kysely<Database> | Transaction<Database>,
  values: {
    workspaceId: string;
    name: string;
    role: Role;
    expiresAt: string | null;
    createdBy: string | null;
    userId?: string | null;
    /** The session the key carries (the sessions feature); its secret is then thrown away. */
    sessionId?: string | null;
    now: Date;
  },
): Promise<{ key: ApiKeyRow; secret: string }> {
  const secret = newSecret();
  const key: ApiKeyRow = {
    id: newId('key', values.now),
    workspace_id: values.workspaceId,
    name: values.name,
    role: values.role,
    secret_hash: hashSecret(secret),
    last4: secret.slice(-4),
    previous_secret_hash: null,
    previous_secret_expires_at: null,
    created_by_api_key_id: values.createdBy,
    user_id: values.userId ?? null,
    created_at: iso(values.now),
    updated_at: iso(values.now),
    last_used_at: null,
    expires_at: values.expiresAt,
    rotated_at: null,
    revoked_at: null,
    session_id: values.sessionId ?? null,
  };
  await db.insertInto('api_keys').values(key).execute();
  return { key, secret };
}

async function findKey(context: RequestContext, id: string): Promise<ApiKeyRow> {
  const key = await context.platform.db
    .selectFrom('api_keys')
    .selectAll()
    .where('id', '=', id)
    .where('workspace_id', '=', context.caller.workspace.id)
    // A session's own key is the session's (the sessions feature): not an API key anyone manages.
    .where('session_id', 'is', null)
    .executeTakeFirst();
  if (!key) throw notFound('API key', id);
  return key;
}

/**
 * The member a new key will act on behalf of, checked: a member of the workspace whose role is at least the key's.
 * The member's row stays locked until commit, so that a removal running meanwhile revokes the new key too.
 */
export async function keyOwner(
  trx: Transaction<Database>,
  workspaceId: string,
  userId: string,
  role: Role,
): Promise<string> {
  const member = await forUpdate(
    trx
      .selectFrom('members')
      .innerJoin('users', 'users.id', 'members.user_id')
      .select(['members.user_id', 'members.role', 'users.email'])
      .where('members.workspace_id', '=', workspaceId)
      .where('members.user_id', '=', userId),
    trx,
  ).executeTakeFirst();
  if (!member) {
    throw new Problem(
      'user_not_member',
      `${userId} is not a member of this workspace; add them with POST /v1/members first.`,
      {
        errors: [{ pointer: '/user_id', detail: 'is not a member of this workspace' }],
      },
    );
  }
  if (!atLeast(member.role, role)) {
    throw new Problem(
      'role_above_member',
      `${member.email} has the ${member.role} role; a key on their behalf can have at most that role, not ${role}.`,
      {
        errors: [{ pointer: '/role', detail: `is above the member's role (${member.role})` }],
      },
    );
  }
  return member.user_id;
}

/** A key can manage keys up to its own role: only an owner key creates, rotates or revokes an owner key. */
function requireRoleAtLeast(context: RequestContext, role: Role, action: string): void {
  if (!atLeast(context.caller.role, role)) {
    throw new Problem(
      'insufficient_role',
      `${callerName(context.caller)} cannot ${action} a key with the ${role} role.`,
    );
  }
}

export const apiKeyHandlers = {
  async listApiKeys(request, context) {
    const page = pageRequest(request.query);
    const now = iso(context.now);
    let query = context.platform.db
      .selectFrom('api_keys')
      .selectAll()
      .where('workspace_id', '=', context.caller.workspace.id)
      .where('session_id', 'is', null);
    if (request.query.role) query = query.where('role', '=', request.query.role);
    switch (request.query.status) {
      case 'active':
        query = query
          .where('revoked_at', 'is', null)
          .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]));
        break;
      case 'expired':
        query = query.where('revoked_at', 'is', null).where('expires_at', '<=', now);
        break;
      case 'revoked':
        query = query.where('revoked_at', 'is not', null);
        break;
    }
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const { body, headers } = toPage(
      rows,
      page,
      (row) => ({ id: row.id }),
      (row) => presentApiKey(row, context.now),
      context.url,
    );
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async createApiKey(request, context) {
    const { name, role, expires_at } = request.body;
    requireRoleAtLeast(context, role, 'create');
    let expiresAt: string | null = null;
    if (expires_at !== undefined && expires_at !== null) {
      const at = parseInstant(expires_at);
      if (at <= context.now) throw validationFailed([{ pointer: '/expires_at', detail: 'must be in the future' }]);
      expiresAt = iso(at);
    }
    // Omitted: the calling key's member (none for a service key); null: a service key; an id: that member.
    const requestedUser = request.body.user_id === undefined ? context.caller.userId : request.body.user_id;
    // A key for someone else (or a service key made from a person's key) would outlive its creator's removal and act
    // in another's name: only an owner may hand out such keys.
    if (requestedUser !== context.caller.userId && context.caller.role !== 'owner') {
      throw new Problem(
        'insufficient_role',
        `Only an owner can create a key for another member or a service key; ${callerName(context.caller).toLowerCase()} creates keys for ${context.caller.userId ?? 'no member (it is a service key)'} only.`,
      );
    }
    const { key, secret } = await context.platform.db.transaction().execute(async (trx) => {
      const userId =
        requestedUser === null ? null : await keyOwner(trx, context.caller.workspace.id, requestedUser, role);
      const created = await insertApiKey(trx, {
        workspaceId: context.caller.workspace.id,
        name,
        role,
        expiresAt,
        createdBy: context.caller.apiKey.id,
        userId,
        now: context.now,
      });
      await recordAudit(trx, byRequest(context), {
        action: 'api_key.created',
        target: { type: 'api_key', id: created.key.id, display_name: name },
        details: { name, role, expires_at: expiresAt },
      });
      return created;
    });
    return {
      status: 201,
      contentType: 'application/json',
      headers: { Location: `/v1/api-keys/${key.id}` },
      body: { ...presentApiKey(key, context.now), secret },
    };
  },

  async getApiKey(request, context) {
    const key = await findKey(context, request.path.id);
    return { status: 200, contentType: 'application/json', body: presentApiKey(key, context.now) };
  },

  async rotateApiKey(request, context) {
    let key = await findKey(context, request.path.id);
    requireRoleAtLeast(context, key.role, 'rotate');
    const secret = newSecret();
    const graceEnds = iso(new Date(context.now.getTime() + ROTATION_GRACE_MS));
    // Concurrent rotations of one key are serialised: the update applies only to the secret it read, and a rotation
    // that lost the race reads the key again and rotates the secret the winner left (each loss means another won).
    for (let attempt = 0; attempt < MAX_ROTATION_ATTEMPTS; attempt++) {
      if (attempt > 0) key = await findKey(context, key.id);
      if (key.revoked_at || (key.expires_at && key.expires_at <= iso(context.now))) {
        throw new Problem(
          'api_key_inactive',
          `API key ${key.id} is ${key.revoked_at ? 'revoked' : 'expired'}; create a new key instead.`,
        );
      }
      const current = key;
      const rotated = await context.platform.db.transaction().execute(async (trx) => {
        // Only the current secret becomes the previous one: an older previous secret ends its grace at once.
        const row = await trx
          .updateTable('api_keys')
          .set({
            secret_hash: hashSecret(secret),
            last4: secret.slice(-4),
            previous_secret_hash: current.secret_hash,
            previous_secret_expires_at: graceEnds,
            rotated_at: iso(context.now),
            updated_at: iso(context.now),
          })
          .where('id', '=', current.id)
          .where('secret_hash', '=', current.secret_hash)
          .where('revoked_at', 'is', null)
          .returningAll()
          .executeTakeFirst();
        if (!row) return undefined;
        await recordAudit(trx, byRequest(context), {
          action: 'api_key.rotated',
          target: { type: 'api_key', id: current.id, display_name: current.name },
          details: { previous_secret_expires_at: graceEnds },
        });
        return row;
      });
      if (rotated)
        return {
          status: 200,
          contentType: 'application/json',
          body: { ...presentApiKey(rotated, context.now), secret },
        };
    }
    throw new Problem('conflict', `API key ${key.id} is being rotated by many requests at once; retry.`);
  },

  async revokeApiKey(request, context) {
    const key = await findKey(context, request.path.id);
    requireRoleAtLeast(context, key.role, 'revoke');
    if (key.revoked_at) return { status: 200, contentType: 'application/json', body: presentApiKey(key, context.now) };
    const revoked = await context.platform.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('api_keys')
        .set({
          revoked_at: iso(context.now),
          updated_at: iso(context.now),
          previous_secret_hash: null,
          previous_secret_expires_at: null,
        })
        .where('id', '=', key.id)
        .where('revoked_at', 'is', null)
        .returningAll()
        .executeTakeFirst();
      // Revoked by a concurrent request: the answer is the same.
      if (!row) return undefined;
      await recordAudit(trx, byRequest(context), {
        action: 'api_key.revoked',
        target: { type: 'api_key', id: key.id, display_name: key.name },
      });
      return row;
    });
    return {
      status: 200,
      contentType: 'application/json',
      body: presentApiKey(revoked ?? (await findKey(context, key.id)), context.now),
    };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  'listApiKeys' | 'createApiKey' | 'getApiKey' | 'rotateApiKey' | 'revokeApiKey'
>;

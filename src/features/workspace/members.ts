// Members: the people of a workspace and their roles. Adding and removing one records a workspace.member.* event
// and an audit entry in the transaction of the change; removing one also revokes the API keys that act on their behalf,
// which is why a key cannot remove its own member. The records are written by the functions below, which the API's
// handlers and a directory's SCIM requests (the directory feature) share.
import type { Kysely, Transaction } from 'kysely';
import type { Handlers } from '../../../generated/operations.ts';
import { type AuditOrigin, byRequest, recordAudit } from '../../platform/audit.ts';
import { iso } from '../../platform/clock.ts';
import { atLeast, callerName, type RequestContext, type Role } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem } from '../../platform/problems.ts';
import type { Database } from '../../storage/schema.ts';
import { recordEvent } from '../webhooks/index.ts';
import { type MemberRow, presentMember } from './presenters.ts';

export type { MemberRow };

export function membersOf(db: Transaction<Database> | Kysely<Database>, workspaceId: string) {
  return db
    .selectFrom('members')
    .innerJoin('users', 'users.id', 'members.user_id')
    .select([
      'members.workspace_id',
      'members.user_id',
      'members.role',
      'members.added_at',
      'members.added_by_api_key_id',
      'members.scim_source',
      'users.email',
      'users.name',
    ])
    .where('members.workspace_id', '=', workspaceId);
}

/** The user with this email, created if there is none; concurrent creations end with one user. */
export async function userByEmail(
  trx: Transaction<Database>,
  email: string,
  name: string | null,
  now: Date,
): Promise<string> {
  await trx
    .insertInto('users')
    .values({ id: newId('usr', now), email, name, created_at: iso(now) })
    .onConflict((oc) => oc.column('email').doNothing())
    .execute();
  const user = await trx
    .selectFrom('users')
    .select(['id', 'name'])
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  if (user.name === null && name !== null)
    await trx.updateTable('users').set({ name }).where('id', '=', user.id).execute();
  return user.id;
}

/**
 * Makes the user a member with the role, records `workspace.member.added` (naming the directory for a provisioned
 * member) and the audit entry `member.added`; undefined when they are a member already (nothing is written).
 */
export async function addMemberRecord(
  trx: Transaction<Database>,
  origin: AuditOrigin,
  values: { userId: string; email: string; role: Role; addedByApiKeyId: string | null; scimSource: string | null },
): Promise<MemberRow | undefined> {
  const { workspaceId, now } = origin;
  const added = await trx
    .insertInto('members')
    .values({
      workspace_id: workspaceId,
      user_id: values.userId,
      role: values.role,
      added_at: iso(now),
      added_by_api_key_id: values.addedByApiKeyId,
      scim_source: values.scimSource,
    })
    .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
    .executeTakeFirst();
  if (Number(added.numInsertedOrUpdatedRows ?? 0n) === 0) return undefined;
  const row = (await membersOf(trx, workspaceId)
    .where('members.user_id', '=', values.userId)
    .executeTakeFirstOrThrow()) as MemberRow;
  await recordEvent(
    trx,
    workspaceId,
    'workspace.member.added',
    { user_id: values.userId, email: values.email, role: values.role, scim_source: values.scimSource, name: row.name },
    now,
  );
  await recordAudit(trx, origin, {
    action: 'member.added',
    target: { type: 'member', id: values.userId, display_name: values.email },
    details: {
      email: values.email,
      role: values.role,
      ...(values.scimSource ? { scim_source: values.scimSource } : {}),
    },
  });
  return row;
}

/**
 * Removes the member: records `workspace.member.removed` (`removed_by` a member's id or a key's), refuses the last
 * owner (`409 last_owner`), revokes the API keys that act on their behalf, and audits each change.
 */
export async function removeMemberRecord(
  trx: Transaction<Database>,
  origin: AuditOrigin,
  member: MemberRow,
  removedBy: { userId: string | null; apiKeyId: string },
): Promise<void> {
  const { workspaceId, now } = origin;
  // Recording the event first takes the workspace row's lock, so two removals of the last two owners cannot
  // both see another owner left.
  await recordEvent(
    trx,
    workspaceId,
    'workspace.member.removed',
    {
      user_id: member.user_id,
      removed_at: iso(now),
      // The person who removed the member; a service key stands for itself.
      removed_by: removedBy.userId ?? removedBy.apiKeyId,
      removed_by_api_key_id: removedBy.apiKeyId,
      email: member.email,
      role: member.role,
    },
    now,
  );
  if (member.role === 'owner') {
    const { owners } = await trx
      .selectFrom('members')
      .select((eb) => eb.fn.countAll<number>().as('owners'))
      .where('workspace_id', '=', workspaceId)
      .where('role', '=', 'owner')
      .executeTakeFirstOrThrow();
    if (Number(owners) <= 1)
      throw new Problem('last_owner', `${member.email} is the workspace's last owner; add another owner first.`);
  }
  await trx
    .deleteFrom('members')
    .where('workspace_id', '=', workspaceId)
    .where('user_id', '=', member.user_id)
    .execute();
  await recordAudit(trx, origin, {
    action: 'member.removed',
    target: { type: 'member', id: member.user_id, display_name: member.email },
    details: { email: member.email, role: member.role },
  });
  // The member's access ends with the removal: the keys that act on their behalf are revoked with it.
  await revokeMemberKeys(trx, origin, member.user_id, 'member_removed');
}

/**
 * Gives the member another role (a directory's groups decide it), audited as `member.role_changed`. The member's
 * API keys above the new role are revoked with it: a key never exceeds its member's role.
 */
export async function changeMemberRole(
  trx: Transaction<Database>,
  origin: AuditOrigin,
  member: MemberRow,
  role: Role,
): Promise<void> {
  if (member.role === role) return;
  await trx
    .updateTable('members')
    .set({ role })
    .where('workspace_id', '=', origin.workspaceId)
    .where('user_id', '=', member.user_id)
    .execute();
  await recordAudit(trx, origin, {
    action: 'member.role_changed',
    target: { type: 'member', id: member.user_id, display_name: member.email },
    details: { email: member.email, role, previous_role: member.role },
  });
  if (!atLeast(role, member.role)) await revokeMemberKeys(trx, origin, member.user_id, 'member_role_lowered', role);
}

/** Revokes the member's active keys (those above `aboveRole` only, when given), each with an audit entry. */
async function revokeMemberKeys(
  trx: Transaction<Database>,
  origin: AuditOrigin,
  userId: string,
  reason: 'member_removed' | 'member_role_lowered',
  aboveRole?: Role,
): Promise<void> {
  const { workspaceId, now } = origin;
  let query = trx
    .updateTable('api_keys')
    .set({
      revoked_at: iso(now),
      updated_at: iso(now),
      previous_secret_hash: null,
      previous_secret_expires_at: null,
    })
    .where('workspace_id', '=', workspaceId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null);
  if (aboveRole) query = query.where('role', 'in', ROLES_ABOVE[aboveRole]);
  const revoked = await query.returning(['id', 'name']).execute();
  for (const key of revoked) {
    await recordAudit(trx, origin, {
      action: 'api_key.revoked',
      target: { type: 'api_key', id: key.id, display_name: key.name },
      details: { reason, user_id: userId },
    });
  }
}

const ROLES_ABOVE: Record<Role, Role[]> = {
  owner: [],
  admin: ['owner'],
  editor: ['owner', 'admin'],
  viewer: ['owner', 'admin', 'editor'],
};

function requireRoleAtLeast(context: RequestContext, role: Role, action: string): void {
  if (!atLeast(context.caller.role, role)) {
    throw new Problem(
      'insufficient_role',
      `${callerName(context.caller)} cannot ${action} a member with the ${role} role.`,
    );
  }
}

export const memberHandlers = {
  async listMembers(request, context) {
    const page = pageRequest(request.query);
    let query = membersOf(context.platform.db, context.caller.workspace.id);
    if (request.query.role) query = query.where('members.role', '=', request.query.role);
    const rows = await paginate(query, { id: 'members.user_id', at: 'members.added_at' }, page).execute();
    const { body, headers } = toPage(
      rows,
      page,
      (row) => ({ id: row.user_id, at: row.added_at }),
      presentMember,
      context.url,
    );
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async addMember(request, context) {
    const { role } = request.body;
    const email = request.body.email.toLowerCase();
    requireRoleAtLeast(context, role, 'add');
    const member = await context.platform.db.transaction().execute(async (trx) => {
      const userId = await userByEmail(trx, email, request.body.name ?? null, context.now);
      const row = await addMemberRecord(trx, byRequest(context), {
        userId,
        email,
        role,
        addedByApiKeyId: context.caller.apiKey.id,
        scimSource: null,
      });
      if (!row) throw new Problem('member_already_exists', `${email} is already a member of this workspace.`);
      return row;
    });
    return {
      status: 201,
      contentType: 'application/json',
      headers: { Location: `/v1/members/${member.user_id}` },
      body: presentMember(member),
    };
  },

  async getMember(request, context) {
    const row = await membersOf(context.platform.db, context.caller.workspace.id)
      .where('members.user_id', '=', request.path.id)
      .executeTakeFirst();
    if (!row) throw notFound('member', request.path.id);
    return { status: 200, contentType: 'application/json', body: presentMember(row) };
  },

  async removeMember(request, context) {
    const workspaceId = context.caller.workspace.id;
    await context.platform.db.transaction().execute(async (trx) => {
      const member = await membersOf(trx, workspaceId)
        .where('members.user_id', '=', request.path.id)
        .executeTakeFirst();
      if (!member) throw notFound('member', request.path.id);
      requireRoleAtLeast(context, member.role, 'remove');
      // The directory would provision the person again at its next sync: removal is the directory's to make.
      if (member.scim_source !== null) {
        throw new Problem(
          'managed_by_directory',
          `${member.email} is provisioned by the directory ${member.scim_source}; unassign them there and the directory removes them.`,
        );
      }
      // The removal revokes the member's keys, this one among them: a person is removed by someone else, never
      // locks themselves out by a click.
      if (member.user_id === context.caller.userId) {
        throw new Problem(
          'cannot_remove_self',
          `${member.email} is the member this API key acts for; another admin or owner removes them.`,
        );
      }
      const { apiKey, userId: actingUserId } = context.caller;
      await removeMemberRecord(trx, byRequest(context), member, { userId: actingUserId, apiKeyId: apiKey.id });
    });
    return { status: 204 };
  },
} satisfies Pick<Handlers<RequestContext>, 'listMembers' | 'addMember' | 'getMember' | 'removeMember'>;

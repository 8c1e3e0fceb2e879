// Members: the people of a workspace and their roles. Adding and removing one records a workspace.member.* event
// and an audit entry in the transaction of the change; removing one also revokes the API keys that act on their behalf,
// which is why a key cannot remove its own member.
import type { Transaction } from 'kysely';
import type { Handlers } from '../../../generated/operations.ts';
import { byRequest, recordAudit } from '../../platform/audit.ts';
import { iso } from '../../platform/clock.ts';
import { atLeast, type RequestContext, type Role } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem } from '../../platform/problems.ts';
import type { Database } from '../../storage/schema.ts';
import { recordEvent } from '../webhooks/index.ts';
import { type MemberRow, presentMember } from './presenters.ts';

function membersOf(db: Transaction<Database> | RequestContext['platform']['db'], workspaceId: string) {
  return db
    .selectFrom('members')
    .innerJoin('users', 'users.id', 'members.user_id')
    .select([
      'members.workspace_id',
      'members.user_id',
      'members.role',
      'members.added_at',
      'members.added_by_api_key_id',
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

function requireRoleAtLeast(context: RequestContext, role: Role, action: string): void {
  if (!atLeast(context.caller.role, role)) {
    throw new Problem(
      'insufficient_role',
      `A ${context.caller.role} key cannot ${action} a member with the ${role} role.`,
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
    const workspaceId = context.caller.workspace.id;
    const member = await context.platform.db.transaction().execute(async (trx) => {
      const userId = await userByEmail(trx, email, request.body.name ?? null, context.now);
      const added = await trx
        .insertInto('members')
        .values({
          workspace_id: workspaceId,
          user_id: userId,
          role,
          added_at: iso(context.now),
          added_by_api_key_id: context.caller.apiKey.id,
        })
        .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
        .executeTakeFirst();
      if (Number(added.numInsertedOrUpdatedRows ?? 0n) === 0) {
        throw new Problem('member_already_exists', `${email} is already a member of this workspace.`);
      }
      const row = (await membersOf(trx, workspaceId)
        .where('members.user_id', '=', userId)
        .executeTakeFirstOrThrow()) as MemberRow;
      // Members are added through the API only: no SCIM provisioning yet.
      await recordEvent(
        trx,
        workspaceId,
        'workspace.member.added',
        { user_id: userId, email, role, scim_source: null, name: row.name },
        context.now,
      );
      await recordAudit(trx, byRequest(context), {
        action: 'member.added',
        target: { type: 'member', id: userId, display_name: email },
        details: { email, role },
      });
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
      // The removal revokes the member's keys, this one among them: a person is removed by someone else, never
      // locks themselves out by a click.
      if (member.user_id === context.caller.userId) {
        throw new Problem(
          'cannot_remove_self',
          `${member.email} is the member this API key acts for; another admin or owner removes them.`,
        );
      }
      // Recording the event first takes the workspace row's lock, so two removals of the last two owners cannot
      // both see another owner left.
      const { apiKey, userId: actingUserId } = context.caller;
      await recordEvent(
        trx,
        workspaceId,
        'workspace.member.removed',
        {
          user_id: member.user_id,
          removed_at: iso(context.now),
          // The person who removed the member; a service key stands for itself.
          removed_by: actingUserId ?? apiKey.id,
          removed_by_api_key_id: apiKey.id,
          email: member.email,
          role: member.role,
        },
        context.now,
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
      // The member's access ends with the removal: the keys that act on their behalf are revoked with it.
      const revoked = await trx
        .updateTable('api_keys')
        .set({
          revoked_at: iso(context.now),
          updated_at: iso(context.now),
          previous_secret_hash: null,
          previous_secret_expires_at: null,
        })
        .where('workspace_id', '=', workspaceId)
        .where('user_id', '=', member.user_id)
        .where('revoked_at', 'is', null)
        .returning(['id', 'name'])
        .execute();
      await recordAudit(trx, byRequest(context), {
        action: 'member.removed',
        target: { type: 'member', id: member.user_id, display_name: member.email },
        details: { email: member.email, role: member.role },
      });
      for (const key of revoked) {
        await recordAudit(trx, byRequest(context), {
          action: 'api_key.revoked',
          target: { type: 'api_key', id: key.id, display_name: key.name },
          details: { reason: 'member_removed', user_id: member.user_id },
        });
      }
    });
    return { status: 204 };
  },
} satisfies Pick<Handlers<RequestContext>, 'listMembers' | 'addMember' | 'getMember' | 'removeMember'>;

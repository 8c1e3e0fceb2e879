// A directory's users as members of the workspace. An active user is a member, with the role of their groups: a
// group whose displayName is a role below owner (`admin`, `editor`, `viewer`, in any case) gives that role, the highest
// such group wins, and a user in none is a viewer. Owners are never made by a directory: the people who can revoke a
// directory's token and who answer for the workspace are added through the API. An inactive or deleted user is no
// member: removed as the API removes one (event, keys revoked), by the authority of the owner who created the token.
import type { Transaction } from 'kysely';
import { atLeast, type Role } from '../../../platform/context.ts';
import type { Database } from '../../../storage/schema.ts';
import { addMemberRecord, changeMemberRole, membersOf, removeMemberRecord } from '../../workspace/index.ts';
import type { ScimContext } from './context.ts';

const GROUP_ROLES: readonly Role[] = ['admin', 'editor', 'viewer'];

/** The role a group's displayName gives its members, or null for a group that gives none. */
export function roleOfGroup(displayName: string): Role | null {
  const name = displayName.trim().toLowerCase();
  return GROUP_ROLES.find((role) => role === name) ?? null;
}

async function roleOfUser(trx: Transaction<Database>, context: ScimContext, userId: string): Promise<Role> {
  const groups = await trx
    .selectFrom('scim_group_members')
    .innerJoin('scim_groups', (join) =>
      join
        .onRef('scim_groups.id', '=', 'scim_group_members.group_id')
        .onRef('scim_groups.workspace_id', '=', 'scim_group_members.workspace_id'),
    )
    .select('scim_groups.display_name')
    .where('scim_group_members.workspace_id', '=', context.workspaceId)
    .where('scim_group_members.user_id', '=', userId)
    .execute();
  let role: Role = 'viewer';
  for (const group of groups) {
    const given = roleOfGroup(group.display_name);
    if (given && atLeast(given, role)) role = given;
  }
  return role;
}

/** Makes the workspace's membership of the user what the directory says: present with their role, or absent. */
export async function syncMember(trx: Transaction<Database>, context: ScimContext, userId: string): Promise<void> {
  const user = await trx
    .selectFrom('scim_users')
    .select(['active'])
    .where('workspace_id', '=', context.workspaceId)
    .where('id', '=', userId)
    .executeTakeFirst();
  const member = await membersOf(trx, context.workspaceId).where('members.user_id', '=', userId).executeTakeFirst();
  // A member the API added is not the directory's to change (creating the user refuses that person, see users.ts).
  if (member && member.scim_source !== context.directory) return;
  if (user?.active) {
    const role = await roleOfUser(trx, context, userId);
    if (!member) {
      const { email } = await trx
        .selectFrom('users')
        .select('email')
        .where('id', '=', userId)
        .executeTakeFirstOrThrow();
      await addMemberRecord(trx, context.origin, {
        userId,
        email,
        role,
        addedByApiKeyId: null,
        scimSource: context.directory,
      });
    } else {
      await changeMemberRole(trx, context.origin, member, role);
    }
  } else if (member) {
    await removeMemberRecord(trx, context.origin, member, {
      userId: context.token.created_by_user_id,
      apiKeyId: context.token.created_by_api_key_id,
    });
  }
}

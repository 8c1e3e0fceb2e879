// SCIM Groups of a directory (RFC 7643 §4.2) with their members, who must be the directory's users. A group's
// displayName may give its members a role (membership.ts); every change of a group's name or members brings the
// roles of the users it touches up to date in the same transaction.
import { type Selectable, sql, type Transaction } from 'kysely';
import { iso } from '../../../platform/clock.ts';
import { newId } from '../../../platform/ids.ts';
import type { Database } from '../../../storage/schema.ts';
import type { ScimGroupsTable } from '../schema.ts';
import type { ScimContext } from './context.ts';
import { normaliseResource } from './entra.ts';
import { syncMember } from './membership.ts';
import { listResponse, matchFilter, type ReadParameters, simpleEquality } from './query.ts';
import { applyPatch, readResource, type ScimObject } from './resources.ts';
import { SCIMMY, scimError } from './scimmy.ts';

type GroupRow = Selectable<ScimGroupsTable>;
type Db = ScimContext['db'] | Transaction<Database>;

function groupsOf(db: Db, context: ScimContext) {
  return db
    .selectFrom('scim_groups')
    .selectAll()
    .where('workspace_id', '=', context.workspaceId)
    .where('directory', '=', context.directory);
}

async function membersOfGroups(db: Db, context: ScimContext, groupIds: string[]) {
  const members = new Map<string, Array<{ value: string; display: string; $ref: string; type: string }>>();
  if (groupIds.length === 0) return members;
  const rows = await db
    .selectFrom('scim_group_members')
    .innerJoin('scim_users', (join) =>
      join
        .onRef('scim_users.id', '=', 'scim_group_members.user_id')
        .onRef('scim_users.workspace_id', '=', 'scim_group_members.workspace_id'),
    )
    .select(['scim_group_members.group_id', 'scim_users.id', 'scim_users.user_name'])
    .where('scim_group_members.workspace_id', '=', context.workspaceId)
    .where('scim_group_members.group_id', 'in', groupIds)
    .orderBy('scim_users.id')
    .execute();
  for (const row of rows) {
    const list = members.get(row.group_id) ?? [];
    list.push({ value: row.id, display: row.user_name, $ref: `${context.base}/Users/${row.id}`, type: 'User' });
    members.set(row.group_id, list);
  }
  return members;
}

function stored(row: GroupRow, members: unknown[] | undefined): ScimObject {
  return {
    id: row.id,
    displayName: row.display_name,
    ...(row.external_id === null ? {} : { externalId: row.external_id }),
    ...(members?.length ? { members } : {}),
    meta: { resourceType: 'Group', created: row.created_at, lastModified: row.updated_at },
  };
}

function output(context: ScimContext, object: ScimObject, attributes?: ReadParameters['attributes']) {
  return new SCIMMY.Schemas.Group(object, 'out', `${context.base}/Groups`, attributes as never);
}

async function findGroup(db: Db, context: ScimContext, id: string): Promise<GroupRow> {
  const row = await groupsOf(db, context).where('id', '=', id).executeTakeFirst();
  if (!row) throw scimError(404, null, `No group ${id} in this directory.`);
  return row;
}

export async function readGroup(context: ScimContext, id: string, attributes?: ReadParameters['attributes']) {
  const row = await findGroup(context.db, context, id);
  const members = await membersOfGroups(context.db, context, [row.id]);
  return output(context, stored(row, members.get(row.id)), attributes);
}

export async function listGroups(context: ScimContext, parameters: ReadParameters) {
  let query = groupsOf(context.db, context);
  const equality = simpleEquality(parameters.filter, ['displayName', 'externalId', 'id']);
  // displayName is not case-exact (RFC 7643): `displayName eq "team"` finds "Team".
  if (equality?.attribute === 'displayName')
    query = query.where(sql`lower(display_name)`, '=', equality.value.toLowerCase());
  if (equality?.attribute === 'externalId') query = query.where('external_id', '=', equality.value);
  if (equality?.attribute === 'id') query = query.where('id', '=', equality.value);
  const rows = await query.orderBy('created_at').orderBy('id').execute();
  const members = await membersOfGroups(
    context.db,
    context,
    rows.map((r) => r.id),
  );
  let objects = rows.map((row) => stored(row, members.get(row.id)));
  if (parameters.filter && !equality) objects = matchFilter(parameters.filter, SCIMMY.Schemas.Group, objects);
  return listResponse(
    objects.map((object) => output(context, object, parameters.attributes)),
    parameters,
  );
}

/** The user ids of a group's `members`, each a user of this directory (else 400 invalidValue). */
async function memberIds(trx: Transaction<Database>, context: ScimContext, resource: ScimObject): Promise<string[]> {
  const members = Array.isArray(resource.members) ? (resource.members as Array<{ value?: unknown }>) : [];
  const ids = [...new Set(members.map((m) => String(m.value)))];
  if (ids.length === 0) return [];
  const known = await trx
    .selectFrom('scim_users')
    .select('id')
    .where('workspace_id', '=', context.workspaceId)
    .where('directory', '=', context.directory)
    .where('id', 'in', ids)
    .execute();
  const found = new Set(known.map((k) => k.id));
  const unknown = ids.filter((id) => !found.has(id));
  if (unknown.length > 0)
    throw scimError(400, 'invalidValue', `members ${unknown.join(', ')} are not users of this directory.`);
  return ids;
}

async function ensureNameFree(trx: Transaction<Database>, context: ScimContext, name: string, except?: string) {
  let query = groupsOf(trx, context).where((eb) => eb(eb.fn('lower', ['display_name']), '=', name.toLowerCase()));
  if (except) query = query.where('id', '!=', except);
  const taken = await query.executeTakeFirst();
  if (taken) throw scimError(409, 'uniqueness', `displayName ${name} is group ${taken.id} of this directory already.`);
}

/** Sets the group's members to `ids`; answers who was added or removed, and everyone who was or is in it. */
async function setMembers(trx: Transaction<Database>, context: ScimContext, groupId: string, ids: string[]) {
  const before = await trx
    .selectFrom('scim_group_members')
    .select('user_id')
    .where('workspace_id', '=', context.workspaceId)
    .where('group_id', '=', groupId)
    .execute();
  const previous = new Set(before.map((b) => b.user_id));
  const next = new Set(ids);
  const removed = [...previous].filter((id) => !next.has(id));
  const added = ids.filter((id) => !previous.has(id));
  if (removed.length > 0)
    await trx
      .deleteFrom('scim_group_members')
      .where('workspace_id', '=', context.workspaceId)
      .where('group_id', '=', groupId)
      .where('user_id', 'in', removed)
      .execute();
  if (added.length > 0)
    await trx
      .insertInto('scim_group_members')
      .values(added.map((user_id) => ({ workspace_id: context.workspaceId, group_id: groupId, user_id })))
      .execute();
  return { changed: [...removed, ...added], everyone: [...previous, ...added] };
}

export async function createGroup(context: ScimContext, body: unknown) {
  const resource = readResource(SCIMMY.Schemas.Group, normaliseResource(body));
  const displayName = String(resource.displayName);
  const id = newId('grp', context.now);
  await context.db.transaction().execute(async (trx) => {
    await ensureNameFree(trx, context, displayName);
    const ids = await memberIds(trx, context, resource);
    await trx
      .insertInto('scim_groups')
      .values({
        workspace_id: context.workspaceId,
        directory: context.directory,
        id,
        display_name: displayName,
        external_id: typeof resource.externalId === 'string' ? resource.externalId : null,
        created_at: iso(context.now),
        updated_at: iso(context.now),
      })
      .execute();
    for (const userId of (await setMembers(trx, context, id, ids)).changed) await syncMember(trx, context, userId);
  });
  return readGroup(context, id);
}

async function writeGroup(context: ScimContext, id: string, resource: ScimObject): Promise<void> {
  const displayName = String(resource.displayName);
  await context.db.transaction().execute(async (trx) => {
    const row = await findGroup(trx, context, id);
    await ensureNameFree(trx, context, displayName, id);
    const ids = await memberIds(trx, context, resource);
    await trx
      .updateTable('scim_groups')
      .set({
        display_name: displayName,
        external_id: typeof resource.externalId === 'string' ? resource.externalId : null,
        updated_at: iso(context.now),
      })
      .where('workspace_id', '=', context.workspaceId)
      .where('id', '=', id)
      .execute();
    const { changed, everyone } = await setMembers(trx, context, id, ids);
    // A renamed group may give or take a role: everyone who was or is in it is brought up to date then.
    for (const userId of row.display_name === displayName ? changed : everyone) await syncMember(trx, context, userId);
  });
}

export async function replaceGroup(context: ScimContext, id: string, body: unknown) {
  await writeGroup(context, id, readResource(SCIMMY.Schemas.Group, normaliseResource(body)));
  return readGroup(context, id);
}

export async function patchGroup(context: ScimContext, id: string, body: unknown) {
  const row = await findGroup(context.db, context, id);
  const members = await membersOfGroups(context.db, context, [id]);
  const patched = await applyPatch(SCIMMY.Schemas.Group, stored(row, members.get(id)), body);
  await writeGroup(context, id, readResource(SCIMMY.Schemas.Group, patched));
  return readGroup(context, id);
}

export async function deleteGroup(context: ScimContext, id: string): Promise<void> {
  await context.db.transaction().execute(async (trx) => {
    await findGroup(trx, context, id);
    const { changed } = await setMembers(trx, context, id, []);
    await trx.deleteFrom('scim_groups').where('workspace_id', '=', context.workspaceId).where('id', '=', id).execute();
    for (const userId of changed) await syncMember(trx, context, userId);
  });
}

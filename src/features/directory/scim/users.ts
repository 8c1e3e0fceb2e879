// SCIM Users of a directory (RFC 7643 §4.1): each is a person, by email, whose `id` is their `usr_…` id. A user is
// this directory's alone: a person already a member through the API, or provisioned by another directory, is refused
// (409 uniqueness) rather than taken over. What the directory sends is kept as it sent it and given back; the
// workspace's membership follows `active` (membership.ts).
import type { Selectable, Transaction } from 'kysely';
import { iso } from '../../../platform/clock.ts';
import type { Database } from '../../../storage/schema.ts';
import { membersOf, userByEmail } from '../../workspace/index.ts';
import type { ScimUsersTable } from '../schema.ts';
import type { ScimContext } from './context.ts';
import { normaliseResource } from './entra.ts';
import { syncMember } from './membership.ts';
import { listResponse, matchFilter, type ReadParameters, simpleEquality } from './query.ts';
import { applyPatch, readResource, type ScimObject } from './resources.ts';
import { SCIMMY, scimError } from './scimmy.ts';

type UserRow = Selectable<ScimUsersTable>;
type Db = ScimContext['db'] | Transaction<Database>;

/**
 * An address: a local part, `@`, and a domain with a dot neither first nor last. The domain is read as its first
 * character, the rest up to its first dot, and anything after: `[^…]+\.[^…]+$` would try every dot of a long userName
 * against the rest, quadratic in what a directory sends (a request of up to 1 MiB).
 */
const EMAIL =
  /^[^\s@"<>,;:()[\]\\]+@[^\s@"<>,;:()[\]\\][^\s@"<>,;:()[\]\\.]*\.[^\s@"<>,;:()[\]\\]*[^\s@"<>,;:()[\]\\]$/;
const MAX_EMAIL = 254;
const MAX_NAME = 100;

function usersOf(db: Db, context: ScimContext) {
  return db
    .selectFrom('scim_users')
    .selectAll()
    .where('workspace_id', '=', context.workspaceId)
    .where('directory', '=', context.directory);
}

/**
 * The person's email: userName when it is an address (Okta's login, Entra's user principal name), else the primary,
 * the work or the first of `emails`.
 */
function emailOf(resource: ScimObject): string {
  const userName = String(resource.userName);
  if (EMAIL.test(userName) && userName.length <= MAX_EMAIL) return userName.toLowerCase();
  const emails = Array.isArray(resource.emails) ? (resource.emails as Array<Record<string, unknown>>) : [];
  const chosen = emails.find((e) => e.primary === true) ?? emails.find((e) => e.type === 'work') ?? emails[0];
  const value = typeof chosen?.value === 'string' ? chosen.value : '';
  if (EMAIL.test(value) && value.length <= MAX_EMAIL) return value.toLowerCase();
  throw scimError(
    400,
    'invalidValue',
    "A member is a person by email: userName or emails must hold the person's email address.",
  );
}

/** The person's name for the workspace's members list: displayName, else name.formatted, else given and family. */
function nameOf(resource: ScimObject): string | null {
  const name = (resource.name ?? {}) as Record<string, unknown>;
  const parts = [name.givenName, name.familyName].filter((p): p is string => typeof p === 'string' && p !== '');
  const chosen =
    (typeof resource.displayName === 'string' && resource.displayName) ||
    (typeof name.formatted === 'string' && name.formatted) ||
    parts.join(' ');
  return chosen ? chosen.slice(0, MAX_NAME) : null;
}

async function groupsOf(db: Db, context: ScimContext, userIds: string[]) {
  const groups = new Map<string, Array<{ value: string; display: string; $ref: string; type: string }>>();
  if (userIds.length === 0) return groups;
  const rows = await db
    .selectFrom('scim_group_members')
    .innerJoin('scim_groups', (join) =>
      join
        .onRef('scim_groups.id', '=', 'scim_group_members.group_id')
        .onRef('scim_groups.workspace_id', '=', 'scim_group_members.workspace_id'),
    )
    .select(['scim_group_members.user_id', 'scim_groups.id', 'scim_groups.display_name'])
    .where('scim_group_members.workspace_id', '=', context.workspaceId)
    .where('scim_group_members.user_id', 'in', userIds)
    .orderBy('scim_groups.id')
    .execute();
  for (const row of rows) {
    const list = groups.get(row.user_id) ?? [];
    list.push({ value: row.id, display: row.display_name, $ref: `${context.base}/Groups/${row.id}`, type: 'direct' });
    groups.set(row.user_id, list);
  }
  return groups;
}

/** The stored user as a SCIM object, before the schema's output rules (attributes, location). */
function stored(row: UserRow, groups: unknown[] | undefined): ScimObject {
  return {
    ...(JSON.parse(row.attributes) as ScimObject),
    id: row.id,
    userName: row.user_name,
    ...(row.external_id === null ? {} : { externalId: row.external_id }),
    active: row.active === 1,
    ...(groups?.length ? { groups } : {}),
    meta: { resourceType: 'User', created: row.created_at, lastModified: row.updated_at },
  };
}

function output(context: ScimContext, object: ScimObject, attributes?: ReadParameters['attributes']) {
  return new SCIMMY.Schemas.User(object, 'out', `${context.base}/Users`, attributes as never);
}

async function findUser(db: Db, context: ScimContext, id: string): Promise<UserRow> {
  const row = await usersOf(db, context).where('id', '=', id).executeTakeFirst();
  if (!row) throw scimError(404, null, `No user ${id} in this directory.`);
  return row;
}

export async function readUser(context: ScimContext, id: string, attributes?: ReadParameters['attributes']) {
  const row = await findUser(context.db, context, id);
  const groups = await groupsOf(context.db, context, [row.id]);
  return output(context, stored(row, groups.get(row.id)), attributes);
}

export async function listUsers(context: ScimContext, parameters: ReadParameters) {
  let query = usersOf(context.db, context);
  const equality = simpleEquality(parameters.filter, ['userName', 'externalId', 'id']);
  if (equality?.attribute === 'userName') query = query.where('user_name_key', '=', equality.value.toLowerCase());
  if (equality?.attribute === 'externalId') query = query.where('external_id', '=', equality.value);
  if (equality?.attribute === 'id') query = query.where('id', '=', equality.value);
  const rows = await query.orderBy('created_at').orderBy('id').execute();
  const groups = await groupsOf(
    context.db,
    context,
    rows.map((r) => r.id),
  );
  let objects = rows.map((row) => stored(row, groups.get(row.id)));
  if (parameters.filter && !equality) objects = matchFilter(parameters.filter, SCIMMY.Schemas.User, objects);
  return listResponse(
    objects.map((object) => output(context, object, parameters.attributes)),
    parameters,
  );
}

export async function createUser(context: ScimContext, body: unknown) {
  const resource = readResource(SCIMMY.Schemas.User, normaliseResource(body));
  const email = emailOf(resource);
  const userName = String(resource.userName);
  const id = await context.db.transaction().execute(async (trx) => {
    const taken = await usersOf(trx, context).where('user_name_key', '=', userName.toLowerCase()).executeTakeFirst();
    if (taken)
      throw scimError(409, 'uniqueness', `userName ${userName} is user ${taken.id} of this directory already.`);
    const userId = await userByEmail(trx, email, nameOf(resource), context.now);
    const elsewhere = await trx
      .selectFrom('scim_users')
      .select(['directory'])
      .where('workspace_id', '=', context.workspaceId)
      .where('id', '=', userId)
      .executeTakeFirst();
    if (elsewhere) {
      throw scimError(409, 'uniqueness', `${email} is provisioned by the directory ${elsewhere.directory} already.`);
    }
    const member = await membersOf(trx, context.workspaceId).where('members.user_id', '=', userId).executeTakeFirst();
    if (member) {
      throw scimError(
        409,
        'uniqueness',
        `${email} is a member of the workspace added through the API; remove them (DELETE /v1/members/${userId}) for the directory to manage them, or leave them out of its assignments.`,
      );
    }
    await trx
      .insertInto('scim_users')
      .values({
        ...columns(resource, userName),
        workspace_id: context.workspaceId,
        directory: context.directory,
        id: userId,
        created_at: iso(context.now),
        updated_at: iso(context.now),
      })
      .execute();
    await syncMember(trx, context, userId);
    return userId;
  });
  return readUser(context, id);
}

function columns(resource: ScimObject, userName: string) {
  const { userName: _, externalId, active, ...rest } = resource;
  return {
    user_name: userName,
    user_name_key: userName.toLowerCase(),
    external_id: typeof externalId === 'string' ? externalId : null,
    // A user created without `active` is active (RFC 7643 leaves it to the provider; Okta and Entra send it).
    active: active === false ? 0 : 1,
    attributes: JSON.stringify(rest),
  };
}

/** PUT: the user becomes what the body says. The person (their email) cannot change: 400 mutability. */
export async function replaceUser(context: ScimContext, id: string, body: unknown) {
  const resource = readResource(SCIMMY.Schemas.User, normaliseResource(body));
  await writeUser(context, id, resource);
  return readUser(context, id);
}

async function writeUser(context: ScimContext, id: string, resource: ScimObject): Promise<void> {
  const userName = String(resource.userName);
  const email = emailOf(resource);
  await context.db.transaction().execute(async (trx) => {
    const row = await findUser(trx, context, id);
    const taken = await usersOf(trx, context)
      .where('user_name_key', '=', userName.toLowerCase())
      .where('id', '!=', id)
      .executeTakeFirst();
    if (taken)
      throw scimError(409, 'uniqueness', `userName ${userName} is user ${taken.id} of this directory already.`);
    const person = await trx
      .selectFrom('users')
      .select(['email', 'name'])
      .where('id', '=', row.id)
      .executeTakeFirstOrThrow();
    if (person.email !== email) {
      throw scimError(
        400,
        'mutability',
        `User ${id} is the person ${person.email}; a member's email does not change. Deprovision the user and provision ${email} as a new one.`,
      );
    }
    await trx
      .updateTable('scim_users')
      .set({ ...columns(resource, userName), updated_at: iso(context.now) })
      .where('workspace_id', '=', context.workspaceId)
      .where('id', '=', id)
      .execute();
    // The directory keeps the person's name: the member shows what it says now. A user without a name leaves the
    // one the person has. A person is one row for every workspace they are in, so a directory renames only a person
    // no other workspace has: one workspace's directory does not rename someone in another. No event: the
    // specification's catalogue has none for a changed member.
    const name = nameOf(resource);
    if (name !== null && name !== person.name) {
      const elsewhere = await trx
        .selectFrom('members')
        .select('user_id')
        .where('user_id', '=', row.id)
        .where('workspace_id', '!=', context.workspaceId)
        .executeTakeFirst();
      if (!elsewhere) await trx.updateTable('users').set({ name }).where('id', '=', row.id).execute();
    }
    await syncMember(trx, context, id);
  });
}

/** PATCH: the PatchOp applied to the user as stored, then written as PUT writes it. */
export async function patchUser(context: ScimContext, id: string, body: unknown) {
  const row = await findUser(context.db, context, id);
  const patched = await applyPatch(SCIMMY.Schemas.User, stored(row, undefined), body);
  await writeUser(context, id, readResource(SCIMMY.Schemas.User, patched));
  return readUser(context, id);
}

/** DELETE: the user is gone from the directory, their group memberships with them, and they are no member. */
export async function deleteUser(context: ScimContext, id: string): Promise<void> {
  await context.db.transaction().execute(async (trx) => {
    await findUser(trx, context, id);
    await trx
      .deleteFrom('scim_group_members')
      .where('workspace_id', '=', context.workspaceId)
      .where('user_id', '=', id)
      .execute();
    await trx.deleteFrom('scim_users').where('workspace_id', '=', context.workspaceId).where('id', '=', id).execute();
    await syncMember(trx, context, id);
  });
}

// The directory feature: directory tokens (tokens.ts) and the SCIM 2.0 endpoints through which a company's directory
// provisions the workspace's members (scim/), with the same member records, events and audit entries as the API's.
import type { Kysely } from 'kysely';
import type { Feature } from '../../platform/feature.ts';
import type { Database } from '../../storage/schema.ts';
import { directories } from './migrations/025_directories.ts';
import { scimRouter } from './scim/router.ts';
import { directoryTokenHandlers } from './tokens.ts';

export const directoryFeature = {
  name: 'directory',
  handlers: directoryTokenHandlers,
  migrations: { '025_directories': directories },
  pages: scimRouter,
} satisfies Feature;

/**
 * Whether a directory keeps the person as a user of the workspace, and whether it has them active: a person a
 * directory deactivated is not made a member again by another way in (single sign-on's just-in-time members).
 */
export async function directoryUserOf(
  db: Kysely<Database>,
  workspaceId: string,
  userId: string,
): Promise<{ directory: string; active: boolean } | undefined> {
  const row = await db
    .selectFrom('scim_users')
    .select(['directory', 'active'])
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', userId)
    .executeTakeFirst();
  return row ? { directory: row.directory, active: row.active === 1 } : undefined;
}

// Connections that are required for their domains: a person whose email is in such a domain signs in to the workspace
// through that connection only. The sessions feature asks this before it signs a person in another way.
import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.ts';

export async function requiredConnectionFor(db: Kysely<Database>, workspaceId: string, email: string) {
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  return db
    .selectFrom('sso_domains')
    .innerJoin('sso_connections', 'sso_connections.id', 'sso_domains.connection_id')
    .innerJoin('workspaces', 'workspaces.id', 'sso_connections.workspace_id')
    .selectAll('sso_connections')
    .select('workspaces.region')
    .where('sso_domains.workspace_id', '=', workspaceId)
    .where('sso_domains.domain', '=', domain)
    .where('sso_connections.required', '=', 1)
    .executeTakeFirst();
}

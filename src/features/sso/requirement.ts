// Connections that are required for their domains: a person whose email is in such a domain signs in to the workspace
// through that connection only. The sessions feature asks this before it signs a person in another way.
import type { Kysely } from 'kysely';
import type { SignInGuard } from '../../platform/feature.ts';
import type { Database } from '../../storage/schema.ts';
import { connectionUrls } from './presenters.ts';

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

/**
 * The sessions feature's guard: a person whose email's domain requires a connection is sent to it when they sign
 * in another way (a sign-in link). A sign-in through a connection was checked against the requirement already.
 */
export const requireSsoForDomains: SignInGuard = async (platform, signIn) => {
  if (signIn.method === 'oidc' || signIn.method === 'saml') return null;
  const user = await platform.db.selectFrom('users').select('email').where('id', '=', signIn.userId).executeTakeFirst();
  if (!user) return null;
  const required = await requiredConnectionFor(platform.db, signIn.workspaceId, user.email);
  if (!required) return null;
  const base = platform.config.regionBaseUrls[required.region as keyof typeof platform.config.regionBaseUrls];
  const start = new URL(connectionUrls(base, required.id).start);
  if (signIn.returnTo) start.searchParams.set('return_to', signIn.returnTo);
  return {
    redirectTo: start.href,
    reason: `People of ${domainOfEmail(user.email)} sign in through single sign-on (${required.name}) only.`,
  };
};

function domainOfEmail(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1).toLowerCase();
}

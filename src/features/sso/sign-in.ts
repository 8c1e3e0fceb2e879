// The end of every sign-in through a connection: the person the identity provider vouched for is matched by email
// to a member of the workspace, or becomes one with the connection's default role (just in time, with
// `workspace.member.added` and the audit entry, as the API and a directory add members), and then gets a session.
import type { Response } from 'express';
import { bySystem } from '../../platform/audit.ts';
import type { Platform } from '../../platform/context.ts';
import { Problem } from '../../platform/problems.ts';
import { directoryUserOf } from '../directory/index.ts';
import { addMemberRecord, membersOf, userByEmail } from '../workspace/index.ts';
import { connectionUrls, type SsoConnectionRow } from './presenters.ts';
import { requiredConnectionFor } from './requirement.ts';
import { startSignedInSession } from './session.ts';

export interface ProvenPerson {
  email: string | null;
  /** False when the identity provider says the email is not verified. */
  emailVerified?: boolean | null;
  name: string | null;
}

export function domainOf(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1);
}

/** The member the person is, created when they are not one yet; refuses who the connection may not sign in. */
export async function memberForSignIn(
  platform: Platform,
  connection: SsoConnectionRow,
  person: ProvenPerson,
  now: Date,
): Promise<{ userId: string; created: boolean }> {
  const email = person.email?.trim().toLowerCase() ?? '';
  if (!email.includes('@') || email.length > 254)
    throw new Problem(
      'sso_email_not_allowed',
      'The identity provider did not say who the person is by email; release the email claim (OpenID Connect scope `email`) or attribute (SAML `email`) to the application.',
    );
  if (person.emailVerified === false)
    throw new Problem('sso_email_not_allowed', `The identity provider says ${email} is not verified.`);
  const domains = await platform.db
    .selectFrom('sso_domains')
    .select('domain')
    .where('connection_id', '=', connection.id)
    .execute();
  if (domains.length > 0 && !domains.some((row) => row.domain === domainOf(email)))
    throw new Problem(
      'sso_email_not_allowed',
      `${email} is not in the connection's domains (${domains.map((row) => row.domain).join(', ')}); it signs in only people of those domains.`,
    );
  const required = await requiredConnectionFor(platform.db, connection.workspace_id, email);
  if (required && required.id !== connection.id) throw ssoRequired(platform, email, required);

  const origin = bySystem(connection.workspace_id, 'sso', now);
  return platform.db.transaction().execute(async (trx) => {
    const userId = await userByEmail(trx, email, person.name, now);
    const member = await membersOf(trx, connection.workspace_id)
      .where('members.user_id', '=', userId)
      .executeTakeFirst();
    if (member) return { userId, created: false };
    // A person the directory deactivated stays out until the directory activates them again: a sign-in does not
    // undo the directory's decision.
    const inDirectory = await directoryUserOf(trx, connection.workspace_id, userId);
    if (inDirectory && !inDirectory.active)
      throw new Problem(
        'managed_by_directory',
        `${email} is deactivated in the directory ${inDirectory.directory}, which manages their membership; the directory activates them again.`,
      );
    const added = await addMemberRecord(trx, origin, {
      userId,
      email,
      role: connection.default_role,
      addedByApiKeyId: null,
      scimSource: null,
    });
    return { userId, created: added !== undefined };
  });
}

/** The refusal of a person who signs in through the connection that their domain requires, naming where to go. */
export function ssoRequired(
  platform: Platform,
  email: string,
  required: SsoConnectionRow & { region: string },
): Problem {
  const base = platform.config.regionBaseUrls[required.region as keyof typeof platform.config.regionBaseUrls];
  const startUrl = connectionUrls(base, required.id).start;
  return new Problem(
    'sso_required',
    `People of ${domainOf(email)} sign in to this workspace through single sign-on (${required.name}) only: ${startUrl}`,
    { extra: { sso_start_url: startUrl, sso_connection_id: required.id } },
  );
}

/** Signs the person in: the member found or made, then the session and the redirect to where they were going. */
export async function completeSignIn(
  platform: Platform,
  res: Response,
  connection: SsoConnectionRow,
  person: ProvenPerson,
  returnTo: string | null,
  now: Date,
): Promise<void> {
  const { userId } = await memberForSignIn(platform, connection, person, now);
  await startSignedInSession(platform, res, {
    workspaceId: connection.workspace_id,
    userId,
    method: connection.protocol,
    ...(returnTo ? { returnTo } : {}),
  });
}

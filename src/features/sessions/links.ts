// One-time sign-in links: a token of 238 random bits in the link, its SHA-256 at rest, good for 15 minutes and for
// one sign-in. Made by `npm run cli -- login-link` (printed) and by POST /v1/sessions/links (emailed).
import type { Kysely, Transaction } from 'kysely';
import { hashSecret, newSecret } from '../../platform/auth.ts';
import { iso } from '../../platform/clock.ts';
import { newId } from '../../platform/ids.ts';
import type { Database } from '../../storage/schema.ts';

export const SIGN_IN_LINK_LIFETIME_MS = 15 * 60_000;
/** The path a link opens; its token is the `token` query parameter. */
export const SIGN_IN_LINK_PATH = '/sign-in/link';

export interface SignInLink {
  url: string;
  expiresAt: string;
  userId: string;
}

/**
 * A new link for the member of the workspace with this email (any case), or null when there is none. `returnTo` must
 * already be a path of this server (return-to.ts).
 */
export async function createSignInLink(
  db: Kysely<Database> | Transaction<Database>,
  values: { workspaceId: string; email: string; returnTo: string | null; baseUrl: string; now: Date },
): Promise<SignInLink | null> {
  const member = await db
    .selectFrom('members')
    .innerJoin('users', 'users.id', 'members.user_id')
    .select('members.user_id')
    .where('members.workspace_id', '=', values.workspaceId)
    .where((eb) => eb(eb.fn('lower', ['users.email']), '=', values.email.toLowerCase()))
    .executeTakeFirst();
  if (!member) return null;
  const token = newSecret('cs_link_');
  const expiresAt = iso(new Date(values.now.getTime() + SIGN_IN_LINK_LIFETIME_MS));
  await db
    .insertInto('sign_in_links')
    .values({
      id: newId('sil', values.now),
      workspace_id: values.workspaceId,
      user_id: member.user_id,
      token_hash: hashSecret(token),
      return_to: values.returnTo,
      created_at: iso(values.now),
      expires_at: expiresAt,
      used_at: null,
    })
    .execute();
  const url = new URL(SIGN_IN_LINK_PATH, `${values.baseUrl}/`);
  url.searchParams.set('token', token);
  return { url: url.href, expiresAt, userId: member.user_id };
}

const TOKEN = /^cs_link_[0-9A-Za-z]{40}$/;

/** The link of `token` while it may still be used (unused, unexpired), with its member's email and workspace's name. */
export async function findUsableLink(db: Kysely<Database>, token: string | undefined, now: Date) {
  if (!token || !TOKEN.test(token)) return undefined;
  return db
    .selectFrom('sign_in_links')
    .innerJoin('users', 'users.id', 'sign_in_links.user_id')
    .innerJoin('workspaces', 'workspaces.id', 'sign_in_links.workspace_id')
    .select([
      'sign_in_links.id',
      'sign_in_links.workspace_id',
      'sign_in_links.user_id',
      'sign_in_links.return_to',
      'users.email',
      'workspaces.name as workspace_name',
    ])
    .where('sign_in_links.token_hash', '=', hashSecret(token))
    .where('sign_in_links.used_at', 'is', null)
    .where('sign_in_links.expires_at', '>', iso(now))
    .executeTakeFirst();
}

/** Marks the link of `token` used, once: the second of two redemptions at once finds nothing. */
export async function redeemLink(db: Kysely<Database>, token: string | undefined, now: Date) {
  const link = await findUsableLink(db, token, now);
  if (!link) return undefined;
  const used = await db
    .updateTable('sign_in_links')
    .set({ used_at: iso(now) })
    .where('id', '=', link.id)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(used.numUpdatedRows) === 1 ? link : undefined;
}

/** How many links the member was sent lately: POST /v1/sessions/links sends no more than a few in 15 minutes. */
export async function recentLinks(db: Kysely<Database>, workspaceId: string, userId: string, now: Date) {
  const { count } = await db
    .selectFrom('sign_in_links')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('workspace_id', '=', workspaceId)
    .where('user_id', '=', userId)
    .where('created_at', '>', iso(new Date(now.getTime() - SIGN_IN_LINK_LIFETIME_MS)))
    .executeTakeFirstOrThrow();
  return Number(count);
}

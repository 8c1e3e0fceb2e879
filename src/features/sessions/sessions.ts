// People's sessions: started once a person has proven who they are (a sign-in link here; single sign-on through
// startSession), carried by a cookie whose secret is stored hashed, ended by signing out, by their lifetimes, or when
// the member goes (their keys are revoked with the removal, the session's own among them).
//
// Each session's requests are made by an API key of its own (api_keys.session_id), owned by the member: whatever the
// API records of a request (request log, audit actor, usage, a run's api_key_id, an approval's decided_by_key_id)
// names a key, as the contract promises, and the member's removal, which revokes their keys, ends the session at once.
// Nobody holds that key's secret; the key list leaves it out.
import { randomBytes } from 'node:crypto';
import type { Response } from 'express';
import type { Transaction } from 'kysely';
import { type AuditOrigin, recordAudit } from '../../platform/audit.ts';
import { hashSecret, newSecret } from '../../platform/auth.ts';
import { iso } from '../../platform/clock.ts';
import { locals, type Platform } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import type { Database } from '../../storage/schema.ts';
import { insertApiKey } from '../workspace/index.ts';
import { setSessionCookie } from './cookie.ts';
import { localPath } from './return-to.ts';
import type { SignInMethod } from './schema.ts';
import { signInNotice } from './sign-in-page.ts';

/** A session ends after 12 hours without a request… */
export const SESSION_IDLE_MS = 12 * 3_600_000;
/** …and 7 days after it began, whatever its use. */
export const SESSION_ABSOLUTE_MS = 7 * 24 * 3_600_000;

/** Where a person lands after signing in when no `return_to` says otherwise. */
export const DEFAULT_LANDING = '/dashboard';

export interface StartSessionOptions {
  workspaceId: string;
  /** The person (`usr_…`), who has proven who they are: a member of the workspace. */
  userId: string;
  method: SignInMethod;
  /** A path of this server to land on (`/approvals/…`); anything else lands on the dashboard. */
  returnTo?: string | null;
}

/**
 * Starts a session for a person who has proven who they are, and answers the request: the session cookie and a
 * `303 See Other` to `returnTo` (a path of this server) or the dashboard. When the person is not a member of the
 * workspace, or the workspace is not served here, it answers a `403` page instead and returns null; otherwise the
 * session's id. Audited as `session.started` (`details.method`).
 */
export async function startSession(
  platform: Platform,
  res: Response,
  options: StartSessionOptions,
): Promise<string | null> {
  const req = res.req;
  const now = platform.clock.now();
  // Another feature may require another way in for this person (single sign-on for their email's domain): they are
  // sent there instead of being signed in.
  for (const feature of platform.features) {
    const refusal = await feature.signInGuard?.(platform, options);
    if (refusal) {
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(303, refusal.redirectTo);
      return null;
    }
  }
  const started = await platform.db.transaction().execute((trx) =>
    insertSession(trx, platform, {
      ...options,
      now,
      ip: req.ip ?? null,
      userAgent: req.get('user-agent')?.slice(0, 500) ?? null,
      requestId: locals(res).requestId ?? null,
    }),
  );
  if (!started) {
    signInNotice(
      res,
      403,
      'You cannot sign in here',
      'You are not a member of this workspace, or it is not served by this server. Ask an owner of the workspace to add you.',
    );
    return null;
  }
  setSessionCookie(res, platform.config, started.secret, new Date(started.expiresAt));
  res.setHeader('Cache-Control', 'no-store');
  res.redirect(303, localPath(options.returnTo, platform.config.publicBaseUrl) ?? DEFAULT_LANDING);
  return started.id;
}

async function insertSession(
  trx: Transaction<Database>,
  platform: Platform,
  values: StartSessionOptions & { now: Date; ip: string | null; userAgent: string | null; requestId: string | null },
): Promise<{ id: string; secret: string; expiresAt: string } | null> {
  const { now } = values;
  const member = await trx
    .selectFrom('members')
    .innerJoin('workspaces', 'workspaces.id', 'members.workspace_id')
    .innerJoin('users', 'users.id', 'members.user_id')
    .select(['members.role', 'users.email', 'workspaces.region'])
    .where('members.workspace_id', '=', values.workspaceId)
    .where('members.user_id', '=', values.userId)
    .executeTakeFirst();
  if (!member || member.region !== platform.config.region) return null;
  const id = newId('ses', now);
  const secret = newSecret('cs_sess_');
  const expiresAt = iso(new Date(now.getTime() + SESSION_ABSOLUTE_MS));
  const { key } = await insertApiKey(trx, {
    workspaceId: values.workspaceId,
    name: `${member.email}, signed in (${values.method})`.slice(0, 100),
    role: member.role,
    expiresAt,
    createdBy: null,
    userId: values.userId,
    sessionId: id,
    now,
  });
  await trx
    .insertInto('sessions')
    .values({
      id,
      workspace_id: values.workspaceId,
      user_id: values.userId,
      api_key_id: key.id,
      secret_hash: hashSecret(secret),
      csrf_token: randomBytes(32).toString('base64url'),
      method: values.method,
      ip: values.ip,
      user_agent: values.userAgent,
      created_at: iso(now),
      last_seen_at: iso(now),
      expires_at: expiresAt,
      ended_at: null,
    })
    .execute();
  const origin: AuditOrigin = {
    workspaceId: values.workspaceId,
    actor: { type: 'api_key', apiKeyId: key.id, name: key.name, role: key.role },
    request: values.ip ? { ip: values.ip, userAgent: values.userAgent, requestId: values.requestId ?? '' } : null,
    now,
  };
  await recordAudit(trx, origin, {
    action: 'session.started',
    target: { type: 'session', id, display_name: member.email },
    details: { method: values.method },
  });
  return { id, secret, expiresAt };
}

/** Ends the session and revokes its key (signing out); false when it had ended already. */
export async function endSession(
  trx: Transaction<Database>,
  origin: AuditOrigin,
  session: { id: string; api_key_id: string },
): Promise<boolean> {
  const now = iso(origin.now);
  const ended = await trx
    .updateTable('sessions')
    .set({ ended_at: now })
    .where('id', '=', session.id)
    .where('ended_at', 'is', null)
    .executeTakeFirst();
  if (Number(ended.numUpdatedRows) === 0) return false;
  await trx
    .updateTable('api_keys')
    .set({ revoked_at: now, updated_at: now })
    .where('id', '=', session.api_key_id)
    .where('revoked_at', 'is', null)
    .execute();
  await recordAudit(trx, origin, {
    action: 'session.ended',
    target: { type: 'session', id: session.id, display_name: null },
  });
  return true;
}

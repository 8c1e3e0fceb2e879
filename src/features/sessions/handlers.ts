// The sessions' operations: the current session (who is signed in, the CSRF token), signing out of it or of another
// of one's sessions, listing one's sessions, and emailing a one-time sign-in link.
import { createRequire } from 'node:module';
import type { Selectable } from 'kysely';
import type { Handlers } from '../../../generated/operations.ts';
import { byRequest } from '../../platform/audit.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem } from '../../platform/problems.ts';
import { consumePublicBudget } from '../../platform/rate-limit.ts';
import { clearSessionCookieHeader } from './cookie.ts';
import { createSignInLink, recentLinks } from './links.ts';
import { localPath } from './return-to.ts';
import type { SessionsTable } from './schema.ts';
import { endSession, SESSION_IDLE_MS } from './sessions.ts';

/** Links a member is sent in 15 minutes by POST /v1/sessions/links, at most. */
const LINKS_PER_MEMBER = 5;
/** Workspaces one request sends links for, at most (a person without `workspace_id`). */
const MAX_WORKSPACES_PER_EMAIL = 20;

function usableSessions(context: RequestContext, userId: string) {
  const now = iso(context.now);
  return context.platform.db
    .selectFrom('sessions')
    .selectAll()
    .where('workspace_id', '=', context.caller.workspace.id)
    .where('user_id', '=', userId)
    .where('ended_at', 'is', null)
    .where('expires_at', '>', now)
    .where('last_seen_at', '>', iso(new Date(context.now.getTime() - SESSION_IDLE_MS)));
}

function present(row: Selectable<SessionsTable>, currentId: string | undefined) {
  const idleEnd = new Date(Math.min(Date.parse(row.last_seen_at) + SESSION_IDLE_MS, Date.parse(row.expires_at)));
  return {
    id: row.id,
    object: 'session' as const,
    user_id: row.user_id,
    method: row.method,
    current: row.id === currentId,
    ip: row.ip,
    user_agent: row.user_agent,
    created_at: row.created_at,
    last_seen_at: row.last_seen_at,
    idle_expires_at: iso(idleEnd),
    expires_at: row.expires_at,
  };
}

function noSession(): Problem {
  return new Problem('not_found', 'This request was made with an API key, not a session: there is no current session.');
}

// nodemailer is loaded by a process that sends mail (SMTP_URL set) only.
let transport: import('nodemailer').Transporter | undefined;
function mailer(smtpUrl: string) {
  transport ??= (createRequire(import.meta.url)('nodemailer') as typeof import('nodemailer')).createTransport(smtpUrl);
  return transport;
}

export const sessionHandlers = {
  async getCurrentSession(_request, context) {
    const { sessionId, workspace } = context.caller;
    if (!sessionId) throw noSession();
    const row = await context.platform.db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .selectAll('sessions')
      .select(['users.email', 'users.name'])
      .where('sessions.id', '=', sessionId)
      .executeTakeFirstOrThrow();
    const { email, name, ...session } = row;
    return {
      status: 200,
      contentType: 'application/json',
      body: {
        ...present(session, sessionId),
        user: { id: session.user_id, email, name },
        workspace: { id: workspace.id, name: workspace.name },
        role: context.caller.role,
        csrf_token: session.csrf_token,
      },
    };
  },

  async deleteCurrentSession(_request, context) {
    const { sessionId, apiKey } = context.caller;
    if (!sessionId) throw noSession();
    await context.platform.db
      .transaction()
      .execute((trx) => endSession(trx, byRequest(context), { id: sessionId, api_key_id: apiKey.id }));
    return { status: 204, headers: { 'Set-Cookie': clearSessionCookieHeader(context.platform.config) } };
  },

  async listSessions(request, context) {
    const page = pageRequest(request.query);
    const { userId, sessionId } = context.caller;
    if (userId === null) {
      return { status: 200, contentType: 'application/json', body: { data: [], next_cursor: null } };
    }
    const rows = await paginate(usableSessions(context, userId), { id: 'id' }, page).execute();
    const { body, headers } = toPage(
      rows,
      page,
      (row) => ({ id: row.id }),
      (row) => present(row, sessionId),
      context.url,
    );
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async revokeSession(request, context) {
    const { userId } = context.caller;
    const session =
      userId === null
        ? undefined
        : await usableSessions(context, userId).where('id', '=', request.path.id).executeTakeFirst();
    if (!session) throw notFound('session', request.path.id);
    await context.platform.db.transaction().execute((trx) => endSession(trx, byRequest(context), session));
    const headers: Record<string, string> = {};
    if (session.id === context.caller.sessionId)
      headers['Set-Cookie'] = clearSessionCookieHeader(context.platform.config);
    return { status: 204, headers };
  },

  async createSignInLink(request, context) {
    const { platform } = context;
    const headers = await consumePublicBudget(platform.rateLimitStore, context.ip);
    const { email, workspace_id: workspaceId, return_to: returnTo } = request.body;
    const landing = returnTo === undefined ? null : localPath(returnTo, platform.config.publicBaseUrl);
    if (returnTo !== undefined && landing === null) {
      throw new Problem('validation_failed', 'The request has 1 invalid field.', {
        errors: [{ pointer: '/return_to', detail: 'must be a path of this server, starting with one /' }],
      });
    }
    const smtpUrl = platform.config.smtpUrl;
    if (!smtpUrl) {
      throw new Problem(
        'email_not_configured',
        'This server sends no email (SMTP_URL is not set); ask an operator for a sign-in link (npm run cli -- login-link).',
      );
    }
    const links = await platform.db.transaction().execute(async (trx) => {
      let query = trx
        .selectFrom('members')
        .innerJoin('users', 'users.id', 'members.user_id')
        .innerJoin('workspaces', 'workspaces.id', 'members.workspace_id')
        .select(['members.user_id', 'members.workspace_id', 'workspaces.name'])
        .where('workspaces.region', '=', platform.config.region)
        .where((eb) => eb(eb.fn('lower', ['users.email']), '=', email.toLowerCase()))
        .orderBy('members.workspace_id')
        .limit(MAX_WORKSPACES_PER_EMAIL);
      if (workspaceId !== undefined) query = query.where('members.workspace_id', '=', workspaceId);
      const made: Array<{ workspace: string; url: string; userId: string }> = [];
      for (const member of await query.execute()) {
        if ((await recentLinks(trx, member.workspace_id, member.user_id, context.now)) >= LINKS_PER_MEMBER) continue;
        const link = await createSignInLink(trx, {
          workspaceId: member.workspace_id,
          email,
          returnTo: landing,
          baseUrl: platform.config.publicBaseUrl,
          now: context.now,
        });
        if (link) made.push({ workspace: member.name, url: link.url, userId: link.userId });
      }
      return made;
    });
    // Sent after the answer, so that the answer takes as long for a member as for a stranger. A lost email (the
    // process ends first, the SMTP server refuses it) is asked for again.
    if (links.length > 0) {
      mailer(smtpUrl)
        .sendMail({
          from: platform.config.mailFrom,
          to: email,
          subject: 'Your sign-in link',
          text: [
            `Open a link to sign in. Each works once, for 15 minutes:`,
            '',
            ...links.flatMap((link) => [`${link.workspace}:`, link.url, '']),
            'If you did not ask for this, ignore this email: nobody can sign in without the link.',
          ].join('\n'),
        })
        .catch((error: unknown) =>
          platform.logger.warn({ err: error, user_id: links[0]!.userId }, 'a sign-in link email was not sent'),
        );
    }
    return { status: 202, headers };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  'getCurrentSession' | 'deleteCurrentSession' | 'listSessions' | 'revokeSession' | 'createSignInLink'
>;

// The `sessionCookie` security scheme: the session cookie instead of an API key, on every operation a key may call.
// The request then acts as the member, with the member's current role, through the session's own key.
//
// CSRF: a browser sends the cookie with any request to this server, including one another site's page makes. So a
// state-changing request (anything but GET, HEAD, OPTIONS) made with the session must carry the session's CSRF token
// in `X-CSRF-Token` (GET /v1/session answers it; another site cannot read it), and must not come from another site's
// page (`Sec-Fetch-Site`, `Origin`: cookie.ts). Both refusals are `403 csrf_check_failed`. A request with an API key
// carries no cookie and needs neither.
import { timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import { hashSecret, keyStatus } from '../../platform/auth.ts';
import { iso } from '../../platform/clock.ts';
import { type Caller, locals, type Platform, type WorkspaceRow } from '../../platform/context.ts';
import { Problem } from '../../platform/problems.ts';
import { fromAnotherSite, sessionSecret } from './cookie.ts';
import { SESSION_IDLE_MS } from './sessions.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The session of the request's cookie, with its key, member and workspace, whatever its state. */
async function findSession(platform: Platform, secret: string) {
  return platform.db
    .selectFrom('sessions')
    .innerJoin('api_keys', 'api_keys.id', 'sessions.api_key_id')
    .innerJoin('workspaces', 'workspaces.id', 'sessions.workspace_id')
    .leftJoin('members', (join) =>
      join
        .onRef('members.workspace_id', '=', 'sessions.workspace_id')
        .onRef('members.user_id', '=', 'sessions.user_id'),
    )
    .selectAll('api_keys')
    .select([
      'sessions.id as session_id_',
      'sessions.csrf_token',
      'sessions.last_seen_at',
      'sessions.expires_at as session_expires_at',
      'sessions.ended_at',
      'members.role as member_role',
      'workspaces.name as workspace_name',
      'workspaces.region as workspace_region',
      'workspaces.created_at as workspace_created_at',
      'workspaces.updated_at as workspace_updated_at',
      'workspaces.event_sequence as workspace_event_sequence',
    ])
    .where('sessions.secret_hash', '=', hashSecret(secret))
    .executeTakeFirst();
}

function sameText(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export async function authenticateSession(req: Request, res: Response, platform: Platform): Promise<void> {
  const secret = sessionSecret(req, platform.config);
  if (!secret) throw new Problem('unauthenticated', 'Send a valid API key as Authorization: Bearer <key>, or sign in.');
  const state = locals(res);
  const now = state.receivedAt;
  const row = await findSession(platform, secret);
  if (!row) throw new Problem('unauthenticated', 'The session is not valid; sign in again.');
  const {
    session_id_: sessionId,
    csrf_token: csrfToken,
    last_seen_at: lastSeenAt,
    session_expires_at: expiresAt,
    ended_at: endedAt,
    member_role: memberRole,
    workspace_name,
    workspace_region,
    workspace_created_at,
    workspace_updated_at,
    workspace_event_sequence,
    ...key
  } = row;
  state.apiKeyId = key.id;
  state.workspaceId = key.workspace_id;
  const nowIso = iso(now);
  if (endedAt !== null) throw new Problem('unauthenticated', 'The session has ended; sign in again.');
  if (expiresAt <= nowIso || lastSeenAt <= iso(new Date(now.getTime() - SESSION_IDLE_MS)))
    throw new Problem('unauthenticated', 'The session has expired; sign in again.');
  // The member's removal revokes their keys, the key of the session among them.
  if (keyStatus(key, now) !== 'active' || memberRole === null)
    throw new Problem('unauthenticated', 'The session has ended; sign in again.');
  if (!SAFE_METHODS.has(req.method)) checkCsrf(req, platform, csrfToken);
  const workspace: WorkspaceRow = {
    id: key.workspace_id,
    name: workspace_name,
    region: workspace_region,
    created_at: workspace_created_at,
    updated_at: workspace_updated_at,
    event_sequence: workspace_event_sequence,
  };
  if (workspace.region !== platform.config.region) {
    throw new Problem('wrong_region', `Workspace ${workspace.id} is homed in ${workspace.region}.`, {
      extra: { region: workspace.region, base_url: platform.config.regionBaseUrls[workspace.region] },
    });
  }
  const caller: Caller = { workspace, apiKey: key, role: memberRole, userId: key.user_id, sessionId };
  state.caller = caller;
  touchLastSeen(platform, sessionId, lastSeenAt, now);
}

function checkCsrf(req: Request, platform: Platform, csrfToken: string): void {
  if (fromAnotherSite(req, platform.config))
    throw new Problem('csrf_check_failed', "A request made with a session must come from this server's pages.");
  if (!sameText(req.get('x-csrf-token'), csrfToken))
    throw new Problem(
      'csrf_check_failed',
      "A request that changes something with a session must send the session's csrf_token (GET /v1/session) in X-CSRF-Token.",
    );
}

// `last_seen_at` is kept to the minute, as a key's `last_used_at`: a busy session costs one write a minute.
function touchLastSeen(platform: Platform, sessionId: string, lastSeenAt: string, now: Date): void {
  const minute = iso(new Date(Math.floor(now.getTime() / 60_000) * 60_000));
  if (lastSeenAt >= minute) return;
  platform.db
    .updateTable('sessions')
    .set({ last_seen_at: iso(now) })
    .where('id', '=', sessionId)
    .where('last_seen_at', '<', minute)
    .execute()
    .catch((error: unknown) =>
      platform.logger.warn({ err: error, session_id: sessionId }, 'could not record last_seen_at'),
    );
}

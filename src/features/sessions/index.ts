// The sessions feature: people sign in as themselves. A session (a cookie, stored hashed, with an idle and an
// absolute lifetime) stands in for an API key on every operation, as the member with the member's role; one-time
// sign-in links start one (printed by `npm run cli -- login-link`, emailed by POST /v1/sessions/links), and single
// sign-on starts one through startSession.
import type { Feature } from '../../platform/feature.ts';
import { authenticateSession } from './authenticate.ts';
import { sessionHandlers } from './handlers.ts';
import { sessions } from './migrations/026_sessions.ts';
import { sessionPages } from './pages.ts';
import { deleteOldSessions } from './retention.ts';
import './schema.ts';

export const sessionsFeature = {
  name: 'sessions',
  handlers: sessionHandlers,
  migrations: { '026_sessions': sessions },
  pages: sessionPages,
  retention: deleteOldSessions,
  authenticators: { sessionCookie: authenticateSession },
} satisfies Feature;

/** Whether a request carries a session cookie, for pages that ask who is signed in only then. */
export { hasSessionCookie } from './cookie.ts';
export { createSignInLink } from './links.ts';
/** A path of this server, or null: the only places a sign-in may land (no open redirect). */
export { localPath } from './return-to.ts';
export type { SignInMethod } from './schema.ts';
/** Starts a session for a person who has proven who they are: sets the cookie and redirects (sessions.ts). */
export {
  DEFAULT_LANDING,
  SESSION_ABSOLUTE_MS,
  SESSION_IDLE_MS,
  type StartSessionOptions,
  startSession,
} from './sessions.ts';
/** The sign-in pages' HTML, for other ways of signing in to answer in the same look. */
export { escapeHtml, signInNotice, signInPage } from './sign-in-page.ts';

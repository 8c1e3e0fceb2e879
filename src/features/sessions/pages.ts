// The sign-in link's pages. Opening a link shows who is about to sign in and one button: the sign-in is its POST, so
// that a mail scanner that fetches every link of an email (Outlook's Safe Links and others do) neither uses the link
// up nor signs anyone in. The POST is refused from another origin (login CSRF: signing a person in as someone else).
import express, { Router } from 'express';
import { once, sendAsset, stylesheet } from '../../platform/assets.ts';
import type { Platform } from '../../platform/context.ts';
import { fromAnotherSite } from './cookie.ts';
import { findUsableLink, redeemLink, SIGN_IN_LINK_PATH } from './links.ts';
import { startSession } from './sessions.ts';
import { escapeHtml, SIGN_IN_ASSETS, signInNotice, signInPage } from './sign-in-page.ts';

const LINK_REFUSED =
  'The link is not valid, was used already, or is older than 15 minutes. Ask for a new one on the sign-in page.';

export function sessionPages(platform: Platform): Router {
  const router = Router();
  const css = once(() => stylesheet(new URL('./sign-in.css', import.meta.url)));
  router.get(`${SIGN_IN_ASSETS}/sign-in.css`, async (req, res) => sendAsset(req, res, await css()));

  router.get(SIGN_IN_LINK_PATH, async (req, res) => {
    const token = typeof req.query.token === 'string' ? req.query.token : undefined;
    const link = await findUsableLink(platform.db, token, platform.clock.now());
    if (!link) return signInNotice(res, 403, 'This sign-in link does not work', LINK_REFUSED);
    signInPage(
      res,
      200,
      'Sign in',
      `<h1>Sign in to ${escapeHtml(link.workspace_name)}</h1>
<p>You are signing in as <strong data-part="email">${escapeHtml(link.email)}</strong>.</p>
<form method="post" action="${SIGN_IN_LINK_PATH}">
<input type="hidden" name="token" value="${escapeHtml(token!)}">
<button type="submit" data-part="sign-in">Sign in</button>
</form>
<p class="muted">The link works once, for 15 minutes. If you did not ask for it, close this page.</p>`,
    );
  });

  router.post(SIGN_IN_LINK_PATH, express.urlencoded({ extended: false, limit: '2kb' }), async (req, res) => {
    if (fromAnotherSite(req, platform.config))
      return signInNotice(res, 403, 'Sign-in refused', 'The sign-in was sent from another site.');
    const token = typeof req.body?.token === 'string' ? req.body.token : undefined;
    const link = await redeemLink(platform.db, token, platform.clock.now());
    if (!link) return signInNotice(res, 403, 'This sign-in link does not work', LINK_REFUSED);
    await startSession(platform, res, {
      workspaceId: link.workspace_id,
      userId: link.user_id,
      method: 'link',
      returnTo: link.return_to,
    });
  });
  return router;
}

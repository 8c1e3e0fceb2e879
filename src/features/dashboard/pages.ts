// GET /dashboard: the dashboard's page and its assets (app/main.tsx bundled by esbuild on first request, kept in
// memory, sent with an ETag). The page holds no data: its script signs in (a person's session, or an API key) and
// calls the API. `<meta name="api-base">` is where the script sends its requests: this server, or
// (scripts/dashboard.ts) the mock; `<meta name="session">` says the browser sent a session cookie, so that the script
// asks the API who is signed in only then.
import { type Response, Router } from 'express';
import { bundleScript, once, sendAsset, stylesheet } from '../../platform/assets.ts';
import type { Platform } from '../../platform/context.ts';
import { hasSessionCookie } from '../sessions/index.ts';

const ASSETS = '/dashboard/assets';
const POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The HTML of the dashboard, its assets under `assets`, calling the API at `apiBase` ('' for the same origin). */
export function dashboardHtml(assets: string, apiBase: string, session = false): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<meta name="api-base" content="${apiBase.replace(/[&<>"']/g, '')}">${session ? '\n<meta name="session" content="cookie">' : ''}
<link rel="icon" href="data:,">
<title>content-service dashboard</title>
<link rel="stylesheet" href="${assets}/dashboard.css">
</head>
<body>
<div id="app"><p class="loading">Loading the dashboard…</p></div>
<script type="module" src="${assets}/dashboard.js"></script>
</body>
</html>`;
}

export const dashboardScript = once(() => bundleScript(new URL('./app/main.tsx', import.meta.url)));
export const dashboardStylesheet = once(() => stylesheet(new URL('./dashboard.css', import.meta.url)));

function sendPage(res: Response, session: boolean): void {
  res.setHeader('Content-Security-Policy', POLICY);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.type('html').send(dashboardHtml(ASSETS, '', session));
}

export function dashboardPages(platform: Platform): Router {
  const router = Router();
  router.get(`${ASSETS}/dashboard.js`, async (req, res) => sendAsset(req, res, await dashboardScript()));
  router.get(`${ASSETS}/dashboard.css`, async (req, res) => sendAsset(req, res, await dashboardStylesheet()));
  router.get(['/dashboard', '/dashboard/'], (req, res) => sendPage(res, hasSessionCookie(req, platform.config)));
  // A person who opens the server's address in a browser is looking for the dashboard; a program gets the API's 404.
  router.get('/', (req, res, next) => {
    if (req.accepts(['application/json', 'text/html']) !== 'text/html') return next();
    res.redirect(302, '/dashboard');
  });
  return router;
}

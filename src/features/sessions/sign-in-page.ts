// The HTML of the sign-in pages (a link's confirmation, its refusals, startSession's refusal): no script at all, a
// stylesheet of this server, forms that post to this server only.
import type { Response } from 'express';

export const SIGN_IN_ASSETS = '/sign-in/assets';
const POLICY =
  "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

export const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** A page of `body` (HTML, already escaped). The token of a link is in its URL: no Referer carries it further. */
export function signInPage(res: Response, status: number, title: string, body: string): void {
  res.status(status);
  res.setHeader('Content-Security-Policy', POLICY);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.type('html').send(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<link rel="icon" href="data:,">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${SIGN_IN_ASSETS}/sign-in.css">
</head>
<body>
<main>
${body}
</main>
</body>
</html>`);
}

/** A page that says one thing, with a way back to the dashboard's sign-in. */
export function signInNotice(res: Response, status: number, title: string, text: string): void {
  signInPage(
    res,
    status,
    title,
    `<h1>${escapeHtml(title)}</h1>\n<p data-part="notice">${escapeHtml(text)}</p>\n<p><a href="/dashboard">Sign in again</a></p>`,
  );
}

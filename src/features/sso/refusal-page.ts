// A refused sign-in as a person in a browser reads it: the sign-in pages under /sso are opened by browsers (a link, the
// identity provider's redirect or form post), so a refusal is a page with the same status, the problem's title,
// detail and `code`, and the way back to the dashboard's sign-in. A client that asks for JSON (`Accept:
// application/json` or `application/problem+json`, or no preference) gets the problem document, as from the API.
import type { NextFunction, Request, Response } from 'express';
import { locals } from '../../platform/context.ts';
import { Problem, problemCatalogue } from '../../platform/problems.ts';
import { escapeHtml, signInPage } from '../sessions/index.ts';

/** Whether the client prefers a page to a problem document (a browser's navigation sends `text/html` first). */
function wantsPage(req: Request): boolean {
  return req.accepts(['application/problem+json', 'application/json', 'text/html']) === 'text/html';
}

export function refusalPage(error: unknown, req: Request, res: Response, next: NextFunction): void {
  if (!(error instanceof Problem) || res.headersSent || !wantsPage(req)) {
    next(error);
    return;
  }
  const state = locals(res);
  state.errorCode = error.code;
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  const title = problemCatalogue[error.code].title;
  const startUrl = typeof error.extra.sso_start_url === 'string' ? error.extra.sso_start_url : null;
  signInPage(
    res,
    error.status,
    title,
    `<h1>${escapeHtml(title)}</h1>
<p data-part="detail">${escapeHtml(error.message)}</p>
${startUrl ? `<p><a href="${escapeHtml(startUrl)}" data-part="sso-start">Continue with single sign-on</a></p>\n` : ''}<p><a href="/dashboard" data-part="sign-in">Back to sign-in</a></p>
<p class="muted">Code <code data-part="code">${escapeHtml(error.code)}</code>, status ${error.status}, request <code data-part="request-id">${escapeHtml(String(state.requestId ?? ''))}</code>.</p>`,
  );
}

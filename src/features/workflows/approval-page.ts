// The approval page, GET /approvals/{run_id}/{step_id}?expires=…&signature=…: the `approval_url` of
// `workflow.run.approval_required`. The signed link lets a person see what the step asks to review (its instructions
// and rendered content) and its state; deciding takes a member of the step's approver role: signed in (their session
// cookie, whose CSRF token the script reads from GET /v1/session), or with an API key of that role typed into the
// page. The script sends the decision to the API's own approve and reject operations (the link alone decides
// nothing). A person not signed in follows the page's sign-in link, which brings them back here.
//
// The page's data is in the HTML as text and attributes (escaped), the content to review as Markdown rendered to HTML
// (markdown-it with raw HTML escaped, so markup in a model's output is shown, never run); its script (approval-app.ts, bundled by esbuild
// on first request) only reads them and calls the API. The policy allows no inline script and nothing from elsewhere.
import { type Response, Router } from 'express';
import MarkdownIt from 'markdown-it';
import type { components } from '../../../generated/openapi.ts';
import { bundleScript, once, sendAsset, stylesheet } from '../../platform/assets.ts';
import type { Platform } from '../../platform/context.ts';
import { hasSessionCookie } from '../sessions/index.ts';
import { verifyApprovalLink } from './approvals.ts';
import type { Approval } from './store.ts';

type Schemas = components['schemas'];

const POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const ASSETS = '/approvals/assets';

/** The content's Markdown: raw HTML escaped (`html: false`), links markdown-it accepts (never `javascript:`, `vbscript:`,
 *  `file:` or a non-image `data:` URL), its headings two levels down, under the page's own `h1` and `h2`. */
const markdown = new MarkdownIt({ html: false, linkify: true, typographer: false });
markdown.renderer.rules.link_open = (tokens, index, options, _env, self) => {
  tokens[index]!.attrSet('rel', 'nofollow noopener noreferrer');
  return self.renderToken(tokens, index, options);
};
const lower = (tag: string) => `h${Math.min(6, Number(tag.slice(1)) + 2)}`;
markdown.renderer.rules.heading_open = (tokens, index, options, _env, self) => {
  tokens[index]!.tag = lower(tokens[index]!.tag);
  return self.renderToken(tokens, index, options);
};
markdown.renderer.rules.heading_close = markdown.renderer.rules.heading_open;

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function page(res: Response, status: number, title: string, body: string): void {
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
<link rel="stylesheet" href="${ASSETS}/approval.css">
</head>
<body>
<main>
${body}
</main>
</body>
</html>`);
}

/** The dashboard's sign-in, which brings the person back to this page once signed in. */
function signInPath(workspaceId: string, here: string): string {
  return `/dashboard?${new URLSearchParams({ workspace: workspaceId, return_to: here })}`;
}

function notice(res: Response, status: number, title: string, text: string): void {
  page(res, status, title, `<h1>${escapeHtml(title)}</h1>\n<p data-part="notice">${escapeHtml(text)}</p>`);
}

/** The step's state in words: waiting, or what was decided and by whom (a person signed in, or a key). */
function stateOf(status: string, approval: Approval, person: string | null): string {
  if (status === 'awaiting_approval') return `Waiting for a decision until ${approval.expires_at}.`;
  if (approval.timed_out)
    return approval.decision
      ? `Nobody decided in time: ${approval.decision === 'approve' ? 'approved' : 'rejected'} by its timeout.`
      : 'Nobody decided in time: the step failed.';
  if (approval.decision)
    return `${approval.decision === 'approve' ? 'Approved' : 'Rejected'} at ${approval.decided_at} by ${person ?? approval.decided_by_key_id}${approval.comment ? `: “${approval.comment}”` : '.'}`;
  return status === 'cancelled' ? 'The run was cancelled: nothing to decide.' : `The step is ${status}.`;
}

export function approvalPages(platform: Platform): Router {
  const router = Router();
  const script = once(() => bundleScript(new URL('./approval-app.ts', import.meta.url)));
  const css = once(() => stylesheet(new URL('./approval.css', import.meta.url)));
  router.get(`${ASSETS}/approval.js`, async (req, res) => sendAsset(req, res, await script()));
  router.get(`${ASSETS}/approval.css`, async (req, res) => sendAsset(req, res, await css()));

  router.get('/approvals/:runId/:stepId', async (req, res) => {
    const { runId, stepId } = req.params;
    const expires = typeof req.query.expires === 'string' ? req.query.expires : undefined;
    const signature = typeof req.query.signature === 'string' ? req.query.signature : undefined;
    if (!(await verifyApprovalLink(platform.db, runId, stepId, expires, signature, platform.clock.now()))) {
      return notice(
        res,
        403,
        'This approval link does not work',
        'The link is not valid or has expired. Ask for the run in the API (GET /v1/workflows/{id}/runs/{run_id}) or wait for a new link.',
      );
    }
    const run = await platform.db.selectFrom('workflow_runs').selectAll().where('id', '=', runId).executeTakeFirst();
    const step =
      run &&
      (await platform.db
        .selectFrom('workflow_run_steps')
        .selectAll()
        .where('run_id', '=', runId)
        .where('step_id', '=', stepId)
        .executeTakeFirst());
    const workflow =
      run &&
      (await platform.db
        .selectFrom('workflows')
        .select(['id', 'name'])
        .where('id', '=', run.workflow_id)
        .executeTakeFirst());
    if (!run || !step?.approval || !workflow)
      return notice(res, 404, 'No such approval', 'The run or its workflow has been deleted.');
    const approval = JSON.parse(step.approval) as Approval;
    // A decision made signed in names the person: their session's key is theirs (the sessions feature).
    const person = approval.decided_by_key_id
      ? ((
          await platform.db
            .selectFrom('api_keys')
            .innerJoin('users', 'users.id', 'api_keys.user_id')
            .select('users.email')
            .where('api_keys.id', '=', approval.decided_by_key_id)
            .where('api_keys.session_id', 'is not', null)
            .executeTakeFirst()
        )?.email ?? null)
      : null;
    const waiting = step.status === 'awaiting_approval' && run.status !== 'cancelled';
    const role = approval.approver_role as Schemas['WorkflowApprovalStep']['approver_role'];
    page(
      res,
      200,
      `Approve: ${workflow.name}`,
      `<header>
<p class="eyebrow">Workflow approval</p>
<h1>${escapeHtml(workflow.name)}</h1>
<p class="meta">Run <code>${escapeHtml(run.id)}</code> · step <code>${escapeHtml(step.step_id)}</code> · approver: <strong>${escapeHtml(role ?? 'editor')}</strong> or higher</p>
</header>
<section aria-labelledby="instructions-title">
<h2 id="instructions-title">What to check</h2>
<p data-part="instructions" class="text">${escapeHtml(approval.instructions)}</p>
</section>
<section aria-labelledby="content-title">
<h2 id="content-title">Content to review</h2>
<div data-part="content" class="content">${approval.content === null ? '<p class="muted">The step shows no content.</p>' : `<div class="markdown">${markdown.render(approval.content)}</div>`}</div>
</section>
<p data-part="state" role="status" aria-live="polite">${escapeHtml(stateOf(step.status, approval, person))}</p>
${
  waiting
    ? `<form data-part="decision" data-workflow-id="${escapeHtml(workflow.id)}" data-run-id="${escapeHtml(run.id)}" data-step-id="${escapeHtml(step.step_id)}" novalidate>
<p data-part="signed-in" hidden${hasSessionCookie(req, platform.config) ? ' data-session="cookie"' : ''}></p>
<div data-part="key-field">
<p data-part="sign-in-hint"><a data-part="sign-in" href="${escapeHtml(signInPath(run.workspace_id, req.originalUrl))}">Sign in</a> to decide as yourself, or enter an API key.</p>
<label for="key">API key (${escapeHtml(role ?? 'editor')} role or higher)</label>
<input id="key" name="key" type="password" autocomplete="off" spellcheck="false" data-part="key">
</div>
<label for="comment">Comment (optional)</label>
<textarea id="comment" name="comment" maxlength="2000" rows="3" data-part="comment"></textarea>
<div class="actions">
<button type="submit" name="decision" value="approve" data-part="approve">Approve</button>
<button type="submit" name="decision" value="reject" data-part="reject" class="secondary">Reject</button>
</div>
<p data-part="error" role="alert" hidden></p>
</form>
<p class="muted" data-part="key-note">A key is sent only to this API, with your decision, and is not kept by this page.</p>
<script type="module" src="${ASSETS}/approval.js"></script>`
    : ''
}`,
    );
  });
  return router;
}

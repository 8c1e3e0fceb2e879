// The reference editor: a small page outside the contract where a person tries the real-time session of a document
// in a browser (GET /editor/{id}#token=edt_…), and its two assets, the client bundle (client.ts, built with esbuild
// on the first request) and the stylesheet (editor.css).
//
// The page does not check the token: the browser reads it from the URL fragment, which never reaches the server (nor
// its logs), and sends it in the Hocuspocus authentication message of /v1/documents/{id}/realtime, which checks it.
import { type Request, type Response, Router } from 'express';
import { type Asset, bundleScript, once, sendAsset, stylesheet } from '../../../platform/assets.ts';
import type { Platform } from '../../../platform/context.ts';

const DOCUMENT_ID = /^doc_[0-9A-HJKMNP-TV-Z]{26}$/;
const ASSETS = '/editor/assets';

/**
 * The page's policy: its own script and stylesheet only, no inline code, and connections only to its own origin (the
 * WebSocket of the session included: CSP 3's 'self' matches ws: and wss: on the same host, and the host the browser
 * asked for is named as well for browsers that do not).
 */
function contentSecurityPolicy(req: Request): string {
  const host = req.get('host');
  const sameHost =
    host && /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/.test(host) ? ` ws://${host} wss://${host}` : '';
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `connect-src 'self'${sameHost}`,
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

function page(documentId: string): string {
  // documentId matched DOCUMENT_ID: it holds nothing HTML would interpret.
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Editor · ${documentId}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ASSETS}/editor.css">
<script type="module" src="${ASSETS}/editor.js"></script>
</head>
<body>
<header>
<h1>Real-time editor</h1>
<p class="document">${documentId}</p>
<p id="status" role="status" aria-live="polite" data-state="loading">loading…</p>
</header>
<section id="missing-token" hidden>
<p>This page needs an edit token in its address. Create one with
<code>POST /v1/documents/${documentId}/edit-token</code> (body <code>{"permission": "edit"}</code> or
<code>{"permission": "read"}</code>), then open <code>/editor/${documentId}#token=edt_…</code> with the token it returns.</p>
</section>
<main id="editor" aria-label="Document content"></main>
</body>
</html>
`;
}

export function editorPages(platform: Platform): Router {
  const router = Router();
  const script = once(() => bundleScript(new URL('./client.ts', import.meta.url)));
  const style = once(() => stylesheet(new URL('./editor.css', import.meta.url)));

  router.use('/editor', (_req, res, next) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    next();
  });

  const serve = (load: () => Promise<Asset>, what: string) => async (req: Request, res: Response) => {
    try {
      sendAsset(req, res, await load());
    } catch (error) {
      platform.logger.error({ err: error }, `the editor's ${what} could not be built`);
      res
        .status(500)
        .type('text/plain')
        .setHeader('Cache-Control', 'no-store')
        .send(`The editor's ${what} could not be built.\n`);
    }
  };
  router.get(`${ASSETS}/editor.js`, serve(script, 'script'));
  router.get(`${ASSETS}/editor.css`, serve(style, 'stylesheet'));

  router.get('/editor/:documentId', (req: Request<{ documentId: string }>, res: Response) => {
    res.setHeader('Cache-Control', 'no-store');
    const { documentId } = req.params;
    if (!DOCUMENT_ID.test(documentId)) {
      res.status(404).type('text/plain').send('Not found: the editor is at /editor/doc_… (a document id).\n');
      return;
    }
    res.setHeader('Content-Security-Policy', contentSecurityPolicy(req));
    res.type('html').send(page(documentId));
  });

  return router;
}

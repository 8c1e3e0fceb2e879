// The widget's pages outside the contract: the launcher script of the snippet (GET /widget.js), the chat's frame
// (GET /embed/frame?key=emb_…) and the frame's assets, bundled by esbuild on first request (src/platform/assets.ts).
//
// The frame is where the browser enforces the chatbot's allowed origins: its Content-Security-Policy names them in
// `frame-ancestors`, so a page of any other site that embeds it gets an empty, refused frame. The embed key is written
// into the page (a meta element, since the policy allows no inline script); it is public anyway.
import { Router, type Request, type Response } from 'express';
import { bundleScript, once, sendAsset, stylesheet, type Asset } from '../../../platform/assets.ts';
import type { Platform } from '../../../platform/context.ts';

export interface WidgetEmbedding {
  chatbotId: string;
  name: string;
  enabled: boolean;
  allowedOrigins: string[];
}

const EMBED_KEY = /^emb_[A-Za-z0-9]{32}$/;
const ASSETS = '/embed/assets';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function framePolicy(allowedOrigins: string[]): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    // The avatar is any https image the chatbot names.
    "img-src 'self' https: data:",
    "base-uri 'none'",
    "form-action 'none'",
    // The allowed origins are host-sources as they are (`https://*.example.com`, `http://localhost:3000`).
    `frame-ancestors ${allowedOrigins.length > 0 ? allowedOrigins.join(' ') : "'none'"}`,
  ].join('; ');
}

function framePage(key: string, name: string): string {
  return `<!doctype html>
<html lang="en" data-theme="auto">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="embed-key" content="${key}">
<title>${escapeHtml(name)} · chat</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ASSETS}/frame.css">
<script type="module" src="${ASSETS}/frame.js"></script>
</head>
<body data-state="loading"><div id="app"></div></body>
</html>
`;
}

function unknownChat(res: Response): void {
  res.status(404).setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
  res.type('html').send('<!doctype html><html lang="en"><meta charset="utf-8"><title>Unknown chat</title><p style="font:15px system-ui;margin:2em">Unknown chat: this embed key opens no chatbot (it was rotated, or its chatbot was deleted).</p></html>\n');
}

export function widgetPages(platform: Platform, embeddingOf: (embedKey: string) => Promise<WidgetEmbedding | null>): Router {
  const router = Router();
  const launcher = once(() => bundleScript(new URL('./launcher.ts', import.meta.url), 'iife'));
  const frame = once(() => bundleScript(new URL('./frame.ts', import.meta.url)));
  const style = once(() => stylesheet(new URL('./frame.css', import.meta.url)));

  const serve = (load: () => Promise<Asset>, what: string, headers: Record<string, string>) => async (req: Request, res: Response) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    try {
      sendAsset(req, res, await load());
    } catch (error) {
      platform.logger.error({ err: error }, `the widget's ${what} could not be built`);
      res.status(500).type('text/plain').setHeader('Cache-Control', 'no-store').send(`The widget's ${what} could not be built.\n`);
    }
  };
  // Loaded by customers' pages: from any origin, cached a few minutes (a new version reaches them within 5 minutes).
  router.get('/widget.js', serve(launcher, 'launcher', { 'Cache-Control': 'public, max-age=300', 'Access-Control-Allow-Origin': '*', 'Cross-Origin-Resource-Policy': 'cross-origin' }));
  router.get(`${ASSETS}/frame.js`, serve(frame, 'script', {}));
  router.get(`${ASSETS}/frame.css`, serve(style, 'stylesheet', {}));

  router.get('/embed/frame', async (req: Request, res: Response) => {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    const key = typeof req.query.key === 'string' ? req.query.key : '';
    const embedding = EMBED_KEY.test(key) ? await embeddingOf(key) : null;
    if (!embedding) return unknownChat(res);
    // The page keeps the default referrer policy: the frame's document.referrer is the page the visitor is on (its
    // origin at least), which becomes the conversation's page_url.
    res.setHeader('Content-Security-Policy', framePolicy(embedding.allowedOrigins));
    res.type('html').send(framePage(key, embedding.name));
  });

  return router;
}

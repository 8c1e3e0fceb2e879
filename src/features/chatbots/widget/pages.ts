// The widget's pages outside the contract: the launcher script of the snippet (GET /widget.js), the chat's frame
// (GET /embed/frame?key=emb_…&parent=…) and the frame's assets, bundled by esbuild on their first request
// (src/platform/assets.ts), kept in memory and sent with an ETag.
//
// The frame is where the browser enforces the chatbot's allowed origins: its Content-Security-Policy names them in
// `frame-ancestors`, so a page of any other site that embeds it gets a refused, empty frame (the API checks the same
// list against the Origin of the launcher's own request, embed.ts). The embed key is written into the page in a meta
// element, since the policy allows no inline script; the key is public anyway. `parent` (the embedding page's origin,
// from the launcher) is informational: the frame never trusts it, and the page ignores it.
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { type Request, type Response, Router } from 'express';
import { type Asset, asset, bundleScript, once, sendAsset, stylesheet } from '../../../platform/assets.ts';
import type { Platform } from '../../../platform/context.ts';

export interface WidgetEmbedding {
  chatbotId: string;
  /** The chatbot's name, for the frame's title (the frame reads everything else from GET /v1/embed/config). */
  name?: string;
  enabled: boolean;
  /** Host-sources as the contract allows them: `https://www.example.com`, `https://*.example.com`, `http://localhost:3000`. */
  allowedOrigins: string[];
}

const EMBED_KEY = /^emb_[A-Za-z0-9]{32}$/;
/** A CSP host-source with a scheme and no path (the contract's ChatbotAllowedOrigin, and a little wider). */
const HOST_SOURCE =
  /^https?:\/\/(?:\*\.)?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::\d{1,5})?$/;
const ASSETS = '/embed/assets';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The frame's own script: Preact, with JSX compiled to preact/jsx-runtime should frame.tsx use JSX. */
async function bundleFrame(entry: URL): Promise<Asset> {
  const result = await build({
    entryPoints: [fileURLToPath(entry)],
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    write: false,
    logLevel: 'silent',
    legalComments: 'none',
  });
  return asset(Buffer.from(result.outputFiles[0]!.contents), 'text/javascript; charset=utf-8');
}

/**
 * The frame's policy: its own script and stylesheet, calls to its own origin only, images from anywhere on https (the
 * chatbot's avatar), and framing only by the allowed origins.
 */
function framePolicy(allowedOrigins: readonly string[]): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    "img-src 'self' https: data:",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${allowedOrigins.length > 0 ? allowedOrigins.join(' ') : "'none'"}`,
  ].join('; ');
}

function framePage(key: string, name: string | undefined): string {
  // key matched EMBED_KEY: it holds nothing HTML would interpret.
  return `<!doctype html>
<html lang="en" data-theme="auto">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="embed-key" content="${key}">
<title>${escapeHtml(name ? `${name} · chat` : 'Chat')}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ASSETS}/frame.css">
<script type="module" src="${ASSETS}/frame.js"></script>
</head>
<body data-state="loading"><div id="app"></div></body>
</html>
`;
}

const UNKNOWN_CHAT = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Unknown chat</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ASSETS}/frame.css">
</head>
<body><p class="unknown" data-part="unknown">Unknown chat: this embed key opens no chatbot (it was rotated, or its chatbot was deleted).</p></body>
</html>
`;

export function widgetPages(
  platform: Platform,
  embeddingOf: (embedKey: string) => Promise<WidgetEmbedding | null>,
): Router {
  const router = Router();
  const launcher = once(() => bundleScript(new URL('./launcher.ts', import.meta.url), 'iife'));
  const frame = once(() => bundleFrame(new URL('./frame.tsx', import.meta.url)));
  const style = once(() => stylesheet(new URL('./frame.css', import.meta.url)));

  const serve =
    (load: () => Promise<Asset>, what: string, headers: Record<string, string> = {}) =>
    async (req: Request, res: Response) => {
      res.setHeader('X-Content-Type-Options', 'nosniff');
      for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
      try {
        sendAsset(req, res, await load());
      } catch (error) {
        platform.logger.error({ err: error }, `the chat widget's ${what} could not be built`);
        res
          .status(500)
          .type('text/plain')
          .setHeader('Cache-Control', 'no-store')
          .send(`The chat widget's ${what} could not be built.\n`);
      }
    };
  // Loaded by customers' pages, from any origin; cached five minutes, so a new version reaches them within that.
  router.get(
    '/widget.js',
    serve(launcher, 'launcher', {
      'Cache-Control': 'public, max-age=300',
      'Access-Control-Allow-Origin': '*',
      'Cross-Origin-Resource-Policy': 'cross-origin',
    }),
  );
  // Loaded by the frame only (same origin); revalidated with their ETag.
  router.get(`${ASSETS}/frame.js`, serve(frame, 'script'));
  router.get(`${ASSETS}/frame.css`, serve(style, 'stylesheet'));

  router.get('/embed/frame', async (req: Request, res: Response) => {
    // No-store: the allowed origins, hence the policy, can change at any time.
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // No Referrer-Policy header here: the browser's default (strict-origin-when-cross-origin) is kept. The frame's
    // document.referrer, which becomes the conversation's page_url, comes from the customer's page and its policy (with
    // theirs at the default, the page's origin only); a header on this response would not change it, and it governs
    // only the frame's own requests, which under the default tell other sites (the avatar's host, a source's page)
    // nothing but our origin, and never the embed key in this page's address.
    const key = typeof req.query.key === 'string' ? req.query.key : '';
    let embedding: WidgetEmbedding | null = null;
    if (EMBED_KEY.test(key)) {
      try {
        embedding = await embeddingOf(key);
      } catch (error) {
        platform.logger.error({ err: error }, "the chat widget's frame could not look up its embed key");
        res.status(503).type('text/plain').send('The chat is not available right now.\n');
        return;
      }
    }
    if (!embedding) {
      // Shown inside any page (frame-ancestors *): it does nothing, and tells whoever embedded it what is wrong.
      res
        .status(404)
        .setHeader(
          'Content-Security-Policy',
          "default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors *",
        );
      res.type('html').send(UNKNOWN_CHAT);
      return;
    }
    const origins = embedding.allowedOrigins.filter((origin) => HOST_SOURCE.test(origin));
    if (origins.length < embedding.allowedOrigins.length) {
      platform.logger.warn(
        { chatbotId: embedding.chatbotId },
        "some of the chatbot's allowed origins are not host-sources; the widget's frame leaves them out",
      );
    }
    res.setHeader('Content-Security-Policy', framePolicy(origins));
    res.type('html').send(framePage(key, embedding.name));
  });

  return router;
}

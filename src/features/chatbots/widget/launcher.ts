// The widget's launcher, served as /widget.js (a classic script, bundled as an IIFE) and loaded on a customer's page
// by the snippet
//   <script src="https://<base>/widget.js" data-embed-key="emb_…" defer></script>
// It reads the chatbot's public configuration from the customer's page itself (a CORS request, so the server checks
// the page's Origin against the chatbot's allowed origins), then shows a launcher button in an open Shadow DOM (the
// page's styles cannot reach it, nor ours the page) that opens the chat: an iframe of <base>/embed/frame, which the
// browser shows only inside an allowed page (its frame-ancestors). A refusal shows nothing, says why once in the
// console, and leaves a hidden marker (`data-state="refused"`, `data-code`) for integrators and tests.
//
// Nothing global but `window.contentServiceChat` ({ open(), close(), state }). No innerHTML (pages that require
// Trusted Types would refuse it) and no inline style attribute (a page's CSP may forbid them): styles go in a
// constructed stylesheet, or a <style> element in the shadow root where constructed sheets are not supported.

interface EmbedConfig {
  object: 'embed.config';
  chatbot_id: string;
  name: string;
  greeting: string;
  enabled: boolean;
  widget: { theme: string; accent_color: string; avatar_url: string | null; position: 'bottom_right' | 'bottom_left' };
}

type State = 'loading' | 'closed' | 'open' | 'refused';

interface ChatApi {
  open(): void;
  close(): void;
  state: State;
}

declare global {
  interface Window {
    contentServiceChat?: ChatApi;
  }
}

const PREFIX = '[content-service chat]';
const HOST_ID = 'content-service-chat';
const EMBED_KEY = /^emb_[A-Za-z0-9]{32}$/;
const DEFAULT_ACCENT = '#2563EB';
const SVG = 'http://www.w3.org/2000/svg';

/** Black or white, whichever reads better on the accent colour (WCAG contrast). */
function textOn(accent: string): string {
  const n = Number.parseInt(accent.slice(1), 16);
  const channel = (c: number) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  const luminance = 0.2126 * channel((n >> 16) & 255) + 0.7152 * channel((n >> 8) & 255) + 0.0722 * channel(n & 255);
  return 1.05 / (luminance + 0.05) >= (luminance + 0.05) / 0.05 ? '#ffffff' : '#111827';
}

const STYLE = `
:host { all: initial; }
.launcher { position: fixed; bottom: 20px; width: 56px; height: 56px; margin: 0; padding: 0; border: none; border-radius: 50%;
  cursor: pointer; background: var(--accent); color: var(--on-accent); box-shadow: 0 4px 14px rgba(0,0,0,.25);
  z-index: 2147483646; display: flex; align-items: center; justify-content: center; }
.launcher:focus-visible { outline: 3px solid var(--accent); outline-offset: 3px; }
.launcher[data-offline] { filter: grayscale(1); opacity: .65; }
.launcher svg { width: 28px; height: 28px; fill: none; stroke: currentColor; stroke-width: 2; stroke-linecap: round; stroke-linejoin: round; }
.launcher .close, .launcher[aria-expanded="true"] .bubble { display: none; }
.launcher[aria-expanded="true"] .close { display: block; }
.panel { position: fixed; bottom: 88px; width: 380px; height: 600px; max-width: calc(100vw - 24px);
  max-height: calc(100vh - 104px); max-height: calc(100dvh - 104px); border-radius: 14px; overflow: hidden;
  box-shadow: 0 8px 30px rgba(0,0,0,.3); z-index: 2147483647; background: #fff; }
.panel[hidden] { display: none; }
.panel iframe { display: block; width: 100%; height: 100%; border: 0; }
.right { right: 20px; } .left { left: 20px; }
@media (max-width: 420px) { .panel.right, .panel.left { left: 12px; right: 12px; width: auto; } }
@media (prefers-reduced-motion: no-preference) { .launcher { transition: transform .15s; } .launcher:hover { transform: scale(1.06); } }
`;

function addStyle(root: ShadowRoot): void {
  try {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(STYLE);
    root.adoptedStyleSheets = [sheet];
  } catch {
    const style = document.createElement('style');
    style.textContent = STYLE;
    root.append(style);
  }
}

/** The launcher's two icons, a speech bubble and a cross (shown while the chat is open). */
function icons(): SVGSVGElement[] {
  const icon = (name: string, paths: string[]) => {
    const svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('viewBox', '0 0 24 24');
    svg.setAttribute('aria-hidden', 'true');
    svg.setAttribute('focusable', 'false');
    svg.setAttribute('class', name);
    for (const d of paths) {
      const path = document.createElementNS(SVG, 'path');
      path.setAttribute('d', d);
      svg.append(path);
    }
    return svg;
  };
  return [
    icon('bubble', ['M21 12a8 8 0 0 1-11.6 7.1L4 20l1-4.6A8 8 0 1 1 21 12z']),
    icon('close', ['M6 6l12 12', 'M18 6L6 18']),
  ];
}

// Read while the script runs: document.currentScript is null in callbacks (and in modules).
const script: HTMLScriptElement | null =
  document.currentScript instanceof HTMLScriptElement && document.currentScript.hasAttribute('data-embed-key')
    ? document.currentScript
    : document.querySelector<HTMLScriptElement>('script[data-embed-key][src$="/widget.js"]');

let wantOpen = false;
const api: ChatApi = {
  state: 'loading',
  // Until the chat is ready, open() is remembered and close() forgets it; show() replaces both.
  open() {
    wantOpen = true;
  },
  close() {
    wantOpen = false;
  },
};

function body(): Promise<HTMLElement> {
  if (document.body) return Promise.resolve(document.body);
  return new Promise((resolve) =>
    document.addEventListener('DOMContentLoaded', () => resolve(document.body), { once: true }),
  );
}

async function host(state: State, code?: string): Promise<HTMLElement> {
  const parent = await body();
  document.getElementById(HOST_ID)?.remove();
  const element = document.createElement('div');
  element.id = HOST_ID;
  element.dataset.state = state;
  if (code) element.dataset.code = code;
  parent.append(element);
  return element;
}

async function refuse(code: string, detail: string): Promise<void> {
  console.error(`${PREFIX} ${detail}`);
  api.state = 'refused';
  api.open = () => {};
  api.close = () => {};
  const element = await host('refused', code);
  element.hidden = true;
  element.style.setProperty('display', 'none', 'important');
}

async function show(base: string, key: string, config: EmbedConfig): Promise<void> {
  const element = await host('closed');
  const root = element.attachShadow({ mode: 'open' });
  addStyle(root);
  const side = config.widget.position === 'bottom_left' ? 'left' : 'right';
  const accent = /^#[0-9A-Fa-f]{6}$/.test(config.widget.accent_color) ? config.widget.accent_color : DEFAULT_ACCENT;
  element.style.setProperty('--accent', accent);
  element.style.setProperty('--on-accent', textOn(accent));

  const launcher = document.createElement('button');
  launcher.type = 'button';
  launcher.className = `launcher ${side}`;
  launcher.dataset.part = 'launcher';
  launcher.setAttribute('aria-label', `Open chat with ${config.name}`);
  launcher.setAttribute('aria-expanded', 'false');
  launcher.append(...icons());
  if (!config.enabled) {
    // Still opens: the frame says that the chat is offline.
    launcher.dataset.offline = '';
    launcher.title = 'offline';
  }

  const panel = document.createElement('div');
  panel.className = `panel ${side}`;
  panel.id = 'content-service-chat-panel';
  panel.dataset.part = 'panel';
  panel.hidden = true;
  launcher.setAttribute('aria-controls', panel.id);

  let frame: HTMLIFrameElement | null = null;
  const setState = (state: 'open' | 'closed') => {
    api.state = state;
    element.dataset.state = state;
    launcher.setAttribute('aria-expanded', String(state === 'open'));
    panel.hidden = state === 'closed';
  };
  api.open = () => {
    if (!frame) {
      // Made on the first opening: a page whose visitor never opens the chat loads nothing more.
      frame = document.createElement('iframe');
      frame.dataset.part = 'frame';
      frame.title = `${config.name} chat`;
      frame.src = `${base}/embed/frame?key=${encodeURIComponent(key)}&parent=${encodeURIComponent(location.origin)}`;
      frame.allow = 'clipboard-write';
      panel.append(frame);
    }
    setState('open');
  };
  api.close = () => setState('closed');
  launcher.addEventListener('click', () => (api.state === 'open' ? api.close() : api.open()));
  root.addEventListener('keydown', (event) => {
    if ((event as KeyboardEvent).key === 'Escape' && api.state === 'open') {
      api.close();
      launcher.focus();
    }
  });
  // The launcher first: from it, Tab goes on into the open chat.
  root.append(launcher, panel);
  if (wantOpen) api.open();
}

async function problemOf(response: Response): Promise<{ code?: string; detail?: string }> {
  try {
    const body = (await response.json()) as unknown;
    return body && typeof body === 'object' ? (body as { code?: string; detail?: string }) : {};
  } catch {
    return {};
  }
}

async function start(): Promise<void> {
  const key = script?.getAttribute('data-embed-key')?.trim() ?? '';
  if (!script || !key) {
    await refuse(
      'missing_embed_key',
      "The widget's script tag needs a data-embed-key attribute: copy the snippet from the chatbot's embed settings.",
    );
    return;
  }
  if (!EMBED_KEY.test(key)) {
    await refuse(
      'invalid_embed_key',
      `The data-embed-key "${key.slice(0, 40)}" is not an embed key (emb_ and 32 letters or digits): copy the snippet from the chatbot's embed settings.`,
    );
    return;
  }
  const base = new URL(script.src, location.href).origin;
  let response: Response;
  try {
    response = await fetch(`${base}/v1/embed/config`, {
      headers: { 'X-Embed-Key': key, Accept: 'application/json' },
      credentials: 'omit',
      mode: 'cors',
      ...(typeof AbortSignal.timeout === 'function' ? { signal: AbortSignal.timeout(20_000) } : {}),
    });
  } catch {
    await refuse('network_error', `The chat could not reach ${base} (a network error, or the request was blocked).`);
    return;
  }
  if (!response.ok) {
    const problem = await problemOf(response);
    const code = typeof problem.code === 'string' ? problem.code : `http_${response.status}`;
    const detail =
      typeof problem.detail === 'string'
        ? problem.detail
        : `The chat's configuration answered HTTP ${response.status}.`;
    await refuse(code, detail);
    return;
  }
  const config = (await response.json().catch(() => null)) as EmbedConfig | null;
  if (!config || typeof config.name !== 'string' || typeof config.widget !== 'object' || config.widget === null) {
    await refuse('invalid_config', `The chat's configuration from ${base} could not be read.`);
    return;
  }
  await show(base, key, config);
}

// A page that pastes the snippet twice gets one chat.
if (!window.contentServiceChat) {
  window.contentServiceChat = api;
  void start();
}

export {};

// The widget's launcher, served as /widget.js (a classic script) and loaded on a customer's page by the snippet
//   <script src="https://<base>/widget.js" data-embed-key="emb_…" defer></script>
// It reads the chatbot's public configuration from the page itself (a CORS request, so the server checks the page's
// Origin against the chatbot's allowed origins), then shows a launcher button in a Shadow DOM (the page's styles
// cannot reach it, nor ours the page) that opens the chat: an iframe of <base>/embed/frame, which the browser shows
// only inside an allowed page (frame-ancestors). A refusal shows nothing but says why in the console.

interface EmbedConfig {
  chatbot_id: string;
  name: string;
  enabled: boolean;
  widget: { accent_color: string; position: 'bottom_right' | 'bottom_left'; theme: string };
}

declare global {
  interface Window {
    contentServiceChat?: { open(): void; close(): void; state: string };
  }
}

const PREFIX = '[content-service chat]';

function ownScript(): HTMLScriptElement | null {
  const current = document.currentScript;
  if (current instanceof HTMLScriptElement && current.dataset.embedKey) return current;
  return document.querySelector<HTMLScriptElement>('script[data-embed-key][src$="/widget.js"]');
}

function host(state: string, code?: string): HTMLElement {
  document.getElementById('content-service-chat')?.remove();
  const element = document.createElement('div');
  element.id = 'content-service-chat';
  element.dataset.state = state;
  if (code) element.dataset.code = code;
  document.body.append(element);
  return element;
}

function refuse(code: string, detail: string): void {
  console.error(`${PREFIX} ${detail}`);
  const element = host('refused', code);
  element.hidden = true;
  window.contentServiceChat = { open() {}, close() {}, state: 'refused' };
}

const STYLE = `
:host { all: initial; }
.launcher { position: fixed; bottom: 20px; width: 56px; height: 56px; border: none; border-radius: 50%; cursor: pointer;
  background: var(--accent); color: #fff; box-shadow: 0 4px 14px rgba(0,0,0,.25); z-index: 2147483646;
  display: flex; align-items: center; justify-content: center; }
.launcher:focus-visible { outline: 3px solid #fff; outline-offset: -6px; }
.launcher[data-offline] { filter: grayscale(1); opacity: .7; }
.launcher svg { width: 28px; height: 28px; }
.panel { position: fixed; bottom: 88px; width: 380px; height: 600px; max-width: calc(100vw - 24px); max-height: calc(100vh - 108px);
  border-radius: 14px; overflow: hidden; box-shadow: 0 8px 30px rgba(0,0,0,.3); z-index: 2147483647; background: #fff; }
.panel[hidden] { display: none; }
.panel iframe { width: 100%; height: 100%; border: 0; }
.right { right: 20px; } .left { left: 20px; }
`;

const ICON = '<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" aria-hidden="true"><path d="M21 12a8 8 0 0 1-11.6 7.1L4 20l1-4.6A8 8 0 1 1 21 12z"/></svg>';

function show(base: string, key: string, config: EmbedConfig): void {
  const element = host('ready');
  const root = element.attachShadow({ mode: 'open' });
  const side = config.widget.position === 'bottom_left' ? 'left' : 'right';
  const style = document.createElement('style');
  style.textContent = STYLE;
  const launcher = document.createElement('button');
  launcher.type = 'button';
  launcher.className = `launcher ${side}`;
  launcher.dataset.part = 'launcher';
  launcher.style.setProperty('--accent', /^#[0-9A-Fa-f]{6}$/.test(config.widget.accent_color) ? config.widget.accent_color : '#2563EB');
  launcher.setAttribute('aria-label', `Open chat with ${config.name}`);
  launcher.setAttribute('aria-expanded', 'false');
  launcher.innerHTML = ICON;
  if (!config.enabled) {
    launcher.dataset.offline = '';
    launcher.title = `${config.name} is offline`;
  }
  const panel = document.createElement('div');
  panel.className = `panel ${side}`;
  panel.hidden = true;
  let frame: HTMLIFrameElement | null = null;
  const api = {
    state: 'closed',
    open() {
      if (!frame) {
        // Created on first open: a page that never opens the chat loads nothing more.
        frame = document.createElement('iframe');
        frame.dataset.part = 'frame';
        frame.title = `${config.name} chat`;
        frame.src = `${base}/embed/frame?key=${encodeURIComponent(key)}&parent=${encodeURIComponent(location.origin)}`;
        frame.allow = 'clipboard-write';
        panel.append(frame);
      }
      panel.hidden = false;
      launcher.setAttribute('aria-expanded', 'true');
      api.state = 'open';
      element.dataset.open = 'true';
    },
    close() {
      panel.hidden = true;
      launcher.setAttribute('aria-expanded', 'false');
      api.state = 'closed';
      delete element.dataset.open;
    },
  };
  launcher.addEventListener('click', () => (panel.hidden ? api.open() : api.close()));
  root.append(style, panel, launcher);
  window.contentServiceChat = api;
}

async function start(): Promise<void> {
  const script = ownScript();
  const key = script?.dataset.embedKey;
  if (!script || !key) {
    refuse('missing_embed_key', 'The widget script needs a data-embed-key attribute (copy the snippet from the chatbot\'s embed.snippet).');
    return;
  }
  const base = new URL(script.src, location.href).origin;
  let response: Response;
  try {
    response = await fetch(`${base}/v1/embed/config`, { headers: { 'X-Embed-Key': key, Accept: 'application/json' }, credentials: 'omit' });
  } catch {
    refuse('network_error', `The chat could not reach ${base}.`);
    return;
  }
  const body = (await response.json().catch(() => null)) as (EmbedConfig & { code?: string; detail?: string }) | null;
  if (!response.ok || !body) {
    refuse(body?.code ?? `http_${response.status}`, body?.detail ?? `The chat's configuration answered ${response.status}.`);
    return;
  }
  show(base, key, body);
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', () => void start());
else void start();

export {};

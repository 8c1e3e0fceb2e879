/** @jsxImportSource preact */
// The chat inside the widget's iframe (GET /embed/frame), a small Preact app: the greeting, the visitor's messages and
// the chatbot's answers as they stream (POST /v1/embed/messages with `stream: true`, Server-Sent Events read from the
// fetch body), their sources, a note when a person takes over, and the 1-5 rating (POST /v1/embed/csat). It runs on
// our origin, so its calls are same-origin; the embed key comes from the page's <meta name="embed-key"> (the page's
// policy allows no inline script).
//
// Text is only ever rendered as text nodes: the answers' Markdown becomes elements built here (paragraphs, line breaks,
// bold, italic, code), never HTML. The elements are written with `h()` rather than JSX because the project's tsconfig
// has no `jsx` setting (the pragma above and pages.ts's esbuild options are ready for JSX once it has).
//
// Hooks for tests: <body data-state="loading|ready|offline|error">, and data-part on messages, message (data-role),
// input, send, sources, escalated, csat (score buttons data-score), csat-comment, csat-send, thanks, error, offline.
import { type ComponentChildren, h, render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { serverSentEvents } from './sse.ts';

interface Widget {
  theme: 'light' | 'dark' | 'auto';
  accent_color: string;
  avatar_url: string | null;
  position: 'bottom_right' | 'bottom_left';
  locale: string;
  csat_enabled: boolean;
  show_sources: boolean;
}
interface Config {
  object: 'embed.config';
  chatbot_id: string;
  name: string;
  greeting: string;
  enabled: boolean;
  widget: Widget;
}
interface Citation {
  title: string;
  url: string | null;
  excerpt: string;
}
interface EmbedReply {
  object: 'embed.reply';
  conversation_id: string;
  conversation_created: boolean;
  message: { id: string; role: 'assistant'; content: string; citations: Citation[]; created_at: string };
  escalated: boolean;
}
interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  code?: string;
}
interface Message {
  key: number;
  role: 'visitor' | 'assistant';
  content: string;
  citations: Citation[];
  escalated: boolean;
  streaming: boolean;
}

const MAX_LENGTH = 2000;
const LOCALE = /^[a-zA-Z]{2,3}(-[A-Za-z0-9]{2,8})*$/;
const VISITOR_ID = /^[A-Za-z0-9_-]{16,64}$/;
const DEFAULT_ACCENT = '#2563EB';

const embedKey = document.querySelector<HTMLMetaElement>('meta[name="embed-key"]')?.content ?? '';

function headers(accept: string, json = false): Record<string, string> {
  return { 'X-Embed-Key': embedKey, Accept: accept, ...(json ? { 'Content-Type': 'application/json' } : {}) };
}

/** A random id; crypto.randomUUID exists only in secure contexts, getRandomValues everywhere. */
function randomId(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `v_${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * The visitor's anonymous id, kept in local storage; for this frame only when storage is refused, as it is to a
 * cross-site frame in browsers that block third-party storage (then neither it nor the conversation survives a reload).
 */
function visitorId(): string {
  try {
    const stored = localStorage.getItem('cs-chat-visitor');
    if (stored && VISITOR_ID.test(stored)) return stored;
    const made = randomId();
    localStorage.setItem('cs-chat-visitor', made);
    return made;
  } catch {
    return randomId();
  }
}
const visitor = visitorId();

const conversationStore = {
  get(name: string): string | null {
    try {
      const value = sessionStorage.getItem(name);
      return value && /^conv_[0-9A-Z]{26}$/.test(value) ? value : null;
    } catch {
      return null;
    }
  },
  set(name: string, value: string | null): void {
    try {
      if (value === null) sessionStorage.removeItem(name);
      else sessionStorage.setItem(name, value);
    } catch {
      // No storage: the conversation lasts as long as the frame.
    }
  },
};

/** The page the visitor is on: the frame's referrer (the parent page, or its origin under the default policy). */
function pageUrl(): string | undefined {
  const referrer = document.referrer;
  return /^https?:\/\//i.test(referrer) && referrer.length <= 2048 ? referrer : undefined;
}

async function problemOf(response: Response): Promise<Problem | null> {
  try {
    const body = (await response.json()) as unknown;
    return body && typeof body === 'object' ? (body as Problem) : null;
  } catch {
    return null;
  }
}

/** What to tell the visitor about a problem document (or its absence). */
function problemText(problem: Problem | null, status: number, retryAfter?: string | null): string {
  const detail =
    typeof problem?.detail === 'string' && problem.detail
      ? problem.detail
      : status
        ? `Something went wrong (HTTP ${status}).`
        : 'The chat could not be reached. Check your connection and try again.';
  if (status === 429 || problem?.code === 'rate_limited') {
    const seconds = Number(retryAfter);
    return `${detail} Please wait ${Number.isFinite(seconds) && seconds > 0 ? `${Math.ceil(seconds)} seconds` : 'a moment'} before sending again.`;
  }
  return detail;
}

class ChatError extends Error {}

// ── Markdown, as elements ─────────────────────────────────────────────────────────────────────────────────────────

const INLINE = /`([^`\n]+)`|\*\*(\S(?:[^\n]*?\S)?)\*\*|\*([^*\s](?:[^*\n]*[^*\s])?)\*/g;

/** `code`, **bold** and *italic* in one line of text; everything else (citation markers [n] included) stays text. */
function inline(text: string): ComponentChildren[] {
  const out: ComponentChildren[] = [];
  const pattern = new RegExp(INLINE.source, 'g');
  let last = 0;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    if (match.index > last) out.push(text.slice(last, match.index));
    if (match[1] !== undefined) out.push(h('code', null, match[1]));
    else if (match[2] !== undefined) out.push(h('strong', null, inline(match[2])));
    else out.push(h('em', null, inline(match[3]!)));
    last = pattern.lastIndex;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

/** Paragraphs (blank lines) with line breaks, each line's inline marks. */
function Markdown({ text }: { text: string }) {
  const paragraphs = text
    .replace(/\r\n?/g, '\n')
    .split(/\n[ \t]*\n+/)
    .filter((paragraph) => paragraph.trim() !== '');
  return h(
    'div',
    { class: 'text' },
    paragraphs.map((paragraph, index) =>
      h(
        'p',
        { key: index },
        paragraph.split('\n').flatMap((line, at) => (at === 0 ? inline(line) : [h('br', null), ...inline(line)])),
      ),
    ),
  );
}

// ── Components ────────────────────────────────────────────────────────────────────────────────────────────────────

function Sources({ citations }: { citations: Citation[] }) {
  return h(
    'ol',
    { class: 'sources', 'data-part': 'sources', 'aria-label': 'Sources' },
    citations.map((citation, index) => {
      const link = citation.url && /^https?:\/\//i.test(citation.url) ? citation.url : null;
      return h(
        'li',
        { key: index, title: citation.excerpt || undefined },
        link ? h('a', { href: link, target: '_blank', rel: 'noopener nofollow' }, citation.title) : citation.title,
      );
    }),
  );
}

function Bubble({ message, showSources }: { message: Message; showSources: boolean }) {
  return h(
    'div',
    {
      class: `message ${message.role}`,
      'data-part': 'message',
      'data-role': message.role,
      'aria-busy': message.streaming ? 'true' : undefined,
    },
    h(
      'div',
      { class: 'bubble' },
      message.role === 'assistant'
        ? h(Markdown, { text: message.content })
        : h('p', { class: 'text plain' }, message.content),
      showSources && message.citations.length > 0 ? h(Sources, { citations: message.citations }) : null,
      message.escalated
        ? h('p', { class: 'note', 'data-part': 'escalated' }, 'A person from the team will follow up.')
        : null,
    ),
  );
}

function Rating({ conversationId }: { conversationId: string }) {
  const [score, setScore] = useState<number | null>(null);
  const [comment, setComment] = useState('');
  const [state, setState] = useState<'asking' | 'sending' | 'thanks'>('asking');
  const [error, setError] = useState<string | null>(null);
  if (state === 'thanks')
    return h('p', { class: 'thanks', 'data-part': 'thanks', role: 'status' }, 'Thanks for your rating!');

  const send = async () => {
    if (score === null || state === 'sending') return;
    setState('sending');
    setError(null);
    const text = comment.trim().slice(0, 1000);
    try {
      const response = await fetch('/v1/embed/csat', {
        method: 'POST',
        headers: headers('application/json', true),
        body: JSON.stringify({
          conversation_id: conversationId,
          visitor_id: visitor,
          score,
          ...(text ? { comment: text } : {}),
        }),
      });
      if (response.ok) {
        setState('thanks');
        return;
      }
      setError(problemText(await problemOf(response), response.status, response.headers.get('retry-after')));
    } catch {
      setError(problemText(null, 0));
    }
    setState('asking');
  };

  return h(
    'form',
    {
      class: 'csat',
      'data-part': 'csat',
      'aria-label': 'Rate this conversation',
      onSubmit: (event: Event) => {
        event.preventDefault();
        void send();
      },
    },
    h('p', { class: 'csat-question', id: 'csat-question' }, 'How was this conversation?'),
    h(
      'div',
      { class: 'scores', role: 'group', 'aria-labelledby': 'csat-question' },
      [1, 2, 3, 4, 5].map((n) =>
        h(
          'button',
          {
            type: 'button',
            key: n,
            'data-score': n,
            'aria-label': `${n} of 5`,
            'aria-pressed': score === n ? 'true' : 'false',
            onClick: () => setScore(n),
          },
          String(n),
        ),
      ),
    ),
    h(
      'div',
      { class: 'comment' },
      h('input', {
        type: 'text',
        'data-part': 'csat-comment',
        maxLength: 1000,
        placeholder: 'Anything to add? (optional)',
        'aria-label': 'Comment (optional)',
        value: comment,
        onInput: (event: Event) => setComment((event.currentTarget as HTMLInputElement).value),
      }),
      h(
        'button',
        { type: 'submit', 'data-part': 'csat-send', disabled: score === null || state === 'sending' },
        'Send',
      ),
    ),
    error ? h('p', { class: 'error', 'data-part': 'error', role: 'alert' }, error) : null,
  );
}

function Chat({ config }: { config: Config }) {
  const storageKey = `cs-chat-conversation:${config.chatbot_id}`;
  const nextKey = useRef(1);
  const [messages, setMessages] = useState<Message[]>(() =>
    config.greeting.trim()
      ? [{ key: 0, role: 'assistant', content: config.greeting, citations: [], escalated: false, streaming: false }]
      : [],
  );
  const [conversationId, setConversationId] = useState<string | null>(() => conversationStore.get(storageKey));
  const [replied, setReplied] = useState(false);
  const [draft, setDraft] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const list = useRef<HTMLDivElement>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  const sent = useRef(false);

  useEffect(() => {
    const element = list.current;
    if (element) element.scrollTop = element.scrollHeight;
  }, [messages, error]);
  useEffect(() => {
    // Back to the input once an answer is complete (not on the first render: the frame does not take the focus).
    if (!busy && sent.current) input.current?.focus();
  }, [busy]);

  const remember = (id: string | null) => {
    conversationStore.set(storageKey, id);
    setConversationId(id);
  };
  const update = (key: number, change: (message: Message) => Partial<Message>) =>
    setMessages((all) => all.map((message) => (message.key === key ? { ...message, ...change(message) } : message)));

  const send = async () => {
    const content = draft.trim().slice(0, MAX_LENGTH);
    if (!content || busy) return;
    sent.current = true;
    setDraft('');
    setError(null);
    setBusy(true);
    const visitorKey = nextKey.current++;
    const answerKey = nextKey.current++;
    setMessages((all) => [
      ...all,
      { key: visitorKey, role: 'visitor', content, citations: [], escalated: false, streaming: false },
      { key: answerKey, role: 'assistant', content: '', citations: [], escalated: false, streaming: true },
    ]);
    const locale = LOCALE.test(navigator.language) && navigator.language.length <= 35 ? navigator.language : undefined;
    const page = pageUrl();
    let done = false;
    try {
      let response: Response;
      try {
        response = await fetch('/v1/embed/messages', {
          method: 'POST',
          headers: headers('text/event-stream', true),
          body: JSON.stringify({
            content,
            visitor_id: visitor,
            ...(conversationId ? { conversation_id: conversationId } : {}),
            ...(locale ? { locale } : {}),
            ...(page ? { page_url: page } : {}),
            stream: true,
          }),
        });
      } catch {
        throw new ChatError(problemText(null, 0));
      }
      if (!response.ok || !response.body) {
        const problem = await problemOf(response);
        // A conversation this visitor can no longer continue (deleted, or full): the next message starts a new one.
        if (response.status === 404 || problem?.code === 'conversation_full') remember(null);
        throw new ChatError(problemText(problem, response.status, response.headers.get('retry-after')));
      }
      if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
        throw new ChatError('The chat sent an answer it could not read. Please try again.');
      }
      for await (const { event, data } of serverSentEvents(response.body)) {
        let payload: unknown;
        try {
          payload = JSON.parse(data);
        } catch {
          continue;
        }
        if (event === 'delta') {
          const piece = (payload as { content?: unknown }).content;
          if (typeof piece === 'string') update(answerKey, (message) => ({ content: message.content + piece }));
        } else if (event === 'reply') {
          const reply = payload as EmbedReply;
          update(answerKey, () => ({
            content: reply.message.content,
            citations: Array.isArray(reply.message.citations) ? reply.message.citations : [],
            escalated: reply.escalated === true,
            streaming: false,
          }));
          remember(reply.conversation_id);
          setReplied(true);
          done = true;
        } else if (event === 'error') {
          const problem = payload as Problem;
          throw new ChatError(problemText(problem, Number(problem.status) || 0));
        }
      }
      if (!done) throw new ChatError('The answer was cut off. Please try again.');
    } catch (failure) {
      // An answer that never started goes; one cut off midway stays as far as it came.
      setMessages((all) =>
        all.flatMap((message) =>
          message.key !== answerKey ? [message] : message.content === '' ? [] : [{ ...message, streaming: false }],
        ),
      );
      setError(failure instanceof ChatError ? failure.message : 'The answer could not be read. Please try again.');
      setDraft((current) => current || content);
    } finally {
      setBusy(false);
    }
  };

  return h(
    'div',
    { class: 'chat' },
    h(
      'div',
      {
        class: 'messages',
        'data-part': 'messages',
        ref: list,
        role: 'log',
        'aria-live': 'polite',
        'aria-label': 'Messages',
        tabIndex: 0,
      },
      messages.map((message) =>
        h(Bubble, { key: message.key, message, showSources: config.widget.show_sources !== false }),
      ),
    ),
    error ? h('p', { class: 'error', 'data-part': 'error', role: 'alert' }, error) : null,
    config.widget.csat_enabled && replied && conversationId ? h(Rating, { key: conversationId, conversationId }) : null,
    h(
      'form',
      {
        class: 'composer',
        onSubmit: (event: Event) => {
          event.preventDefault();
          void send();
        },
      },
      h('textarea', {
        ref: input,
        'data-part': 'input',
        rows: 2,
        maxLength: MAX_LENGTH,
        placeholder: 'Write a message…',
        'aria-label': 'Your message',
        value: draft,
        disabled: busy,
        onInput: (event: Event) => setDraft((event.currentTarget as HTMLTextAreaElement).value),
        onKeyDown: (event: KeyboardEvent) => {
          if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
            event.preventDefault();
            void send();
          }
        },
      }),
      h('button', { type: 'submit', 'data-part': 'send', disabled: busy || draft.trim() === '' }, 'Send'),
    ),
    draft.length > MAX_LENGTH - 200
      ? h('p', { class: 'counter', 'aria-live': 'polite' }, `${draft.length} / ${MAX_LENGTH}`)
      : null,
  );
}

type Loaded = { state: 'loading' } | { state: 'error'; error: string } | { state: 'ready' | 'offline'; config: Config };

function applyLook(widget: Widget): void {
  const root = document.documentElement;
  root.dataset.theme = widget.theme === 'light' || widget.theme === 'dark' ? widget.theme : 'auto';
  const accent = /^#[0-9A-Fa-f]{6}$/.test(widget.accent_color) ? widget.accent_color : DEFAULT_ACCENT;
  const n = Number.parseInt(accent.slice(1), 16);
  const channel = (c: number) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  const luminance = 0.2126 * channel((n >> 16) & 255) + 0.7152 * channel((n >> 8) & 255) + 0.0722 * channel(n & 255);
  // CSSOM, which the page's style-src 'self' allows (an inline style attribute it would not).
  root.style.setProperty('--accent', accent);
  root.style.setProperty('--on-accent', 1.05 / (luminance + 0.05) >= (luminance + 0.05) / 0.05 ? '#ffffff' : '#111827');
}

function App() {
  const [loaded, setLoaded] = useState<Loaded>({ state: 'loading' });
  useEffect(() => {
    void (async () => {
      if (!embedKey) return setLoaded({ state: 'error', error: 'This chat has no embed key.' });
      let response: Response;
      try {
        response = await fetch('/v1/embed/config', { headers: headers('application/json') });
      } catch {
        return setLoaded({ state: 'error', error: problemText(null, 0) });
      }
      if (!response.ok)
        return setLoaded({
          state: 'error',
          error: problemText(await problemOf(response), response.status, response.headers.get('retry-after')),
        });
      const config = (await response.json().catch(() => null)) as Config | null;
      if (!config || typeof config.name !== 'string' || !config.widget)
        return setLoaded({ state: 'error', error: 'The chat could not be loaded. Please try again later.' });
      applyLook(config.widget);
      document.title = `${config.name} · chat`;
      setLoaded({ state: config.enabled ? 'ready' : 'offline', config });
    })();
  }, []);
  useEffect(() => {
    document.body.dataset.state = loaded.state;
  }, [loaded.state]);

  const config = 'config' in loaded ? loaded.config : null;
  const avatar =
    config?.widget.avatar_url && /^https:\/\//i.test(config.widget.avatar_url) ? config.widget.avatar_url : null;
  return h(
    'div',
    { class: 'app' },
    h(
      'header',
      { class: 'header' },
      avatar ? h('img', { class: 'avatar', src: avatar, alt: '', width: 32, height: 32 }) : null,
      h('h1', null, config?.name ?? 'Chat'),
    ),
    loaded.state === 'loading' ? h('p', { class: 'loading', role: 'status' }, 'Loading…') : null,
    loaded.state === 'error'
      ? h('p', { class: 'error standalone', 'data-part': 'error', role: 'alert' }, loaded.error)
      : null,
    loaded.state === 'offline'
      ? h('p', { class: 'offline', 'data-part': 'offline', role: 'status' }, 'This chat is offline right now.')
      : null,
    loaded.state === 'ready' ? h(Chat, { config: loaded.config }) : null,
  );
}

render(h(App, null), document.getElementById('app') ?? document.body);

// The chat inside the widget's iframe (GET /embed/frame), a small Preact app: the greeting, the visitor's messages and
// the chatbot's answers as they stream (POST /v1/embed/messages with `stream: true`), their sources, a note when a
// person takes over, and the 1-5 rating (POST /v1/embed/csat). It runs on our origin, so its calls are same-origin;
// the embed key comes from the page's <meta name="embed-key">. Text is rendered as text (never as HTML).
import { h, render, type ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

interface Widget {
  theme: 'light' | 'dark' | 'auto';
  accent_color: string;
  avatar_url: string | null;
  csat_enabled: boolean;
  show_sources: boolean;
}
interface Config {
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
interface Message {
  key: string;
  role: 'visitor' | 'assistant';
  content: string;
  citations: Citation[];
  escalated?: boolean;
}
interface Problem {
  status?: number;
  detail?: string;
  code?: string;
}

const key = document.querySelector<HTMLMetaElement>('meta[name="embed-key"]')?.content ?? '';
const headers = { 'X-Embed-Key': key, Accept: 'application/json' };

function visitorId(): string {
  try {
    const stored = localStorage.getItem('cs-chat-visitor');
    if (stored && /^[A-Za-z0-9_-]{16,64}$/.test(stored)) return stored;
    const made = crypto.randomUUID();
    localStorage.setItem('cs-chat-visitor', made);
    return made;
  } catch {
    // Storage refused (a privacy setting): this visit only.
    return crypto.randomUUID();
  }
}
const visitor = visitorId();

function session(name: string, value?: string | null): string | null {
  try {
    if (value === undefined) return sessionStorage.getItem(name);
    if (value === null) sessionStorage.removeItem(name);
    else sessionStorage.setItem(name, value);
  } catch {
    // No storage: the conversation lasts as long as the frame.
  }
  return value ?? null;
}

function problemText(problem: Problem | null, status: number): string {
  if (status === 429) return `${problem?.detail ?? 'Too many messages.'} Please wait a moment.`;
  return problem?.detail ?? `Something went wrong (${status}).`;
}

/** Reads Server-Sent Events from a fetch response: each event's name and data. */
async function* serverSentEvents(response: Response): AsyncGenerator<{ event: string; data: string }> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end: number;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length > 0) yield { event, data: data.join('\n') };
    }
  }
}

function Sources({ citations }: { citations: Citation[] }) {
  return h(
    'ul',
    { class: 'sources', 'data-part': 'sources', 'aria-label': 'Sources' },
    citations.map((citation, index) =>
      h('li', { key: index, title: citation.excerpt }, citation.url ? h('a', { href: citation.url, target: '_blank', rel: 'noopener nofollow' }, citation.title) : citation.title),
    ),
  );
}

function Bubble({ message, avatar, showSources }: { message: Message; avatar: string | null; showSources: boolean }) {
  const children: ComponentChildren[] = [h('p', { class: 'text' }, message.content)];
  if (showSources && message.citations.length > 0) children.push(h(Sources, { citations: message.citations }));
  if (message.escalated) children.push(h('p', { class: 'note' }, 'A person from the team will follow up.'));
  return h(
    'div',
    { class: `message ${message.role}`, 'data-part': 'message', 'data-role': message.role },
    message.role === 'assistant' && avatar ? h('img', { class: 'avatar', src: avatar, alt: '' }) : null,
    h('div', { class: 'bubble' }, children),
  );
}

function Rating({ conversationId }: { conversationId: string }) {
  const [score, setScore] = useState<number | null>(null);
  const [comment, setComment] = useState('');
  const [state, setState] = useState<'asking' | 'sending' | 'thanks'>('asking');
  const [error, setError] = useState<string | null>(null);
  if (state === 'thanks') return h('p', { class: 'thanks', 'data-part': 'thanks' }, 'Thanks for your rating!');
  const send = async () => {
    if (score === null) return;
    setState('sending');
    const response = await fetch('/v1/embed/csat', {
      method: 'POST',
      headers: { ...headers, 'Content-Type': 'application/json' },
      body: JSON.stringify({ conversation_id: conversationId, visitor_id: visitor, score, ...(comment.trim() ? { comment: comment.trim().slice(0, 1000) } : {}) }),
    }).catch(() => null);
    if (response?.ok) return setState('thanks');
    setError(response ? problemText((await response.json().catch(() => null)) as Problem | null, response.status) : 'The rating could not be sent.');
    setState('asking');
  };
  return h(
    'div',
    { class: 'csat', 'data-part': 'csat' },
    h('p', null, 'How was this conversation?'),
    h(
      'div',
      { class: 'scores', role: 'group', 'aria-label': 'Rating' },
      [1, 2, 3, 4, 5].map((n) => h('button', { type: 'button', key: n, 'data-score': n, 'aria-label': `${n} of 5`, 'aria-pressed': score === n, onClick: () => setScore(n) }, '★')),
    ),
    score !== null
      ? h(
          'div',
          { class: 'comment' },
          h('input', { type: 'text', maxLength: 1000, placeholder: 'Anything to add? (optional)', value: comment, onInput: (e: Event) => setComment((e.target as HTMLInputElement).value) }),
          h('button', { type: 'button', 'data-part': 'csat-send', disabled: state === 'sending', onClick: () => void send() }, 'Send'),
        )
      : null,
    error ? h('p', { class: 'error', 'data-part': 'error' }, error) : null,
  );
}

function Chat({ config }: { config: Config }) {
  const stored = `cs-chat-conversation:${config.chatbot_id}`;
  const [messages, setMessages] = useState<Message[]>([{ key: 'greeting', role: 'assistant', content: config.greeting, citations: [] }]);
  const [conversationId, setConversationId] = useState<string | null>(session(stored));
  const [draft, setDraft] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const list = useRef<HTMLDivElement>(null);
  useEffect(() => list.current?.scrollTo({ top: list.current.scrollHeight }), [messages]);

  const update = (id: string, change: Partial<Message> | ((message: Message) => Partial<Message>)) =>
    setMessages((all) => all.map((message) => (message.key === id ? { ...message, ...(typeof change === 'function' ? change(message) : change) } : message)));

  const send = async () => {
    const content = draft.trim().slice(0, 2000);
    if (!content || busy) return;
    setDraft('');
    setError(null);
    setBusy(true);
    const answerKey = `a${Date.now()}`;
    setMessages((all) => [...all, { key: `v${Date.now()}`, role: 'visitor', content, citations: [] }, { key: answerKey, role: 'assistant', content: '', citations: [] }]);
    const locale = /^[a-zA-Z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(navigator.language) ? navigator.language : undefined;
    const page = /^https?:\/\//.test(document.referrer) ? document.referrer : undefined;
    try {
      const response = await fetch('/v1/embed/messages', {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
        body: JSON.stringify({ content, visitor_id: visitor, stream: true, ...(conversationId ? { conversation_id: conversationId } : {}), ...(locale ? { locale } : {}), ...(page ? { page_url: page } : {}) }),
      });
      if (!response.ok) {
        const problem = (await response.json().catch(() => null)) as Problem | null;
        // A conversation this browser can no longer continue (deleted, or rotated away): start a new one next time.
        if (response.status === 404 || problem?.code === 'conversation_full') setConversationId(session(stored, null));
        throw new Error(problemText(problem, response.status));
      }
      for await (const { event, data } of serverSentEvents(response)) {
        const payload = JSON.parse(data) as Record<string, any>;
        if (event === 'delta') update(answerKey, (message) => ({ content: message.content + String(payload.content) }));
        else if (event === 'reply') {
          update(answerKey, { content: payload.message.content, citations: payload.message.citations, escalated: payload.escalated });
          setConversationId(session(stored, payload.conversation_id));
        } else if (event === 'error') throw new Error(problemText(payload as Problem, Number(payload.status)));
      }
    } catch (failure) {
      setMessages((all) => all.filter((message) => message.key !== answerKey || message.content !== ''));
      setError(failure instanceof Error ? failure.message : 'The message could not be sent.');
    } finally {
      setBusy(false);
    }
  };

  const answered = messages.some((message) => message.role === 'visitor');
  return h(
    'div',
    { class: 'chat' },
    h(
      'div',
      { class: 'messages', 'data-part': 'messages', ref: list, role: 'log', 'aria-live': 'polite' },
      messages.map((message) => h(Bubble, { key: message.key, message, avatar: config.widget.avatar_url, showSources: config.widget.show_sources })),
    ),
    error ? h('p', { class: 'error', 'data-part': 'error', role: 'alert' }, error) : null,
    config.widget.csat_enabled && answered && conversationId && !busy ? h(Rating, { key: conversationId, conversationId }) : null,
    h(
      'form',
      {
        class: 'composer',
        onSubmit: (e: Event) => {
          e.preventDefault();
          void send();
        },
      },
      h('textarea', {
        'data-part': 'input',
        rows: 1,
        maxLength: 2000,
        placeholder: 'Write a message…',
        'aria-label': 'Your message',
        value: draft,
        disabled: busy,
        onInput: (e: Event) => setDraft((e.target as HTMLTextAreaElement).value),
        onKeyDown: (e: KeyboardEvent) => {
          if (e.key === 'Enter' && !e.shiftKey) {
            e.preventDefault();
            void send();
          }
        },
      }),
      h('button', { type: 'submit', 'data-part': 'send', disabled: busy || !draft.trim() }, 'Send'),
    ),
  );
}

function App() {
  const [state, setState] = useState<{ config?: Config; error?: string }>({});
  useEffect(() => {
    void (async () => {
      const response = await fetch('/v1/embed/config', { headers }).catch(() => null);
      const body = response ? ((await response.json().catch(() => null)) as (Config & Problem) | null) : null;
      if (!response?.ok || !body) return setState({ error: problemText(body, response?.status ?? 0) });
      document.documentElement.dataset.theme = body.widget.theme;
      document.documentElement.style.setProperty('--accent', /^#[0-9A-Fa-f]{6}$/.test(body.widget.accent_color) ? body.widget.accent_color : '#2563EB');
      setState({ config: body });
    })();
  }, []);
  const { config, error } = state;
  const status = error ? 'error' : !config ? 'loading' : config.enabled ? 'ready' : 'offline';
  document.body.dataset.state = status;
  return h(
    'div',
    { class: 'app' },
    h('header', null, config?.widget.avatar_url ? h('img', { class: 'avatar', src: config.widget.avatar_url, alt: '' }) : null, h('h1', null, config?.name ?? 'Chat')),
    error ? h('p', { class: 'error', 'data-part': 'error', role: 'alert' }, error) : null,
    config && !config.enabled ? h('p', { class: 'offline', 'data-part': 'offline' }, 'This chat is offline right now.') : null,
    config?.enabled ? h(Chat, { config }) : null,
  );
}

render(h(App, null), document.getElementById('app')!);

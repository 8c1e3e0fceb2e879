// The dashboard app: sign in with an API key, then the playground (where a key that may call the models lands: a
// model, a voice, a prompt, the answer streamed with its cost; other keys land on the workspace), the workspace, its API keys, members and projects, its webhooks and
// events, the audit and request logs, and the usage. Each page shows
// what the key's role allows (the contract's minimum role of each operation) and hides the controls it does not.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { allows, clientFor, type Role, type Schemas, savedKey, saveKey, unwrap } from './api.ts';
import { KeysPage } from './keys.tsx';
import { PlaygroundPage } from './playground.tsx';
import type { Session } from './session.ts';
import { EventsPage, LogsPage, MembersPage, ProjectsPage } from './settings.tsx';
import { ProblemMessage } from './ui.tsx';
import { UsagePage } from './usage.tsx';
import { WebhooksPage } from './webhooks.tsx';
import { WorkspacePage } from './workspace.tsx';

const PAGES = [
  { path: 'playground', title: 'Playground' },
  { path: 'workspace', title: 'Workspace' },
  { path: 'keys', title: 'API keys' },
  { path: 'members', title: 'Members' },
  { path: 'projects', title: 'Projects' },
  { path: 'webhooks', title: 'Webhooks' },
  { path: 'events', title: 'Events' },
  { path: 'logs', title: 'Logs' },
  { path: 'usage', title: 'Usage' },
] as const;
type PagePath = (typeof PAGES)[number]['path'];

/** The page the address names, or undefined when it names none (the landing page is the role's). */
function currentPage(): PagePath | undefined {
  const path = window.location.hash.replace(/^#\/?/, '').split('/')[0];
  return PAGES.find((page) => page.path === path)?.path;
}

/** Where a person lands: the playground when their key may call the models, else the workspace. */
function landingPage(role: Role): PagePath {
  return allows(role, 'createChatCompletion') ? 'playground' : 'workspace';
}

function SignIn({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <main class="signin">
      <h1>content-service dashboard</h1>
      <p>Sign in with an API key of your workspace. It is kept for this browser tab only and sent only to the API.</p>
      <form
        data-part="signin"
        onSubmit={async (event) => {
          event.preventDefault();
          setBusy(true);
          setError(null);
          try {
            const client = clientFor(key.trim());
            const workspace = await unwrap<Schemas['Workspace']>(client.GET('/v1/workspace'));
            saveKey(key.trim());
            onSignedIn({ client, workspace, role: workspace.caller.role });
          } catch (caught) {
            setError(caught);
          } finally {
            setBusy(false);
          }
        }}
      >
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          value={key}
          onInput={(event) => setKey((event.target as HTMLInputElement).value)}
        />
        <button type="submit" disabled={busy || !key.trim()}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <ProblemMessage error={error} />
    </main>
  );
}

function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [restoring, setRestoring] = useState(Boolean(savedKey()));
  const [addressed, setPage] = useState<PagePath | undefined>(currentPage());
  useEffect(() => {
    const onHash = () => setPage(currentPage());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  useEffect(() => {
    const key = savedKey();
    if (!key) return;
    const client = clientFor(key);
    unwrap<Schemas['Workspace']>(client.GET('/v1/workspace'))
      .then((workspace) => setSession({ client, workspace, role: workspace.caller.role }))
      .catch(() => saveKey(null))
      .finally(() => setRestoring(false));
  }, []);
  if (restoring) return <p class="loading">Signing in…</p>;
  if (!session) return <SignIn onSignedIn={setSession} />;
  const page = addressed ?? landingPage(session.role);
  return (
    <>
      <header class="top">
        <strong>{session.workspace.name}</strong>
        <span class="muted">
          {' '}
          {session.workspace.region.toUpperCase()} · signed in as <span data-part="role">{session.role}</span> (
          {session.workspace.caller.api_key_name})
        </span>
        <nav aria-label="Dashboard">
          {PAGES.map((item) => (
            <a key={item.path} href={`#/${item.path}`} aria-current={page === item.path ? 'page' : undefined}>
              {item.title}
            </a>
          ))}
        </nav>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            saveKey(null);
            setSession(null);
          }}
        >
          Sign out
        </button>
      </header>
      <main>
        {page === 'playground' ? <PlaygroundPage session={session} /> : null}
        {page === 'workspace' ? <WorkspacePage session={session} /> : null}
        {page === 'keys' ? <KeysPage session={session} /> : null}
        {page === 'members' ? <MembersPage session={session} /> : null}
        {page === 'projects' ? <ProjectsPage session={session} /> : null}
        {page === 'webhooks' ? <WebhooksPage session={session} /> : null}
        {page === 'events' ? <EventsPage session={session} /> : null}
        {page === 'logs' ? <LogsPage session={session} /> : null}
        {page === 'usage' ? <UsagePage session={session} /> : null}
      </main>
    </>
  );
}

// Preact adds to what the element holds: the page's "Loading" line goes first.
const root = document.getElementById('app')!;
root.textContent = '';
render(<App />, root);

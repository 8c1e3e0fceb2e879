// The dashboard app: sign in as yourself (a sign-in link by email, or single sign-on; the server's session cookie) or
// with an API key, then the playground (where a key that may call the models lands: a model, a voice, a prompt, the
// answer streamed with its cost; other keys land on the workspace), the workspace, its API keys, members, single
// sign-on connections, directory tokens and projects, its webhooks and events, the audit and request logs, the usage
// and your sessions. Each page shows what the signed-in role allows (the contract's minimum role of each operation)
// and hides the controls it does not.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import {
  allows,
  apiBase,
  clientFor,
  type Role,
  type Schemas,
  savedKey,
  saveKey,
  sessionClient,
  unwrap,
} from './api.ts';
import { DirectoryPage } from './directory.tsx';
import { KeysPage } from './keys.tsx';
import { PlaygroundPage } from './playground.tsx';
import type { Session } from './session.ts';
import { SessionsPage } from './sessions.tsx';
import { EventsPage, LogsPage, MembersPage, ProjectsPage } from './settings.tsx';
import { SsoPage } from './sso.tsx';
import { ProblemMessage } from './ui.tsx';
import { UsagePage } from './usage.tsx';
import { WebhooksPage } from './webhooks.tsx';
import { WorkspacePage } from './workspace.tsx';

const PAGES = [
  { path: 'playground', title: 'Playground' },
  { path: 'workspace', title: 'Workspace' },
  { path: 'keys', title: 'API keys' },
  { path: 'members', title: 'Members' },
  { path: 'sso', title: 'Single sign-on' },
  { path: 'directory', title: 'Directory' },
  { path: 'projects', title: 'Projects' },
  { path: 'webhooks', title: 'Webhooks' },
  { path: 'events', title: 'Events' },
  { path: 'logs', title: 'Logs' },
  { path: 'usage', title: 'Usage' },
  { path: 'sessions', title: 'Sessions' },
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

/** What the address asks of a sign-in: the workspace, and where to land afterwards (an approval page). */
function signInParams() {
  const query = new URLSearchParams(window.location.search);
  return { workspace: query.get('workspace') ?? '', returnTo: query.get('return_to') };
}

/** Emails a one-time sign-in link (POST /v1/sessions/links); the link signs the person in and brings them back. */
function LinkSignIn() {
  const params = signInParams();
  const [email, setEmail] = useState('');
  const [workspace, setWorkspace] = useState(params.workspace);
  const [sent, setSent] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  if (sent)
    return (
      <p data-part="link-sent" role="status">
        If {sent} is a member, a sign-in link is on its way. Open it in this browser within 15 minutes.
      </p>
    );
  return (
    <form
      data-part="link-signin"
      onSubmit={async (event) => {
        event.preventDefault();
        setBusy(true);
        setError(null);
        try {
          const client = sessionClient('');
          await unwrap(
            client.POST('/v1/sessions/links', {
              body: {
                email: email.trim(),
                ...(workspace.trim() ? { workspace_id: workspace.trim() } : {}),
                ...(params.returnTo ? { return_to: params.returnTo } : {}),
              },
            }),
          );
          setSent(email.trim());
        } catch (caught) {
          setError(caught);
        } finally {
          setBusy(false);
        }
      }}
    >
      <label for="signin-email">Email</label>
      <input
        id="signin-email"
        type="email"
        autocomplete="email"
        required
        value={email}
        onInput={(event) => setEmail((event.target as HTMLInputElement).value)}
      />
      <label for="signin-workspace">Workspace ID (optional)</label>
      <input
        id="signin-workspace"
        autocomplete="off"
        spellcheck={false}
        placeholder="ws_…"
        value={workspace}
        onInput={(event) => setWorkspace((event.target as HTMLInputElement).value)}
      />
      <button type="submit" disabled={busy || !email.trim()}>
        {busy ? 'Sending…' : 'Email me a sign-in link'}
      </button>
      <ProblemMessage error={error} />
    </form>
  );
}

/**
 * Single sign-on: the workspace's connection for the email's domain (GET /sso/start, a page of the server), which
 * sends the browser to the identity provider and brings it back signed in.
 */
function SsoSignIn() {
  const params = signInParams();
  const [email, setEmail] = useState('');
  const [workspace, setWorkspace] = useState(params.workspace);
  return (
    <form
      data-part="sso-signin"
      onSubmit={(event) => {
        event.preventDefault();
        const query = new URLSearchParams({ workspace_id: workspace.trim(), email: email.trim() });
        if (params.returnTo) query.set('return_to', params.returnTo);
        window.location.assign(`/sso/start?${query}`);
      }}
    >
      <label for="sso-email">Work email</label>
      <input
        id="sso-email"
        type="email"
        autocomplete="email"
        required
        value={email}
        onInput={(event) => setEmail((event.target as HTMLInputElement).value)}
      />
      <label for="sso-workspace">Workspace ID</label>
      <input
        id="sso-workspace"
        autocomplete="off"
        spellcheck={false}
        required
        placeholder="ws_…"
        value={workspace}
        onInput={(event) => setWorkspace((event.target as HTMLInputElement).value)}
      />
      <button type="submit" disabled={!email.trim() || !workspace.trim()}>
        Continue with single sign-on
      </button>
    </form>
  );
}

function SignIn({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <main class="signin">
      <h1>content-service dashboard</h1>
      {signInParams().returnTo ? <p data-part="return-notice">Sign in to go on to the page you opened.</p> : null}
      <h2>Sign in as yourself</h2>
      <LinkSignIn />
      <h2>Or use your company's single sign-on</h2>
      <SsoSignIn />
      <h2>Or use an API key</h2>
      <p>A key of your workspace is kept for this browser tab only and sent only to the API.</p>
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
            onSignedIn({ client, workspace, role: workspace.caller.role, person: null });
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
          {busy ? 'Signing in…' : 'Sign in with the key'}
        </button>
      </form>
      <ProblemMessage error={error} />
    </main>
  );
}

/** The person signed in with this browser's session cookie, or null (none, or the API is elsewhere: the mock). */
async function restoreSession(): Promise<Session | null> {
  if (apiBase !== window.location.origin || !document.querySelector('meta[name="session"]')) return null;
  const answer = await fetch(`${apiBase}/v1/session`, { headers: { Accept: 'application/json' } });
  if (!answer.ok) return null;
  const person = (await answer.json()) as Schemas['CurrentSession'];
  const client = sessionClient(person.csrf_token);
  const workspace = await unwrap<Schemas['Workspace']>(client.GET('/v1/workspace'));
  return { client, workspace, role: person.role, person };
}

function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [restoring, setRestoring] = useState(true);
  const [addressed, setPage] = useState<PagePath | undefined>(currentPage());
  useEffect(() => {
    const onHash = () => setPage(currentPage());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  useEffect(() => {
    const key = savedKey();
    if (!key) {
      restoreSession()
        .then(setSession)
        .catch(() => setSession(null))
        .finally(() => setRestoring(false));
      return;
    }
    const client = clientFor(key);
    unwrap<Schemas['Workspace']>(client.GET('/v1/workspace'))
      .then((workspace) => setSession({ client, workspace, role: workspace.caller.role, person: null }))
      .catch(() => saveKey(null))
      .finally(() => setRestoring(false));
  }, []);
  const signedOut = () => {
    saveKey(null);
    setSession(null);
  };
  if (restoring) return <p class="loading">Signing in…</p>;
  if (!session) return <SignIn onSignedIn={setSession} />;
  const page = addressed ?? landingPage(session.role);
  return (
    <>
      <header class="top">
        <strong>{session.workspace.name}</strong>
        <span class="muted">
          {' '}
          {session.workspace.region.toUpperCase()} ·{' '}
          {session.person ? (
            <>
              signed in as <span data-part="person">{session.person.user.email}</span> (
              <span data-part="role">{session.role}</span>)
            </>
          ) : (
            <>
              signed in as <span data-part="role">{session.role}</span> ({session.workspace.caller.api_key_name})
            </>
          )}
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
          data-part="sign-out"
          onClick={async () => {
            // A person's session ends on the server too; a key is only forgotten by this tab.
            if (session.person) await session.client.DELETE('/v1/session').catch(() => undefined);
            signedOut();
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
        {page === 'sso' ? <SsoPage session={session} /> : null}
        {page === 'directory' ? <DirectoryPage session={session} /> : null}
        {page === 'projects' ? <ProjectsPage session={session} /> : null}
        {page === 'webhooks' ? <WebhooksPage session={session} /> : null}
        {page === 'events' ? <EventsPage session={session} /> : null}
        {page === 'logs' ? <LogsPage session={session} /> : null}
        {page === 'usage' ? <UsagePage session={session} /> : null}
        {page === 'sessions' ? <SessionsPage session={session} onSignedOut={signedOut} /> : null}
      </main>
    </>
  );
}

// Preact adds to what the element holds: the page's "Loading" line goes first.
const root = document.getElementById('app')!;
root.textContent = '';
render(<App />, root);

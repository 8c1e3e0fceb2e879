// Your sessions: the browsers signed in as you, this one marked, each one signed out with a click.
import { useState } from 'preact/hooks';
import type { Schemas } from './api.ts';
import { unwrap } from './api.ts';
import type { Session } from './session.ts';
import { List, Table } from './settings.tsx';
import { ProblemMessage, usePages, when } from './ui.tsx';

type Page<T> = { data: T[]; next_cursor: string | null };

export function SessionsPage({ session, onSignedOut }: { session: Session; onSignedOut: () => void }) {
  const [version, setVersion] = useState(0);
  const [error, setError] = useState<unknown>(null);
  const pages = usePages<Schemas['Session']>(
    async (cursor) =>
      unwrap(
        session.client.GET('/v1/sessions', { params: { query: { limit: 20, ...(cursor ? { cursor } : {}) } } }),
      ) as Promise<Page<Schemas['Session']>>,
    [version],
  );
  return (
    <section aria-labelledby="sessions-title">
      <h1 id="sessions-title">Your sessions</h1>
      <p class="muted">
        The browsers signed in as you. A session ends after 12 hours without use and 7 days after it began.
      </p>
      <ProblemMessage error={error} />
      <List pages={pages} what="your sessions">
        {(items) => (
          <Table
            label="sessions"
            columns={['Signed in', 'How', 'From', 'Last seen', '']}
            rows={items.map((item) => ({
              key: item.id,
              cells: [
                when(item.created_at),
                item.method === 'link' ? 'sign-in link' : item.method.toUpperCase(),
                <span title={item.user_agent ?? ''}>{item.ip ?? '—'}</span>,
                when(item.last_seen_at),
                <button
                  type="button"
                  class="secondary"
                  data-part={item.current ? 'sign-out-current' : 'sign-out-session'}
                  aria-label={item.current ? 'Sign out of this browser' : `Sign out the session of ${item.created_at}`}
                  onClick={async () => {
                    setError(null);
                    try {
                      await unwrap(session.client.DELETE('/v1/sessions/{id}', { params: { path: { id: item.id } } }));
                      if (item.current) onSignedOut();
                      else setVersion((n) => n + 1);
                    } catch (caught) {
                      setError(caught);
                    }
                  }}
                >
                  {item.current ? 'Sign out (this browser)' : 'Sign out'}
                </button>,
              ],
            }))}
          />
        )}
      </List>
    </section>
  );
}

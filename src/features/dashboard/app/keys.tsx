// API keys: the list (admin and owner keys), a new key with a role and an expiry whose secret is shown once, rotation
// (the new secret shown once; the previous one works for 24 hours), and revocation after a confirmation.
import { useState } from 'preact/hooks';
import { allows, type Role, type Schemas, unwrap } from './api.ts';
import type { Session } from './session.ts';
import { Empty, Loading, MoreButton, NotAllowed, ProblemMessage, SecretOnce, usePages, when } from './ui.tsx';

type Key = Schemas['ApiKey'];
const ROLES: Role[] = ['viewer', 'editor', 'admin', 'owner'];

function CreateKey({
  session,
  onCreated,
}: {
  session: Session;
  onCreated: (key: Schemas['ApiKeyWithSecret']) => void;
}) {
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('editor');
  const [expires, setExpires] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="card"
      data-part="create-key"
      onSubmit={async (event) => {
        event.preventDefault();
        setBusy(true);
        setError(null);
        try {
          const created = await unwrap<Schemas['ApiKeyWithSecret']>(
            session.client.POST('/v1/api-keys', {
              body: { name: name.trim(), role, expires_at: expires ? new Date(expires).toISOString() : null },
            }),
          );
          setName('');
          setExpires('');
          onCreated(created);
        } catch (caught) {
          setError(caught);
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2>New key</h2>
      <label for="key-name">Name</label>
      <input
        id="key-name"
        required
        maxLength={100}
        value={name}
        onInput={(event) => setName((event.target as HTMLInputElement).value)}
      />
      <label for="key-role">Role</label>
      <select
        id="key-role"
        value={role}
        onChange={(event) => setRole((event.target as HTMLSelectElement).value as Role)}
      >
        {ROLES.map((item) => (
          <option key={item} value={item}>
            {item}
          </option>
        ))}
      </select>
      <label for="key-expires">Expires (optional)</label>
      <input
        id="key-expires"
        type="datetime-local"
        value={expires}
        onInput={(event) => setExpires((event.target as HTMLInputElement).value)}
      />
      <div class="actions">
        <button type="submit" disabled={busy || !name.trim()}>
          {busy ? 'Creating…' : 'Create key'}
        </button>
      </div>
      <ProblemMessage error={error} />
    </form>
  );
}

function KeyRow({
  session,
  item,
  onChanged,
  onSecret,
}: {
  session: Session;
  item: Key;
  onChanged: () => void;
  onSecret: (title: string, secret: string, note: string) => void;
}) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const active = item.status === 'active';
  const own = item.id === session.workspace.caller.api_key_id;
  return (
    <tr data-key-id={item.id}>
      <td>
        {item.name}
        {own ? <span class="badge">this key</span> : null}
      </td>
      <td>{item.role}</td>
      <td data-part="status">{item.status}</td>
      <td>
        <code>{item.redacted_value}</code>
      </td>
      <td>{when(item.last_used_at)}</td>
      <td>{item.expires_at ? when(item.expires_at) : 'never'}</td>
      <td>
        {item.previous_secret_expires_at && new Date(item.previous_secret_expires_at) > new Date() ? (
          <span data-part="grace">previous secret works until {when(item.previous_secret_expires_at)}</span>
        ) : null}
        {active && allows(session.role, 'rotateApiKey') ? (
          <div class="actions">
            <button
              type="button"
              class="secondary"
              onClick={async () => {
                setError(null);
                try {
                  const rotated = await unwrap<Schemas['ApiKeyWithSecret']>(
                    session.client.POST('/v1/api-keys/{id}/rotate', { params: { path: { id: item.id } } }),
                  );
                  onSecret(
                    `New secret of ${item.name}`,
                    rotated.secret,
                    `The previous secret keeps working until ${when(rotated.previous_secret_expires_at)} (24 hours), so that you can deploy the new one.`,
                  );
                  onChanged();
                } catch (caught) {
                  setError(caught);
                }
              }}
            >
              Rotate
            </button>
            {confirming ? (
              <span class="confirm" role="group" aria-label={`Revoke ${item.name}?`}>
                Revoke {item.name}? It stops working at once.
                <button
                  type="button"
                  class="danger"
                  onClick={async () => {
                    setError(null);
                    try {
                      await unwrap(session.client.DELETE('/v1/api-keys/{id}', { params: { path: { id: item.id } } }));
                      setConfirming(false);
                      onChanged();
                    } catch (caught) {
                      setError(caught);
                    }
                  }}
                >
                  Revoke key
                </button>
                <button type="button" class="secondary" onClick={() => setConfirming(false)}>
                  Cancel
                </button>
              </span>
            ) : (
              <button type="button" class="secondary" onClick={() => setConfirming(true)}>
                Revoke
              </button>
            )}
          </div>
        ) : null}
        <ProblemMessage error={error} />
      </td>
    </tr>
  );
}

export function KeysPage({ session }: { session: Session }) {
  const [version, setVersion] = useState(0);
  const [secret, setSecret] = useState<{ title: string; secret: string; note?: string } | null>(null);
  const canList = allows(session.role, 'listApiKeys');
  const pages = usePages<Key>(
    async (cursor) =>
      canList
        ? unwrap(
            session.client.GET('/v1/api-keys', { params: { query: { limit: 20, ...(cursor ? { cursor } : {}) } } }),
          )
        : { data: [], next_cursor: null },
    [version],
  );
  if (!canList) {
    return (
      <section aria-labelledby="keys-title">
        <h1 id="keys-title">API keys</h1>
        <NotAllowed session={session} what="the workspace's API keys" />
      </section>
    );
  }
  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      {secret ? <SecretOnce {...secret} onDone={() => setSecret(null)} /> : null}
      {allows(session.role, 'createApiKey') ? (
        <CreateKey
          session={session}
          onCreated={(created) => {
            setSecret({ title: `Secret of ${created.name}`, secret: created.secret });
            setVersion((n) => n + 1);
          }}
        />
      ) : null}
      <ProblemMessage error={pages.error} />
      {pages.items === null ? (
        <Loading what="the keys" />
      ) : pages.items.length === 0 ? (
        <Empty>No keys yet.</Empty>
      ) : (
        <div class="table" tabIndex={0} role="region" aria-label="API keys">
          <table data-part="keys">
            <caption class="visually-hidden">The workspace's API keys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Role</th>
                <th scope="col">Status</th>
                <th scope="col">Key</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {pages.items.map((item) => (
                <KeyRow
                  key={item.id}
                  session={session}
                  item={item}
                  onChanged={() => setVersion((n) => n + 1)}
                  onSecret={(title, value, note) => setSecret({ title, secret: value, note })}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <MoreButton more={pages.more} busy={pages.busy} />
    </section>
  );
}

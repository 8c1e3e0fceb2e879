// Directory provisioning (SCIM 2.0): the tokens with which a company's directory (Okta, Microsoft Entra ID) adds and
// removes the workspace's members. A new token's secret is shown once with the SCIM base URL to enter beside it;
// rotation shows the new secret once (the previous one works for 24 hours); revocation follows a confirmation.
// Owners only, as the contract says.
import { useState } from 'preact/hooks';
import { allows, type Schemas, unwrap } from './api.ts';
import type { Session } from './session.ts';
import { List, Table } from './settings.tsx';
import { CopyButton, OwnersOnly, ProblemMessage, SecretOnce, usePages, when } from './ui.tsx';

type Token = Schemas['DirectoryToken'];
type Page<T> = { data: T[]; next_cursor: string | null };
/** The directories whose guides this service has; any other short lower-case name is accepted too. */
const KNOWN_DIRECTORIES = ['okta', 'entra-id', 'google-workspace'];

interface ShownSecret {
  title: string;
  secret: string;
  scimBaseUrl: string;
  note?: string;
}

/** Where the directory sends its SCIM requests, with a copy button. */
function ScimBaseUrl({ url }: { url: string }) {
  return (
    <p>
      SCIM base URL (Okta's “SCIM connector base URL”, Entra ID's “Tenant URL”):{' '}
      <code class="path" data-part="scim-base-url">
        {url}
      </code>{' '}
      <CopyButton text={url} label="Copy SCIM base URL" />
    </p>
  );
}

function CreateToken({
  session,
  onCreated,
}: {
  session: Session;
  onCreated: (token: Schemas['DirectoryTokenWithSecret']) => void;
}) {
  const [name, setName] = useState('');
  const [directory, setDirectory] = useState('okta');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="card"
      data-part="create-directory-token"
      onSubmit={async (event) => {
        event.preventDefault();
        setBusy(true);
        setError(null);
        try {
          const created = await unwrap<Schemas['DirectoryTokenWithSecret']>(
            session.client.POST('/v1/directory-tokens', {
              body: { name: name.trim(), directory: directory.trim() },
            }),
          );
          setName('');
          onCreated(created);
        } catch (caught) {
          setError(caught);
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2>New directory token</h2>
      <label for="directory-token-name">Name</label>
      <input
        id="directory-token-name"
        required
        maxLength={100}
        placeholder="Okta production"
        value={name}
        onInput={(event) => setName((event.target as HTMLInputElement).value)}
      />
      <label for="directory-token-directory">Directory</label>
      <input
        id="directory-token-directory"
        required
        maxLength={50}
        pattern="[a-z0-9][a-z0-9\-]{0,49}"
        list="known-directories"
        aria-describedby="directory-token-directory-note"
        spellcheck={false}
        value={directory}
        onInput={(event) => setDirectory((event.target as HTMLInputElement).value)}
      />
      <datalist id="known-directories">
        {KNOWN_DIRECTORIES.map((item) => (
          <option key={item} value={item} />
        ))}
      </datalist>
      <p class="muted note" id="directory-token-directory-note">
        A short lower-case name. Members this directory provisions show it, and only it changes or removes them.
      </p>
      <div class="actions">
        <button type="submit" disabled={busy || !name.trim() || !directory.trim()}>
          {busy ? 'Creating…' : 'Create token'}
        </button>
      </div>
      <ProblemMessage error={error} />
    </form>
  );
}

function TokenActions({
  session,
  item,
  onChanged,
  onSecret,
}: {
  session: Session;
  item: Token;
  onChanged: () => void;
  onSecret: (shown: ShownSecret) => void;
}) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<unknown>(null);
  if (item.status !== 'active') return <span class="muted">revoked {when(item.revoked_at)}</span>;
  return (
    <>
      {item.previous_secret_expires_at && new Date(item.previous_secret_expires_at) > new Date() ? (
        <span data-part="grace">previous secret works until {when(item.previous_secret_expires_at)}</span>
      ) : null}
      <div class="actions">
        {allows(session.role, 'rotateDirectoryToken') ? (
          <button
            type="button"
            class="secondary"
            aria-label={`Rotate ${item.name}`}
            onClick={async () => {
              setError(null);
              try {
                const rotated = await unwrap<Schemas['DirectoryTokenWithSecret']>(
                  session.client.POST('/v1/directory-tokens/{id}/rotate', { params: { path: { id: item.id } } }),
                );
                onSecret({
                  title: `New secret of ${item.name}`,
                  secret: rotated.secret,
                  scimBaseUrl: rotated.scim_base_url,
                  note: `The previous secret keeps working until ${when(rotated.previous_secret_expires_at)} (24 hours): enter the new one in the directory before then.`,
                });
                onChanged();
              } catch (caught) {
                setError(caught);
              }
            }}
          >
            Rotate
          </button>
        ) : null}
        {!allows(session.role, 'revokeDirectoryToken') ? null : confirming ? (
          <span class="confirm" role="group" aria-label={`Revoke ${item.name}?`}>
            Revoke {item.name}? The directory's requests are refused at once.
            <button
              type="button"
              class="danger"
              onClick={async () => {
                setError(null);
                try {
                  await unwrap(
                    session.client.DELETE('/v1/directory-tokens/{id}', { params: { path: { id: item.id } } }),
                  );
                  setConfirming(false);
                  onChanged();
                } catch (caught) {
                  setError(caught);
                }
              }}
            >
              Revoke token
            </button>
            <button type="button" class="secondary" onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </span>
        ) : (
          <button
            type="button"
            class="secondary"
            aria-label={`Revoke ${item.name}`}
            onClick={() => setConfirming(true)}
          >
            Revoke
          </button>
        )}
      </div>
      <ProblemMessage error={error} />
    </>
  );
}

export function DirectoryPage({ session }: { session: Session }) {
  const [version, setVersion] = useState(0);
  const [secret, setSecret] = useState<ShownSecret | null>(null);
  const canList = allows(session.role, 'listDirectoryTokens');
  const pages = usePages<Token>(
    async (cursor) =>
      canList
        ? (unwrap(
            session.client.GET('/v1/directory-tokens', {
              params: { query: { limit: 20, ...(cursor ? { cursor } : {}) } },
            }),
          ) as Promise<Page<Token>>)
        : { data: [], next_cursor: null },
    [version],
  );
  return (
    <section aria-labelledby="directory-title">
      <h1 id="directory-title">Directory provisioning (SCIM)</h1>
      <p class="muted">
        A directory such as Okta or Microsoft Entra ID adds, changes and removes the workspace's members through SCIM
        2.0 with a token of this page.
      </p>
      {!canList ? (
        <OwnersOnly role={session.role} what="directory tokens" />
      ) : (
        <>
          {secret ? (
            <SecretOnce title={secret.title} secret={secret.secret} note={secret.note} onDone={() => setSecret(null)}>
              <ScimBaseUrl url={secret.scimBaseUrl} />
            </SecretOnce>
          ) : null}
          {allows(session.role, 'createDirectoryToken') ? (
            <CreateToken
              session={session}
              onCreated={(created) => {
                setSecret({
                  title: `Secret of ${created.name}`,
                  secret: created.secret,
                  scimBaseUrl: created.scim_base_url,
                });
                setVersion((n) => n + 1);
              }}
            />
          ) : null}
          <List pages={pages} what="the directory tokens" columns={6}>
            {(items) => (
              <Table
                label="directory tokens"
                columns={['Name', 'Directory', 'Status', 'Token', 'Last used', 'Actions']}
                rows={items.map((item) => ({
                  key: item.id,
                  cells: [
                    item.name,
                    item.directory,
                    <span data-part="status">{item.status}</span>,
                    <code>{item.redacted_value}</code>,
                    when(item.last_used_at),
                    <TokenActions
                      session={session}
                      item={item}
                      onChanged={() => setVersion((n) => n + 1)}
                      onSecret={setSecret}
                    />,
                  ],
                }))}
              />
            )}
          </List>
        </>
      )}
    </section>
  );
}

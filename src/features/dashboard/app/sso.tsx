// Single sign-on: the workspace's connections to identity providers. An owner connects one (OpenID Connect: the
// issuer, client id and secret; SAML 2.0: the identity provider's metadata, a URL or the XML), reads what to enter at
// the identity provider (the redirect URI, or the ACS URL and entity id), requires the connection for its domains or
// stops requiring it, and deletes it. Owners only, as the contract says.
import { useState } from 'preact/hooks';
import { allows, type Schemas, unwrap } from './api.ts';
import type { Session } from './session.ts';
import { List, Table } from './settings.tsx';
import { CopyButton, OwnersOnly, ProblemMessage, usePages, when } from './ui.tsx';

type Connection = Schemas['SsoConnection'];
type Page<T> = { data: T[]; next_cursor: string | null };
type Protocol = Schemas['SsoProtocol'];
type DefaultRole = Schemas['SsoDefaultRole'];

const PROTOCOLS: Record<Protocol, string> = { oidc: 'OpenID Connect', saml: 'SAML 2.0' };

/** Domains as a person types them: separated by commas or spaces, any case, an `@` in front forgiven. */
function domainsOf(text: string): string[] {
  return [
    ...new Set(
      text
        .split(/[\s,]+/)
        .map((item) => item.trim().toLowerCase().replace(/^@/, ''))
        .filter(Boolean),
    ),
  ];
}

/** A value to enter at the identity provider, with its copy button. */
function Fact({ term, value, part }: { term: string; value: string | null; part: string }) {
  return (
    <>
      <dt>{term}</dt>
      <dd>
        {value === null ? (
          <span class="muted">—</span>
        ) : (
          <>
            <code class="path" data-part={part}>
              {value}
            </code>{' '}
            <CopyButton text={value} label={`Copy ${term}`} />
          </>
        )}
      </dd>
    </>
  );
}

function CreateConnection({ session, onCreated }: { session: Session; onCreated: (created: Connection) => void }) {
  const [name, setName] = useState('');
  const [protocol, setProtocol] = useState<Protocol>('oidc');
  const [defaultRole, setDefaultRole] = useState<DefaultRole>('viewer');
  const [domains, setDomains] = useState('');
  const [issuer, setIssuer] = useState('');
  const [clientId, setClientId] = useState('');
  const [clientSecret, setClientSecret] = useState('');
  const [metadataUrl, setMetadataUrl] = useState('');
  const [metadataXml, setMetadataXml] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="card"
      data-part="create-sso-connection"
      onSubmit={async (event) => {
        event.preventDefault();
        setBusy(true);
        setError(null);
        try {
          const created = await unwrap<Connection>(
            session.client.POST('/v1/sso-connections', {
              body: {
                name: name.trim(),
                protocol,
                default_role: defaultRole,
                domains: domainsOf(domains),
                ...(protocol === 'oidc'
                  ? { oidc: { issuer: issuer.trim(), client_id: clientId.trim(), client_secret: clientSecret } }
                  : {
                      // The API takes one of the two and says so when given both.
                      saml: {
                        ...(metadataUrl.trim() ? { idp_metadata_url: metadataUrl.trim() } : {}),
                        ...(metadataXml.trim() ? { idp_metadata_xml: metadataXml.trim() } : {}),
                      },
                    }),
              },
            }),
          );
          setName('');
          setClientSecret('');
          setMetadataXml('');
          onCreated(created);
        } catch (caught) {
          setError(caught);
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2>New connection</h2>
      <label for="sso-name">Name</label>
      <input
        id="sso-name"
        required
        maxLength={100}
        placeholder="Okta"
        value={name}
        onInput={(event) => setName((event.target as HTMLInputElement).value)}
      />
      <fieldset>
        <legend>Protocol</legend>
        {(Object.keys(PROTOCOLS) as Protocol[]).map((item) => (
          <label key={item} class="choice">
            <input
              type="radio"
              name="sso-protocol"
              value={item}
              checked={protocol === item}
              onChange={() => setProtocol(item)}
            />
            {PROTOCOLS[item]}
          </label>
        ))}
      </fieldset>
      {protocol === 'oidc' ? (
        <>
          <label for="sso-issuer">Issuer URL</label>
          <input
            id="sso-issuer"
            type="url"
            required
            spellcheck={false}
            placeholder="https://acme.okta.com"
            value={issuer}
            onInput={(event) => setIssuer((event.target as HTMLInputElement).value)}
          />
          <label for="sso-client-id">Client ID</label>
          <input
            id="sso-client-id"
            required
            spellcheck={false}
            autocomplete="off"
            value={clientId}
            onInput={(event) => setClientId((event.target as HTMLInputElement).value)}
          />
          <label for="sso-client-secret">Client secret</label>
          <input
            id="sso-client-secret"
            type="password"
            required
            autocomplete="off"
            value={clientSecret}
            onInput={(event) => setClientSecret((event.target as HTMLInputElement).value)}
          />
        </>
      ) : (
        <>
          <label for="sso-metadata-url">Identity provider metadata URL</label>
          <input
            id="sso-metadata-url"
            type="url"
            spellcheck={false}
            placeholder="https://acme.okta.com/app/…/sso/saml/metadata"
            aria-describedby="sso-metadata-note"
            value={metadataUrl}
            onInput={(event) => setMetadataUrl((event.target as HTMLInputElement).value)}
          />
          <label for="sso-metadata-xml">Or the metadata XML</label>
          <textarea
            id="sso-metadata-xml"
            rows={4}
            spellcheck={false}
            aria-describedby="sso-metadata-note"
            value={metadataXml}
            onInput={(event) => setMetadataXml((event.target as HTMLTextAreaElement).value)}
          />
          <p class="muted note" id="sso-metadata-note">
            One of the two. A URL is read again whenever it is given again (when the identity provider rolls its
            certificate).
          </p>
        </>
      )}
      <label for="sso-domains">Email domains (optional)</label>
      <input
        id="sso-domains"
        spellcheck={false}
        placeholder="acme.example"
        aria-describedby="sso-domains-note"
        value={domains}
        onInput={(event) => setDomains((event.target as HTMLInputElement).value)}
      />
      <p class="muted note" id="sso-domains-note">
        Separated by commas. The connection signs in only people of these domains, and a sign-in by email finds it.
      </p>
      <label for="sso-default-role">Role of people who join by signing in</label>
      <select
        id="sso-default-role"
        value={defaultRole}
        onChange={(event) => setDefaultRole((event.target as HTMLSelectElement).value as DefaultRole)}
      >
        {(['viewer', 'editor', 'admin'] as DefaultRole[]).map((item) => (
          <option key={item} value={item}>
            {item}
          </option>
        ))}
      </select>
      <div class="actions">
        <button type="submit" disabled={busy || !name.trim()}>
          {busy ? 'Connecting…' : 'Create connection'}
        </button>
      </div>
      <ProblemMessage error={error} />
    </form>
  );
}

/** One connection: what to enter at the identity provider, whether it is required, and its deletion. */
function ConnectionDetails({
  session,
  connection,
  onChanged,
  onDeleted,
  onClose,
}: {
  session: Session;
  connection: Connection;
  onChanged: (changed: Connection) => void;
  onDeleted: () => void;
  onClose: () => void;
}) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  // The box shows the person's choice at once; a refusal puts it back.
  const [required, setRequired] = useState(connection.required);
  const canUpdate = allows(session.role, 'updateSsoConnection');
  return (
    <section class="card" aria-labelledby="sso-details-title" data-part="sso-details">
      <h2 id="sso-details-title">{connection.name}</h2>
      <p class="muted">
        {PROTOCOLS[connection.protocol]} · people who join get the {connection.default_role} role · created{' '}
        {when(connection.created_at)}
      </p>
      <h3>Enter at the identity provider</h3>
      <dl class="facts">
        {connection.oidc ? (
          <>
            <Fact term="Redirect URI" value={connection.oidc.redirect_uri} part="redirect-uri" />
            <Fact term="Sign-in start URL" value={connection.start_url} part="start-url" />
          </>
        ) : null}
        {connection.saml ? (
          <>
            <Fact term="ACS URL" value={connection.saml.acs_url} part="acs-url" />
            <Fact term="Entity ID" value={connection.saml.sp_entity_id} part="sp-entity-id" />
            <Fact term="Service provider metadata" value={connection.saml.sp_metadata_url} part="sp-metadata-url" />
            <Fact term="Sign-in start URL" value={connection.start_url} part="start-url" />
          </>
        ) : null}
      </dl>
      <h3>The identity provider</h3>
      <dl class="facts">
        {connection.oidc ? (
          <>
            <dt>Issuer</dt>
            <dd>
              <code class="path">{connection.oidc.issuer}</code>
            </dd>
            <dt>Client ID</dt>
            <dd>
              <code class="path">{connection.oidc.client_id}</code>
            </dd>
          </>
        ) : null}
        {connection.saml ? (
          <>
            <dt>Entity ID</dt>
            <dd>
              <code class="path">{connection.saml.idp_entity_id}</code>
            </dd>
            <dt>Single sign-on URL</dt>
            <dd>
              <code class="path">{connection.saml.idp_sso_url}</code>
            </dd>
            <dt>Metadata read from</dt>
            <dd>
              {connection.saml.idp_metadata_url ? (
                <code class="path">{connection.saml.idp_metadata_url}</code>
              ) : (
                'the XML given'
              )}
            </dd>
          </>
        ) : null}
        <dt>Domains</dt>
        <dd data-part="domains">{connection.domains.length ? connection.domains.join(', ') : 'any'}</dd>
      </dl>
      {canUpdate ? (
        <div class="actions">
          <label class="choice">
            <input
              type="checkbox"
              data-part="required"
              checked={required}
              disabled={busy || (connection.domains.length === 0 && !required)}
              aria-describedby="sso-required-note"
              onChange={async (event) => {
                const wanted = (event.target as HTMLInputElement).checked;
                setRequired(wanted);
                setBusy(true);
                setError(null);
                try {
                  onChanged(
                    await unwrap<Connection>(
                      session.client.PATCH('/v1/sso-connections/{id}', {
                        params: { path: { id: connection.id } },
                        body: { required: wanted },
                      }),
                    ),
                  );
                } catch (caught) {
                  setRequired(!wanted);
                  setError(caught);
                } finally {
                  setBusy(false);
                }
              }}
            />
            Require single sign-on for these domains
          </label>
        </div>
      ) : null}
      <p class="muted note" id="sso-required-note">
        {connection.domains.length === 0
          ? 'Give the connection a domain to require it.'
          : `Required: people of ${connection.domains.join(', ')} sign in through this connection only (API keys keep working).`}
      </p>
      <div class="actions">
        {allows(session.role, 'deleteSsoConnection') ? (
          confirming ? (
            <span class="confirm" role="group" aria-label={`Delete ${connection.name}?`}>
              Delete {connection.name}? Its sign-ins stop at once; members stay.
              <button
                type="button"
                class="danger"
                onClick={async () => {
                  setError(null);
                  try {
                    await unwrap(
                      session.client.DELETE('/v1/sso-connections/{id}', {
                        params: { path: { id: connection.id } },
                      }),
                    );
                    onDeleted();
                  } catch (caught) {
                    setError(caught);
                  }
                }}
              >
                Delete connection
              </button>
              <button type="button" class="secondary" onClick={() => setConfirming(false)}>
                Cancel
              </button>
            </span>
          ) : (
            <button type="button" class="secondary" onClick={() => setConfirming(true)}>
              Delete
            </button>
          )
        ) : null}
        <button type="button" class="secondary" onClick={onClose}>
          Close
        </button>
      </div>
      <ProblemMessage error={error} />
    </section>
  );
}

export function SsoPage({ session }: { session: Session }) {
  const [version, setVersion] = useState(0);
  const [shown, setShown] = useState<Connection | null>(null);
  const canList = allows(session.role, 'listSsoConnections');
  const pages = usePages<Connection>(
    async (cursor) =>
      canList
        ? (unwrap(
            session.client.GET('/v1/sso-connections', {
              params: { query: { limit: 20, ...(cursor ? { cursor } : {}) } },
            }),
          ) as Promise<Page<Connection>>)
        : { data: [], next_cursor: null },
    [version],
  );
  return (
    <section aria-labelledby="sso-title">
      <h1 id="sso-title">Single sign-on</h1>
      <p class="muted">
        People sign in through the company's identity provider (OpenID Connect or SAML 2.0); someone who is not a member
        yet becomes one. API keys are not affected.
      </p>
      {!canList ? (
        <OwnersOnly role={session.role} what="single sign-on" />
      ) : (
        <>
          {shown ? (
            <ConnectionDetails
              key={shown.id}
              session={session}
              connection={shown}
              onChanged={(changed) => {
                setShown(changed);
                setVersion((n) => n + 1);
              }}
              onDeleted={() => {
                setShown(null);
                setVersion((n) => n + 1);
              }}
              onClose={() => setShown(null)}
            />
          ) : null}
          {allows(session.role, 'createSsoConnection') ? (
            <CreateConnection
              session={session}
              onCreated={(created) => {
                setShown(created);
                setVersion((n) => n + 1);
              }}
            />
          ) : null}
          <List pages={pages} what="the connections" columns={5}>
            {(items) => (
              <Table
                label="single sign-on connections"
                columns={['Name', 'Protocol', 'Domains', 'Required', '']}
                rows={items.map((item) => ({
                  key: item.id,
                  cells: [
                    item.name,
                    PROTOCOLS[item.protocol],
                    item.domains.length ? item.domains.join(', ') : <span class="muted">any</span>,
                    <span data-part="required">{item.required ? 'yes' : 'no'}</span>,
                    <button
                      type="button"
                      class="secondary"
                      aria-label={`Details of ${item.name}`}
                      onClick={() => setShown(item)}
                    >
                      Details
                    </button>,
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

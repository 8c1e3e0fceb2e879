// The rest of the workspace's settings: members (add, remove), projects (create, delete), the audit log and the
// request log with their filters, and the events list. Controls follow the contract's minimum roles.
import { useEffect, useState } from 'preact/hooks';
import { allows, type Role, type Schemas, unwrap } from './api.ts';
import type { Session } from './session.ts';
import { Empty, Loading, MoreButton, NotAllowed, ProblemMessage, Skeleton, usePages, when } from './ui.tsx';

type Page<T> = { data: T[]; next_cursor: string | null };
const cursorOf = (cursor: string | undefined) => (cursor ? { cursor } : {});

export function Table({
  label,
  columns,
  rows,
}: {
  label: string;
  columns: string[];
  rows: { key: string; cells: preact.ComponentChildren[] }[];
}) {
  return (
    <div class="table" tabIndex={0} role="region" aria-label={label}>
      <table data-part={label}>
        <caption class="visually-hidden">{label}</caption>
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column} scope="col">
                {column}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.key}>
              {row.cells.map((cell, index) => (
                <td key={index}>{cell}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A list's first page: its table's skeleton while it comes (given its number of `columns`), then the table. */
export function List<T>({
  pages,
  what,
  columns,
  children,
}: {
  pages: ReturnType<typeof usePages<T>>;
  what: string;
  columns?: number;
  children: (items: T[]) => preact.ComponentChildren;
}) {
  const loading = pages.error ? null : columns ? <Skeleton what={what} columns={columns} /> : <Loading what={what} />;
  return (
    <>
      <ProblemMessage error={pages.error} />
      {pages.items === null ? (
        loading
      ) : pages.items.length === 0 ? (
        <Empty>Nothing here yet.</Empty>
      ) : (
        children(pages.items)
      )}
      <MoreButton more={pages.more} busy={pages.busy} />
    </>
  );
}

export function MembersPage({ session }: { session: Session }) {
  const [version, setVersion] = useState(0);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('editor');
  const [error, setError] = useState<unknown>(null);
  const pages = usePages<Schemas['Member']>(
    async (cursor) =>
      unwrap(session.client.GET('/v1/members', { params: { query: { limit: 20, ...cursorOf(cursor) } } })) as Promise<
        Page<Schemas['Member']>
      >,
    [version],
  );
  return (
    <section aria-labelledby="members-title">
      <h1 id="members-title">Members</h1>
      {allows(session.role, 'addMember') ? (
        <form
          class="card"
          data-part="add-member"
          onSubmit={async (event) => {
            event.preventDefault();
            setError(null);
            try {
              await unwrap(session.client.POST('/v1/members', { body: { email: email.trim(), role } }));
              setEmail('');
              setVersion((n) => n + 1);
            } catch (caught) {
              setError(caught);
            }
          }}
        >
          <h2>Add a member</h2>
          <label for="member-email">Email</label>
          <input
            id="member-email"
            type="email"
            required
            value={email}
            onInput={(event) => setEmail((event.target as HTMLInputElement).value)}
          />
          <label for="member-role">Role</label>
          <select
            id="member-role"
            value={role}
            onChange={(event) => setRole((event.target as HTMLSelectElement).value as Role)}
          >
            {(['viewer', 'editor', 'admin', 'owner'] as Role[]).map((item) => (
              <option key={item} value={item}>
                {item}
              </option>
            ))}
          </select>
          <div class="actions">
            <button type="submit" disabled={!email.trim()}>
              Add member
            </button>
          </div>
          <ProblemMessage error={error} />
        </form>
      ) : null}
      <List pages={pages} what="the members">
        {(items) => (
          <Table
            label="members"
            columns={['Email', 'Name', 'Role', 'Managed by', 'Added', '']}
            rows={items.map((member) => ({
              key: member.id,
              cells: [
                member.email,
                member.name ?? '—',
                member.role,
                member.scim_source ? (
                  <span data-part="scim-source" title="Provisioned through SCIM: the directory adds and removes them">
                    {member.scim_source} directory
                  </span>
                ) : (
                  <span class="muted">this workspace</span>
                ),
                when(member.added_at),
                // The API refuses a key's removal of its own member (409 cannot_remove_self) and of a member a
                // directory manages (409 managed_by_directory): nothing to offer.
                member.id === session.workspace.caller.user_id ? (
                  <span class="muted" data-part="you">
                    you
                  </span>
                ) : member.scim_source ? null : allows(session.role, 'removeMember') ? (
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Remove ${member.email}`}
                    onClick={async () => {
                      setError(null);
                      try {
                        await unwrap(
                          session.client.DELETE('/v1/members/{id}', { params: { path: { id: member.id } } }),
                        );
                        setVersion((n) => n + 1);
                      } catch (caught) {
                        setError(caught);
                      }
                    }}
                  >
                    Remove
                  </button>
                ) : null,
              ],
            }))}
          />
        )}
      </List>
    </section>
  );
}

export function ProjectsPage({ session }: { session: Session }) {
  const [version, setVersion] = useState(0);
  const [name, setName] = useState('');
  const [error, setError] = useState<unknown>(null);
  const pages = usePages<Schemas['Project']>(
    async (cursor) =>
      unwrap(session.client.GET('/v1/projects', { params: { query: { limit: 20, ...cursorOf(cursor) } } })) as Promise<
        Page<Schemas['Project']>
      >,
    [version],
  );
  return (
    <section aria-labelledby="projects-title">
      <h1 id="projects-title">Projects</h1>
      {allows(session.role, 'createProject') ? (
        <form
          class="card"
          data-part="create-project"
          onSubmit={async (event) => {
            event.preventDefault();
            setError(null);
            try {
              await unwrap(session.client.POST('/v1/projects', { body: { name: name.trim() } }));
              setName('');
              setVersion((n) => n + 1);
            } catch (caught) {
              setError(caught);
            }
          }}
        >
          <h2>New project</h2>
          <label for="project-name">Name</label>
          <input
            id="project-name"
            required
            maxLength={100}
            value={name}
            onInput={(event) => setName((event.target as HTMLInputElement).value)}
          />
          <div class="actions">
            <button type="submit" disabled={!name.trim()}>
              Create project
            </button>
          </div>
          <ProblemMessage error={error} />
        </form>
      ) : null}
      <List pages={pages} what="the projects">
        {(items) => (
          <Table
            label="projects"
            columns={['Name', 'Default model', 'Created', '']}
            rows={items.map((project) => ({
              key: project.id,
              cells: [
                project.name,
                project.default_model ?? '—',
                when(project.created_at),
                allows(session.role, 'deleteProject') ? (
                  <button
                    type="button"
                    class="secondary"
                    aria-label={`Delete ${project.name}`}
                    onClick={async () => {
                      setError(null);
                      try {
                        await unwrap(
                          session.client.DELETE('/v1/projects/{id}', { params: { path: { id: project.id } } }),
                        );
                        setVersion((n) => n + 1);
                      } catch (caught) {
                        setError(caught);
                      }
                    }}
                  >
                    Delete
                  </button>
                ) : null,
              ],
            }))}
          />
        )}
      </List>
    </section>
  );
}

/**
 * Who made an audited change, as a person reads it: the key's name and role ("prod-server (editor key)"), or the
 * service and what of it ("system: workflow run run_…", from `details.via`).
 */
export function actorLabel(entry: Schemas['AuditLogEntry']): string {
  const { actor } = entry;
  if (actor.type === 'system') {
    const via = (entry.details as Record<string, unknown> | null)?.via;
    return typeof via === 'string' && via ? `system: ${via}` : 'system';
  }
  return `${actor.api_key_name ?? actor.api_key_id ?? 'an API key'}${actor.role ? ` (${actor.role} key)` : ''}`;
}

/** What a change was made to: its name when it has one, its type, and its id (which may wrap anywhere). */
function TargetCell({ target }: { target: Schemas['AuditLogEntry']['target'] | null }) {
  if (!target) return <>—</>;
  return (
    <span data-part="target">
      {target.type}
      {target.display_name ? <> {target.display_name}</> : null}
      <br />
      <code class="id">{target.id}</code>
    </span>
  );
}

/**
 * The names of the workspace's API keys by id, for a key that may list them (admin and above); empty otherwise, and
 * the logs then show the ids. The first 500 keys are enough for a workspace's log page.
 */
function useKeyNames(session: Session): Map<string, string> {
  const [names, setNames] = useState(new Map<string, string>());
  useEffect(() => {
    if (!allows(session.role, 'listApiKeys')) return;
    let cancelled = false;
    (async () => {
      const found = new Map<string, string>();
      let cursor: string | undefined;
      for (let page = 0; page < 5; page++) {
        const list: Page<Schemas['ApiKey']> = (await unwrap(
          session.client.GET('/v1/api-keys', { params: { query: { limit: 100, ...cursorOf(cursor) } } }),
        )) as Page<Schemas['ApiKey']>;
        for (const key of list.data) found.set(key.id, key.name);
        cursor = list.next_cursor ?? undefined;
        if (!cursor) break;
      }
      if (!cancelled) setNames(found);
    })().catch(() => {});
    return () => {
      cancelled = true;
    };
  }, [session]);
  return names;
}

/** An audit action as words ("workflow step approved" for `workflow_step.approved`); the code is the filter's. */
export const actionWords = (action: string) => action.replace(/[._]+/g, ' ');

export function LogsPage({ session }: { session: Session }) {
  const keyNames = useKeyNames(session);
  const [action, setAction] = useState('');
  const [status, setStatus] = useState('');
  const [pathPrefix, setPathPrefix] = useState('');
  const canRead = allows(session.role, 'listAuditLogs');
  const audit = usePages<Schemas['AuditLogEntry']>(
    async (cursor) =>
      (canRead
        ? unwrap(
            session.client.GET('/v1/audit-logs', {
              params: { query: { limit: 20, ...cursorOf(cursor), ...(action ? { action } : {}) } },
            }),
          )
        : { data: [], next_cursor: null }) as Promise<Page<Schemas['AuditLogEntry']>>,
    [action],
  );
  const requests = usePages<Schemas['RequestLogEntry']>(
    async (cursor) =>
      (canRead
        ? unwrap(
            session.client.GET('/v1/request-logs', {
              params: {
                query: {
                  limit: 20,
                  ...cursorOf(cursor),
                  ...(status ? { status } : {}),
                  ...(pathPrefix ? { path_prefix: pathPrefix } : {}),
                },
              },
            }),
          )
        : { data: [], next_cursor: null }) as Promise<Page<Schemas['RequestLogEntry']>>,
    [status, pathPrefix],
  );
  if (!canRead) {
    return (
      <section aria-labelledby="logs-title">
        <h1 id="logs-title">Logs</h1>
        <NotAllowed session={session} what="the logs" />
      </section>
    );
  }
  return (
    <section aria-labelledby="logs-title">
      <h1 id="logs-title">Logs</h1>
      <h2>Audit log</h2>
      <div class="filters">
        <label for="audit-action">Action code</label>
        <input
          id="audit-action"
          placeholder="api_key.created"
          value={action}
          onChange={(event) => setAction((event.target as HTMLInputElement).value.trim())}
        />
      </div>
      <List pages={audit} what="the audit log" columns={4}>
        {(items) => (
          <Table
            label="audit log"
            columns={['When', 'Action', 'Actor', 'Target']}
            rows={items.map((entry) => ({
              key: entry.id,
              cells: [
                when(entry.created_at),
                <span class="word" data-part="action" title={entry.action}>
                  {actionWords(entry.action)}
                </span>,
                <span data-part="actor" title={entry.actor.api_key_id ?? undefined}>
                  {actorLabel(entry)}
                </span>,
                <TargetCell target={entry.target} />,
              ],
            }))}
          />
        )}
      </List>
      <h2>Request log</h2>
      <div class="filters">
        <label for="request-status">Status</label>
        <input
          id="request-status"
          inputMode="numeric"
          placeholder="404"
          value={status}
          onChange={(event) => setStatus((event.target as HTMLInputElement).value.trim())}
        />
        <label for="request-path">Path starts with</label>
        <input
          id="request-path"
          placeholder="/v1/workflows"
          value={pathPrefix}
          onChange={(event) => setPathPrefix((event.target as HTMLInputElement).value.trim())}
        />
      </div>
      <List pages={requests} what="the request log" columns={5}>
        {(items) => (
          <Table
            label="request log"
            columns={['When', 'Request', 'Status', 'Duration', 'Key']}
            rows={items.map((entry) => ({
              key: entry.id,
              cells: [
                when(entry.created_at),
                <span>
                  {entry.method} <code class="path">{entry.path}</code>
                </span>,
                <span>
                  {entry.status}
                  {entry.error_code ? (
                    <>
                      {' '}
                      <code class="word">{entry.error_code}</code>
                    </>
                  ) : null}
                </span>,
                `${entry.duration_ms} ms`,
                entry.api_key_id ? (
                  keyNames.has(entry.api_key_id) ? (
                    <span data-part="key" title={entry.api_key_id}>
                      {keyNames.get(entry.api_key_id)}
                    </span>
                  ) : (
                    <code class="id">{entry.api_key_id}</code>
                  )
                ) : (
                  '—'
                ),
              ],
            }))}
          />
        )}
      </List>
    </section>
  );
}

export function EventsPage({ session }: { session: Session }) {
  const [type, setType] = useState('');
  const [selected, setSelected] = useState<string[]>([]);
  const [note, setNote] = useState('');
  const [error, setError] = useState<unknown>(null);
  const canReplay = allows(session.role, 'replayWebhookEvents');
  const pages = usePages<{ id: string; type: string; created: string; data: unknown }>(
    async (cursor) =>
      unwrap(
        session.client.GET('/v1/events', {
          params: { query: { limit: 20, ...cursorOf(cursor), ...(type ? { type: type as never } : {}) } },
        }),
      ) as Promise<Page<{ id: string; type: string; created: string; data: unknown }>>,
    [type],
  );
  return (
    <section aria-labelledby="events-title">
      <h1 id="events-title">Events</h1>
      <div class="filters">
        <label for="event-type">Type</label>
        <input
          id="event-type"
          placeholder="workflow.run.completed"
          value={type}
          onChange={(event) => setType((event.target as HTMLInputElement).value.trim())}
        />
        {canReplay ? (
          <button
            type="button"
            disabled={selected.length === 0}
            onClick={async () => {
              setError(null);
              setNote('');
              try {
                await unwrap(session.client.POST('/v1/webhooks/replay', { body: { event_ids: selected } }));
                setNote(`${selected.length} event(s) queued again for every subscribed endpoint.`);
                setSelected([]);
              } catch (caught) {
                setError(caught);
              }
            }}
          >
            Replay selected ({selected.length})
          </button>
        ) : null}
      </div>
      {note ? (
        <p role="status" data-part="note">
          {note}
        </p>
      ) : null}
      <ProblemMessage error={error} />
      <List pages={pages} what="the events">
        {(items) => (
          <ul class="deliveries" data-part="events">
            {items.map((event) => (
              <li key={event.id}>
                {canReplay ? (
                  <input
                    type="checkbox"
                    aria-label={`Select ${event.type} ${event.id}`}
                    checked={selected.includes(event.id)}
                    onChange={(change) =>
                      setSelected((current) =>
                        (change.target as HTMLInputElement).checked
                          ? [...current, event.id]
                          : current.filter((id) => id !== event.id),
                      )
                    }
                  />
                ) : null}
                <details>
                  <summary>
                    {event.type} · {when(event.created)} · <code>{event.id}</code>
                  </summary>
                  <pre>{JSON.stringify(event.data, null, 2)}</pre>
                </details>
              </li>
            ))}
          </ul>
        )}
      </List>
    </section>
  );
}

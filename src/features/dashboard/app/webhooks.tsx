// Webhooks: endpoints (create with event types from the catalogue, wildcards included, the signing secret shown
// once; rotate it; send a test event; enable or disable), the deliveries with their filters and every attempt
// (status, response code, duration, response excerpt, the payload pretty-printed), and replay of an event to its
// endpoint or to every subscribed one. Everything here needs an admin or owner key (the contract's minimum role).
import { useEffect, useState } from 'preact/hooks';
import { allows, type Schemas, unwrap } from './api.ts';
import type { Session } from './session.ts';
import { CopyButton, Empty, Loading, MoreButton, NotAllowed, ProblemMessage, usePages, when } from './ui.tsx';

type Endpoint = Schemas['WebhookEndpoint'];
type Delivery = Schemas['WebhookDeliverySummary'];

/** The catalogue's types and their wildcards (`chatbot.*`), then `*`. */
function useEventTypes(session: Session): string[] {
  const [types, setTypes] = useState<string[]>([]);
  useEffect(() => {
    unwrap(session.client.GET('/v1/event-types', {}))
      .then((list) => {
        const names = list.data.map((item) => item.type);
        const wildcards = [...new Set(names.map((name) => `${name.split('.')[0]}.*`))];
        setTypes([...names, ...wildcards, '*']);
      })
      .catch(() => setTypes(['*']));
  }, []);
  return types;
}

function CreateEndpoint({
  session,
  onCreated,
}: {
  session: Session;
  onCreated: (endpoint: Schemas['WebhookEndpointWithSecret']) => void;
}) {
  const types = useEventTypes(session);
  const [url, setUrl] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="card"
      data-part="create-endpoint"
      onSubmit={async (event) => {
        event.preventDefault();
        setBusy(true);
        setError(null);
        try {
          const created = await unwrap<Schemas['WebhookEndpointWithSecret']>(
            session.client.POST('/v1/webhooks/endpoints', {
              body: { url: url.trim(), event_types: chosen } as Schemas['WebhookEndpointCreateRequest'],
            }),
          );
          setUrl('');
          setChosen([]);
          onCreated(created);
        } catch (caught) {
          setError(caught);
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2>New endpoint</h2>
      <label for="endpoint-url">URL</label>
      <input
        id="endpoint-url"
        type="url"
        required
        placeholder="https://example.com/webhooks"
        value={url}
        onInput={(event) => setUrl((event.target as HTMLInputElement).value)}
      />
      <fieldset>
        <legend>Events</legend>
        <div class="choices">
          {types.map((type) => (
            <label key={type} class="choice">
              <input
                type="checkbox"
                checked={chosen.includes(type)}
                onChange={(event) =>
                  setChosen((current) =>
                    (event.target as HTMLInputElement).checked
                      ? [...current, type]
                      : current.filter((item) => item !== type),
                  )
                }
              />
              {type}
            </label>
          ))}
        </div>
      </fieldset>
      <div class="actions">
        <button type="submit" disabled={busy || !url.trim() || chosen.length === 0}>
          {busy ? 'Creating…' : 'Create endpoint'}
        </button>
      </div>
      <ProblemMessage error={error} />
    </form>
  );
}

function EndpointRow({
  session,
  item,
  onChanged,
  onSecret,
  onDeliveries,
}: {
  session: Session;
  item: Endpoint;
  onChanged: () => void;
  onSecret: (title: string, secret: string) => void;
  onDeliveries: () => void;
}) {
  const [error, setError] = useState<unknown>(null);
  const [note, setNote] = useState('');
  /** Runs an action; one that changes the endpoint reloads the list, one that only reports (a test event) says so. */
  const act = async (what: () => Promise<unknown>, done?: string) => {
    setError(null);
    setNote('');
    try {
      await what();
      if (done) setNote(done);
      else onChanged();
    } catch (caught) {
      setError(caught);
    }
  };
  const path = { params: { path: { id: item.id } } };
  return (
    <tr data-endpoint-id={item.id}>
      <td>
        <code>{item.url}</code>
      </td>
      <td>{item.event_types.join(', ')}</td>
      <td data-part="enabled">{item.enabled ? 'enabled' : 'disabled'}</td>
      <td>
        <div class="actions">
          <button
            type="button"
            class="secondary"
            onClick={() =>
              act(
                () => unwrap(session.client.POST('/v1/webhooks/endpoints/{id}/test', { ...path, body: {} })),
                'Test event sent.',
              )
            }
          >
            Send test event
          </button>
          <button
            type="button"
            class="secondary"
            onClick={() =>
              act(() =>
                unwrap(
                  session.client.PATCH('/v1/webhooks/endpoints/{id}', { ...path, body: { enabled: !item.enabled } }),
                ),
              )
            }
          >
            {item.enabled ? 'Disable' : 'Enable'}
          </button>
          <button
            type="button"
            class="secondary"
            onClick={() =>
              act(async () => {
                const rotated = await unwrap<Schemas['WebhookEndpointWithSecret']>(
                  session.client.POST('/v1/webhooks/endpoints/{id}/rotate-secret', path),
                );
                onSecret(`New signing secret of ${item.url}`, rotated.secret);
              })
            }
          >
            Rotate secret
          </button>
          <button type="button" class="secondary" onClick={onDeliveries}>
            Deliveries
          </button>
        </div>
        {note ? (
          <p role="status" data-part="note">
            {note}
          </p>
        ) : null}
        <ProblemMessage error={error} />
      </td>
    </tr>
  );
}

function DeliveryDetail({ session, id }: { session: Session; id: string }) {
  const [delivery, setDelivery] = useState<Schemas['WebhookDelivery'] | null>(null);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [error, setError] = useState<unknown>(null);
  const [note, setNote] = useState('');
  useEffect(() => {
    setDelivery(null);
    unwrap(session.client.GET('/v1/webhooks/deliveries/{id}', { params: { path: { id } } })).then(
      (found) => setDelivery(found as Schemas['WebhookDelivery']),
      setLoadError,
    );
  }, [id]);
  if (loadError) return <ProblemMessage error={loadError} />;
  if (!delivery) return <Loading what="the delivery" />;
  const replay = async (all: boolean) => {
    setError(null);
    try {
      await unwrap(
        session.client.POST('/v1/webhooks/replay', {
          body: { event_ids: [delivery.event_id], ...(all ? {} : { endpoint_id: delivery.endpoint_id }) },
        }),
      );
      // The list is not reloaded: this detail stays open; Refresh shows the new delivery.
      setNote(
        all
          ? 'Queued again for every subscribed endpoint; Refresh shows the new deliveries.'
          : 'Queued again for this endpoint; Refresh shows the new delivery.',
      );
    } catch (caught) {
      setError(caught);
    }
  };
  return (
    <section class="card" aria-label={`Delivery ${delivery.id}`} data-part="delivery">
      <h3>
        {delivery.event_type} <span class="muted">{delivery.status}</span>
      </h3>
      <p class="muted">
        Event <code>{delivery.event_id}</code> to endpoint <code>{delivery.endpoint_id}</code>, {delivery.attempt_count}{' '}
        attempt(s)
        {delivery.next_attempt_at ? `, next at ${when(delivery.next_attempt_at)}` : ''}.
      </p>
      <div class="actions">
        <button type="button" onClick={() => replay(false)}>
          Replay to this endpoint
        </button>
        <button type="button" class="secondary" onClick={() => replay(true)}>
          Replay to all endpoints
        </button>
      </div>
      {note ? (
        <p role="status" data-part="note">
          {note}
        </p>
      ) : null}
      <ProblemMessage error={error} />
      <h4>Attempts</h4>
      {delivery.attempts.length === 0 ? (
        <Empty>No attempt yet.</Empty>
      ) : (
        <ol data-part="attempts">
          {delivery.attempts.map((attempt) => (
            <li key={attempt.number}>
              #{attempt.number} {attempt.status} · {attempt.response_status_code ?? 'no answer'} ·{' '}
              {attempt.duration_ms ?? '—'} ms · {when(attempt.started_at)} ({attempt.trigger})
              {attempt.error ? <span class="problem-inline"> {attempt.error}</span> : null}
              {attempt.response_body ? <pre class="excerpt">{attempt.response_body}</pre> : null}
            </li>
          ))}
        </ol>
      )}
      <h4>Payload</h4>
      <pre data-part="payload">{JSON.stringify(delivery.payload, null, 2)}</pre>
    </section>
  );
}

function Deliveries({
  session,
  endpointId,
  version,
}: {
  session: Session;
  endpointId: string | null;
  version: number;
}) {
  const [status, setStatus] = useState('');
  const [selected, setSelected] = useState<string | null>(null);
  const [refresh, setRefresh] = useState(0);
  const pages = usePages<Delivery>(
    async (cursor) =>
      unwrap(
        session.client.GET('/v1/webhooks/deliveries', {
          params: {
            query: {
              limit: 20,
              ...(cursor ? { cursor } : {}),
              ...(endpointId ? { endpoint_id: endpointId } : {}),
              ...(status ? { status: status as Delivery['status'] } : {}),
            },
          },
        }),
      ),
    [endpointId, status, version, refresh],
  );
  return (
    <section aria-labelledby="deliveries-title">
      <h2 id="deliveries-title">Deliveries{endpointId ? ' of the endpoint' : ''}</h2>
      <div class="filters">
        <label for="delivery-status">Status</label>
        <select
          id="delivery-status"
          value={status}
          onChange={(event) => setStatus((event.target as HTMLSelectElement).value)}
        >
          <option value="">any</option>
          {['pending', 'delivered', 'failed'].map((item) => (
            <option key={item} value={item}>
              {item}
            </option>
          ))}
        </select>
        <button type="button" class="secondary" onClick={() => setRefresh((n) => n + 1)}>
          Refresh
        </button>
      </div>
      <ProblemMessage error={pages.error} />
      {pages.items === null ? (
        <Loading what="the deliveries" />
      ) : pages.items.length === 0 ? (
        <Empty>No deliveries yet.</Empty>
      ) : (
        <ul class="deliveries" data-part="deliveries">
          {pages.items.map((item) => (
            <li key={item.id}>
              <button
                type="button"
                class="link"
                aria-expanded={selected === item.id}
                onClick={() => setSelected(selected === item.id ? null : item.id)}
              >
                {item.event_type} · {item.status} · {item.attempt_count} attempt(s) · {when(item.created_at)}
                {/* `manual` is true for a test delivery too; only a manual delivery that is not a test is a replay. */}
                {item.test ? ' · test' : item.manual ? ' · replay' : ''}
              </button>
              {selected === item.id ? <DeliveryDetail session={session} id={item.id} /> : null}
            </li>
          ))}
        </ul>
      )}
      <MoreButton more={pages.more} busy={pages.busy} />
    </section>
  );
}

export function WebhooksPage({ session }: { session: Session }) {
  const [version, setVersion] = useState(0);
  const [secret, setSecret] = useState<{ title: string; secret: string } | null>(null);
  const [endpointId, setEndpointId] = useState<string | null>(null);
  const canList = allows(session.role, 'listWebhookEndpoints');
  const pages = usePages<Endpoint>(
    async (cursor) =>
      canList
        ? unwrap(
            session.client.GET('/v1/webhooks/endpoints', {
              params: { query: { limit: 20, ...(cursor ? { cursor } : {}) } },
            }),
          )
        : { data: [], next_cursor: null },
    [version],
  );
  if (!canList) {
    return (
      <section aria-labelledby="webhooks-title">
        <h1 id="webhooks-title">Webhooks</h1>
        <NotAllowed session={session} what="the workspace's webhooks" />
      </section>
    );
  }
  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      {secret ? (
        <div class="secret" role="region" aria-label={secret.title} data-part="secret">
          <h2>{secret.title}</h2>
          <p class="warning">
            Copy this signing secret now: it is shown only once. Verify each delivery's Service-Signature with it.
          </p>
          <p>
            <code data-part="secret-value">{secret.secret}</code>
          </p>
          <div class="actions">
            <CopyButton text={secret.secret} label="Copy secret" />
            <button type="button" onClick={() => setSecret(null)}>
              I have copied it
            </button>
          </div>
        </div>
      ) : null}
      <CreateEndpoint
        session={session}
        onCreated={(created) => {
          setSecret({ title: `Signing secret of ${created.url}`, secret: created.secret });
          setVersion((n) => n + 1);
        }}
      />
      <ProblemMessage error={pages.error} />
      {pages.items === null ? (
        <Loading what="the endpoints" />
      ) : pages.items.length === 0 ? (
        <Empty>No endpoints yet: add one above to receive events.</Empty>
      ) : (
        <div class="table" tabIndex={0} role="region" aria-label="Webhook endpoints">
          <table data-part="endpoints">
            <caption class="visually-hidden">Webhook endpoints</caption>
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Events</th>
                <th scope="col">State</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {pages.items.map((item) => (
                <EndpointRow
                  key={item.id}
                  session={session}
                  item={item}
                  onChanged={() => setVersion((n) => n + 1)}
                  onSecret={(title, value) => setSecret({ title, secret: value })}
                  onDeliveries={() => setEndpointId(item.id)}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <MoreButton more={pages.more} busy={pages.busy} />
      <Deliveries session={session} endpointId={endpointId} version={version} />
    </section>
  );
}

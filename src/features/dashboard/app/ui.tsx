// Small pieces the pages share: a problem shown as it came, a page a role may not see, a secret shown once, loading states (a line, a table's skeleton), empty states, a page of a list with a
// "more" button, copy to clipboard, dates.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, type Problem, type Role } from './api.ts';
import type { Session } from './session.ts';

export function ProblemMessage({ error }: { error: unknown }) {
  if (!error) return null;
  const problem: Partial<Problem> =
    error instanceof ApiError
      ? error.problem
      : { title: 'Something went wrong', detail: String((error as Error)?.message ?? error) };
  return (
    <div class="problem" role="alert" data-part="problem">
      <strong>{problem.title}</strong>
      {problem.detail ? <span> {problem.detail}</span> : null}
      {problem.errors?.length ? (
        <ul>
          {problem.errors.map((item) => (
            <li key={item.pointer}>
              <code>{item.pointer}</code> {item.detail}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status" data-part="loading">
      Loading {what}…
    </p>
  );
}

/**
 * A list that is on its way: the shape of its table at once (grey bars, hidden from assistive technology), and the
 * "Loading …" line for screen readers only, so the page does not sit on a sentence while the answer comes.
 */
export function Skeleton({ what, columns, rows = 5 }: { what: string; columns: number; rows?: number }) {
  return (
    <div class="skeleton" data-part="skeleton">
      <p class="visually-hidden" role="status" data-part="loading">
        Loading {what}…
      </p>
      <table aria-hidden="true">
        <tbody>
          {Array.from({ length: rows }, (_, row) => (
            <tr key={row}>
              {Array.from({ length: columns }, (_, column) => (
                <td key={column}>
                  <span class="bar" />
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return (
    <p class="empty" data-part="empty">
      {children}
    </p>
  );
}

export const when = (value: string | null | undefined) => (value ? new Date(value).toLocaleString() : '—');

export function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      class="secondary"
      onClick={async () => {
        await navigator.clipboard?.writeText(text).catch(() => {});
        setCopied(true);
      }}
    >
      {copied ? 'Copied' : label}
    </button>
  );
}

/** A list read page by page (`next_cursor`): the first page on mount and whenever `deps` change, more on demand. */
export function usePages<T>(
  load: (cursor: string | undefined) => Promise<{ data: T[]; next_cursor: string | null }>,
  deps: unknown[],
) {
  const [items, setItems] = useState<T[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const fetchPage = async (from: string | undefined, replace: boolean) => {
    setBusy(true);
    setError(null);
    try {
      const page = await load(from);
      setItems((current) => (replace || !current ? page.data : [...current, ...page.data]));
      setCursor(page.next_cursor);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  useEffect(() => {
    setItems(null);
    void fetchPage(undefined, true);
  }, deps);
  return {
    items,
    error,
    busy,
    more: cursor ? () => fetchPage(cursor, false) : null,
    reload: () => fetchPage(undefined, true),
  };
}

export function MoreButton({ more, busy }: { more: (() => void) | null; busy: boolean }) {
  if (!more) return null;
  return (
    <button type="button" class="secondary" disabled={busy} onClick={more} data-part="more">
      {busy ? 'Loading…' : 'Load more'}
    </button>
  );
}

/** A secret the API showed once: kept on screen until the person says they have it. */
export function SecretOnce({
  title,
  secret,
  note,
  children,
  onDone,
}: {
  title: string;
  secret: string;
  note?: string;
  /** What goes with the secret (where to enter it), shown under it. */
  children?: ComponentChildren;
  onDone: () => void;
}) {
  return (
    <div class="secret" role="region" aria-label={title} data-part="secret">
      <h2>{title}</h2>
      <p class="warning">Copy this secret now: it is shown only once and cannot be read again.</p>
      <p>
        <code data-part="secret-value">{secret}</code>
      </p>
      {note ? <p class="muted">{note}</p> : null}
      {children}
      <div class="actions">
        <CopyButton text={secret} label="Copy secret" />
        <button type="button" onClick={onDone}>
          I have copied it
        </button>
      </div>
    </div>
  );
}

/** What someone whose role is below a page's minimum (owner) sees instead of it. */
export function OwnersOnly({ role, what }: { role: Role; what: string }) {
  return (
    <p data-part="not-allowed">
      Only owners manage {what}; you are signed in as {/^[aeiou]/.test(role) ? 'an' : 'a'} {role}. Ask an owner of the
      workspace, or sign in as one.
    </p>
  );
}

/** What a page shows to a caller whose role may not use it: a signed-in person is told of their role, not of a key. */
export function NotAllowed({
  session,
  what,
  verb = 'see',
  roles = 'an admin or owner',
}: {
  session: Session;
  what: string;
  verb?: string;
  /** The roles that may, as a phrase: `an admin or owner`. */
  roles?: string;
}) {
  const key = `${/^[aeiou]/.test(session.role) ? 'An' : 'A'} ${session.role} key`;
  return (
    <p data-part="not-allowed">
      {session.person
        ? `Your role (${session.role}) cannot ${verb} ${what}; ${roles} can.`
        : `${key} cannot ${verb} ${what}; sign in with ${roles} key.`}
    </p>
  );
}

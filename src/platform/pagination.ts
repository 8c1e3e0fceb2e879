// Cursor pagination (DESIGN.md): newest first, `limit` 1–100, an opaque cursor, `next_cursor` and a `Link` header.
// Ids are time-sortable, so "older than the last id of the page" is the next page of most tables; a table ordered
// by another time column (members by `added_at`) passes it as `at` and the id breaks ties.
import type { SelectQueryBuilder } from 'kysely';
import { validationFailed } from './problems.ts';

export interface Position {
  id: string;
  at?: string;
}

export interface PageRequest {
  limit: number;
  /** Return items after this one in newest-first order. */
  after: Position | undefined;
}

const CURSOR_VERSION = 1;

export function encodeCursor(position: Position): string {
  return Buffer.from(JSON.stringify({ v: CURSOR_VERSION, ...position })).toString('base64url');
}

/**
 * A cursor is opaque but not trusted: its decoded id and time go into the list's query. Ours hold an id or an ISO
 * timestamp, short visible ASCII; anything else (U+0000, which PostgreSQL refuses in a text parameter) is refused here,
 * before it reaches a query.
 */
function isPositionPart(value: unknown): value is string {
  return typeof value === 'string' && /^[\x21-\x7e]{1,64}$/.test(value);
}

export function pageRequest(query: { limit?: number; cursor?: string }): PageRequest {
  const limit = query.limit ?? 20;
  if (query.cursor === undefined) return { limit, after: undefined };
  try {
    const decoded = JSON.parse(Buffer.from(query.cursor, 'base64url').toString('utf8')) as {
      v?: unknown;
      id?: unknown;
      at?: unknown;
    };
    if (
      decoded.v === CURSOR_VERSION &&
      isPositionPart(decoded.id) &&
      (decoded.at === undefined || isPositionPart(decoded.at))
    ) {
      return { limit, after: { id: decoded.id, ...(decoded.at === undefined ? {} : { at: decoded.at }) } };
    }
  } catch {
    // falls through to the validation problem
  }
  throw validationFailed([
    {
      pointer: 'query/cursor',
      detail: 'is not a cursor this API returned; pass the `next_cursor` of the previous page as it is',
    },
  ]);
}

/** Adds the position condition, the order and the limit (+1, to learn whether another page follows) to a list query. */
export function paginate<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  columns: { id: string; at?: string },
  page: PageRequest,
): SelectQueryBuilder<DB, TB, O> {
  const id = columns.id as never;
  const at = columns.at as never;
  let q = columns.at ? query.orderBy(at, 'desc').orderBy(id, 'desc') : query.orderBy(id, 'desc');
  q = q.limit(page.limit + 1);
  const after = page.after;
  if (after && columns.at && after.at !== undefined) {
    q = q.where((eb) =>
      eb.or([eb(at, '<', after.at as never), eb.and([eb(at, '=', after.at as never), eb(id, '<', after.id as never)])]),
    );
  } else if (after) {
    q = q.where(id, '<', after.id as never);
  }
  return q;
}

/** Percent-encodes every reserved character, `!'()*` included (which encodeURIComponent leaves as they are). */
function encodeQueryComponent(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export interface Page<T> {
  body: { data: T[]; next_cursor: string | null };
  headers: { Link?: string };
}

/**
 * Turns the rows of `paginate` into the list body and its `Link` header. `requestUrl` is the public URL of this
 * request; the next page's URL keeps its filters and replaces the cursor.
 */
export function toPage<R, T>(
  rows: R[],
  page: PageRequest,
  positionOf: (row: R) => Position,
  present: (row: R) => T,
  requestUrl: URL,
): Page<T> {
  const more = rows.length > page.limit;
  const pageRows = more ? rows.slice(0, page.limit) : rows;
  const nextCursor = more ? encodeCursor(positionOf(pageRows[pageRows.length - 1]!)) : null;
  const headers: { Link?: string } = {};
  if (nextCursor) {
    const next = new URL(requestUrl);
    const params = new URLSearchParams(next.search);
    params.set('cursor', nextCursor);
    // Not `searchParams.set`: URLSearchParams leaves `*` unencoded (`action=api_key.*`), and the contract's query
    // parameters do not allow reserved characters, so the link would be answered 422.
    next.search = [...params]
      .map(([name, value]) => `${encodeQueryComponent(name)}=${encodeQueryComponent(value)}`)
      .join('&');
    headers.Link = `<${next.toString()}>; rel="next"`;
  }
  return { body: { data: pageRows.map(present), next_cursor: nextCursor }, headers };
}

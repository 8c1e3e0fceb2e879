// Calls of every implemented operation with the contract suite's success request (test/support/contract-fixtures.ts:
// the fixtures create what an operation needs through the API), each request timed: from being sent to the response
// read whole (to the headers for a stream). Shared by the benchmarks of first calls.
import { performance } from 'node:perf_hooks';
import { type OperationId, operationTable } from '../generated/operations.ts';
import { notImplemented } from '../src/handlers.ts';
import { embedHeaders, type ImplementedOperationId, successRequest } from '../test/support/contract-fixtures.ts';

export const operations = (Object.keys(operationTable) as OperationId[]).filter(
  (id): id is ImplementedOperationId => !(notImplemented as readonly string[]).includes(id),
);

const matchers = operations.map((id) => {
  const op = operationTable[id];
  const pattern = new RegExp(`^${op.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
  return { id, method: op.method.toUpperCase(), pattern };
});

function operationOf(method: string, pathname: string): OperationId | undefined {
  return matchers.find((m) => m.method === method && m.pattern.test(pathname))?.id;
}

/** The times of the requests this process sends to `serverUrl`, by operation, in the order they were sent. */
export const timings = { serverUrl: '', byOperation: new Map<OperationId, number[]>() };

const plainFetch = globalThis.fetch;
globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
  const request = new Request(input, init);
  const url = new URL(request.url);
  const started = performance.now();
  const response = await plainFetch(request);
  if (!timings.serverUrl || !request.url.startsWith(timings.serverUrl)) return response;
  const id = operationOf(request.method, url.pathname);
  if (!id) return response;
  const record = (ms: number) => timings.byOperation.set(id, [...(timings.byOperation.get(id) ?? []), ms]);
  const streamed = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  if (streamed) {
    record(performance.now() - started);
    return response;
  }
  const body = await response.arrayBuffer();
  record(performance.now() - started);
  return new Response(body.byteLength > 0 ? body : null, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
};

/** A signed-in person's session on the target: its cookie and CSRF token, and its id. */
export interface BenchSession {
  id: string;
  cookie: string;
  csrfToken: string;
}

/**
 * The operations of the current session, made with a session (cookie and CSRF token) rather than the key; and
 * revokeSession, whose fixture names the session to end (`sessions.revocable`).
 */
export const SESSION_OPERATIONS = new Set<OperationId>(['getCurrentSession', 'deleteCurrentSession', 'revokeSession']);

/** The owner signed in with a sign-in link, as a browser would: the link's POST, then GET /v1/session. */
export async function signIn(baseUrl: string, linkUrl: string): Promise<BenchSession> {
  const signedIn = await plainFetch(`${baseUrl}/sign-in/link`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: new URL(linkUrl).searchParams.get('token')! }).toString(),
  });
  const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0]!;
  if (signedIn.status !== 303 || !cookie) throw new Error(`signing in with a link answered ${signedIn.status}`);
  const session = await plainFetch(`${baseUrl}/v1/session`, { headers: { Cookie: cookie } });
  if (session.status !== 200) throw new Error(`GET /v1/session answered ${session.status}: ${await session.text()}`);
  const current = (await session.json()) as { id: string; csrf_token: string };
  return { id: current.id, cookie, csrfToken: current.csrf_token };
}

/**
 * Sends the operation's success request once; resolves with the status. `session` makes a call of the current
 * session's operations with that session instead of the key, and is the session revokeSession ends.
 */
export async function callOnce(
  id: ImplementedOperationId,
  target: { baseUrl: string; apiKey: string },
  session?: BenchSession,
): Promise<number> {
  const op = operationTable[id];
  const request = await successRequest(id, session ? { ...target, sessions: { revocable: session } } : target);
  let path = op.path as string;
  for (const [name, value] of Object.entries(request.path)) path = path.replace(`{${name}}`, encodeURIComponent(value));
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(request.query)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) query.append(name, String(item));
  }
  const headers: Record<string, string> = {
    ...request.header,
    Accept: 'application/json, application/problem+json, text/event-stream, text/html, */*',
  };
  const bySession = session && id !== 'revokeSession';
  if (bySession) Object.assign(headers, { Cookie: session.cookie, 'X-CSRF-Token': session.csrfToken });
  else if (op.auth === 'bearer') headers.Authorization = `Bearer ${target.apiKey}`;
  if (op.auth === 'embedKey') Object.assign(headers, await embedHeaders(target));
  let body: string | undefined;
  if (request.body !== undefined) {
    headers['Content-Type'] = request.contentType ?? 'application/json';
    body = typeof request.body === 'string' ? request.body : JSON.stringify(request.body);
  }
  const response = await fetch(`${target.baseUrl}${path}${query.size > 0 ? `?${query}` : ''}`, {
    method: op.method.toUpperCase(),
    headers,
    body,
  });
  await response.arrayBuffer();
  return response.status;
}

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

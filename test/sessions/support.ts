// Signing a person in as a browser does, without the browser: a one-time link (made as `login-link` makes it), its
// page, the form's POST, and the session cookie from the answer.
import { expect } from 'vitest';
import { createSignInLink } from '../../src/features/sessions/index.ts';
import type { Answer, TestServer } from '../support/server.ts';

/** A new sign-in link of the member with this email; its URL points at the test server. */
export async function signInLink(server: TestServer, email: string, returnTo: string | null = null): Promise<string> {
  const link = await createSignInLink(server.platform.db, {
    workspaceId: server.workspaceId,
    email,
    returnTo,
    baseUrl: server.url,
    now: server.platform.clock.now(),
  });
  if (!link) throw new Error(`${email} is not a member`);
  return link.url;
}

/** Posts the link's form as the browser would (from the server's own page). */
export function redeem(server: TestServer, token: string, origin = server.url): Promise<Response> {
  return fetch(`${server.url}/sign-in/link`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: origin },
    body: new URLSearchParams({ token }).toString(),
  });
}

export interface SignedIn {
  cookie: string;
  csrf: string;
  sessionId: string;
  /** A call with the session cookie (and the CSRF token unless `csrf` says otherwise), no key. */
  call(
    method: string,
    path: string,
    options?: { body?: unknown; csrf?: string | null; headers?: Record<string, string> },
  ): Promise<Answer>;
}

export function sessionCaller(server: TestServer, cookie: string, csrf: string) {
  return async (
    method: string,
    path: string,
    options: { body?: unknown; csrf?: string | null; headers?: Record<string, string> } = {},
  ): Promise<Answer> => {
    const headers: Record<string, string> = { Cookie: cookie, ...options.headers };
    const token = options.csrf === undefined ? csrf : options.csrf;
    if (token !== null) headers['X-CSRF-Token'] = token;
    return server.call(method, path, { key: null, body: options.body, headers });
  };
}

/** Signs the member in with a fresh link; the session's cookie, CSRF token and a caller that uses them. */
export async function signIn(server: TestServer, email: string): Promise<SignedIn> {
  const url = new URL(await signInLink(server, email));
  const answer = await redeem(server, url.searchParams.get('token')!);
  expect(answer.status).toBe(303);
  const setCookie = answer.headers.get('set-cookie') ?? '';
  const cookie = setCookie.split(';')[0]!;
  expect(cookie).toMatch(/^cs_session=cs_sess_/);
  const current = await server.call('GET', '/v1/session', { key: null, headers: { Cookie: cookie } });
  expect(current.status, current.text).toBe(200);
  const csrf = current.body.csrf_token as string;
  return { cookie, csrf, sessionId: current.body.id, call: sessionCaller(server, cookie, csrf) };
}

/** Adds a member with this role through the API. */
export async function addMember(server: TestServer, email: string, role: string): Promise<string> {
  const added = await server.call('POST', '/v1/members', { body: { email, role } });
  expect(added.status, added.text).toBe(201);
  return added.body.id as string;
}

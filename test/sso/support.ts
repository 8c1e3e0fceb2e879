// What the single sign-on tests share: connections made through the API, a sign-in's first redirect, and the
// workspace's members and member events as the API shows them.
import { expect } from 'vitest';
import type { Answer, TestServer } from '../support/server.ts';

export async function createConnection(server: TestServer, body: Record<string, unknown>) {
  const answer = await server.call('POST', '/v1/sso-connections', { body });
  expect(answer.status, answer.text).toBe(201);
  return answer.body as {
    id: string;
    start_url: string;
    oidc: { redirect_uri: string } | null;
    saml: { sp_entity_id: string; acs_url: string; sp_metadata_url: string } | null;
  };
}

/** A sign-in's start: the redirect to the identity provider and the cookies set with it. */
export async function start(url: string): Promise<{ location: string; cookie: string }> {
  const answer = await fetch(url, { redirect: 'manual' });
  expect(answer.status, await answer.clone().text()).toBe(302);
  const cookie = (answer.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  return { location: answer.headers.get('location')!, cookie };
}

export async function members(server: TestServer) {
  const answer = await server.call('GET', '/v1/members?limit=100');
  expect(answer.status).toBe(200);
  return answer.body.data as Array<{ id: string; email: string; role: string; scim_source: string | null }>;
}

export async function memberAddedEvents(server: TestServer) {
  const answer = await server.call('GET', '/v1/events?type=workspace.member.added&limit=100');
  expect(answer.status, answer.text).toBe(200);
  return answer.body.data as Array<{ data: { email: string; role: string; scim_source: string | null } }>;
}

/** A refusal of the sign-in pages: a problem document with the code. */
export async function expectProblem(response: Response | Answer, status: number, code: string) {
  const body = response instanceof Response ? await response.json() : response.body;
  expect(response.status, JSON.stringify(body)).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(body.code).toBe(code);
  return body as { detail: string; code: string };
}

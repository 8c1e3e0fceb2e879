// The sign-in pages under /sso as browsers and programs meet them: a refusal is a readable page for a browser (same
// status, the problem's code, a way back to the sign-in) and the problem document for a client that asks for JSON;
// each client IP has a budget of requests a minute (429 with Retry-After, another address unaffected); and sign-ins
// that expired are pruned from `sso_flows`.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { features } from '../../src/features/index.ts';
import { SSO_REQUESTS_PER_IP } from '../../src/features/sso/budget.ts';
import { ManualClock } from '../../src/platform/clock.ts';
import { pruneExpired } from '../../src/platform/retention.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { type OidcTestProvider, startOidcProvider } from './identity-providers.ts';
import { createConnection, expectProblem, start } from './support.ts';

/** What Chromium sends when it navigates to a page. */
const BROWSER_ACCEPT =
  'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7';

async function expectRefusalPage(answer: Response, status: number, code: string): Promise<string> {
  const html = await answer.text();
  expect(answer.status, html).toBe(status);
  expect(answer.headers.get('content-type')).toMatch(/^text\/html/);
  expect(answer.headers.get('content-security-policy')).toContain("default-src 'none'");
  expect(html).toContain(`<code data-part="code">${code}</code>`);
  expect(html).toContain('<a href="/dashboard" data-part="sign-in">Back to sign-in</a>');
  expect(html).not.toContain('<script');
  return html;
}

describe.each(databaseKinds)('the single sign-on pages on %s', (database) => {
  let server: TestServer;
  let provider: OidcTestProvider;
  let connection: Awaited<ReturnType<typeof createConnection>>;
  const clock = new ManualClock();
  beforeAll(async () => {
    server = await startTestServer({
      database,
      clock,
      env: { WEBHOOKS_ALLOW_LOOPBACK: 'true', TRUST_PROXY: 'loopback' },
    });
    provider = await startOidcProvider(server.url);
    connection = await createConnection(server, {
      name: 'Test provider',
      protocol: 'oidc',
      domains: ['acme.example'],
      oidc: { issuer: provider.issuer, client_id: provider.clientId, client_secret: provider.clientSecret },
    });
  });
  afterAll(async () => {
    await Promise.all([server?.close(), provider?.close()]);
  });

  test('a refusal is a page for a browser and a problem document for a client that asks for JSON', async () => {
    const callback = `${connection.oidc!.redirect_uri}?code=abc&state=not-a-state-of-ours`;
    const page = await expectRefusalPage(
      await fetch(callback, { headers: { Accept: BROWSER_ACCEPT } }),
      400,
      'sso_state_invalid',
    );
    expect(page).toContain('<h1>The sign-in is unknown to this browser</h1>');
    expect(page).toContain('start the sign-in again');
    for (const accept of ['application/json', 'application/problem+json', '*/*']) {
      await expectProblem(await fetch(callback, { headers: { Accept: accept } }), 400, 'sso_state_invalid');
    }

    // An expired sign-in, in the browser that started it.
    const late = await start(connection.start_url);
    const state = new URL(late.location).searchParams.get('state')!;
    clock.advance(11 * 60_000);
    const expired = await fetch(`${connection.oidc!.redirect_uri}?code=abc&state=${state}`, {
      headers: { Accept: BROWSER_ACCEPT, Cookie: late.cookie },
    });
    expect(await expectRefusalPage(expired, 400, 'sso_state_expired')).toContain('expired after 10 minutes');

    // A start by email for a domain without a connection.
    const unknown = `${server.url}/sso/start?workspace_id=${server.workspaceId}&email=ada@elsewhere.example`;
    await expectRefusalPage(await fetch(unknown, { headers: { Accept: BROWSER_ACCEPT } }), 404, 'not_found');
    await expectProblem(await fetch(unknown), 404, 'not_found');
    // An address under /sso that names no page.
    const nowhere = `${server.url}/sso/${connection.id}/elsewhere`;
    await expectRefusalPage(await fetch(nowhere, { headers: { Accept: BROWSER_ACCEPT } }), 404, 'not_found');
    await expectProblem(await fetch(nowhere), 404, 'not_found');
  });

  test('the pages answer each client IP a budget of requests a minute; over it, 429 with Retry-After', async () => {
    const from = (ip: string, accept = 'application/json') =>
      fetch(`${connection.start_url}`, { redirect: 'manual', headers: { 'X-Forwarded-For': ip, Accept: accept } });
    let refused: Response | undefined;
    for (let i = 0; i <= SSO_REQUESTS_PER_IP.points && !refused; i++) {
      const answer = await from('203.0.113.50');
      if (answer.status === 429) refused = answer;
      else expect(answer.status).toBe(302);
    }
    expect(refused).toBeDefined();
    const problem = await expectProblem(refused!, 429, 'rate_limited');
    expect(problem.detail).toContain('from this address');
    expect(refused!.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(refused!.headers.get('ratelimit-policy')).toBe(
      `"default";q=${SSO_REQUESTS_PER_IP.points};w=${SSO_REQUESTS_PER_IP.duration}`,
    );
    // A browser over the budget reads it as a page, with the same Retry-After.
    const page = await from('203.0.113.50', BROWSER_ACCEPT);
    await expectRefusalPage(page, 429, 'rate_limited');
    expect(page.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    // Another address has its own budget.
    expect((await from('198.51.100.60')).status).toBe(302);
  });

  test('sign-ins that expired are pruned from sso_flows; those under way are kept', async () => {
    const headers = { 'X-Forwarded-For': '192.0.2.70' };
    const old = await fetch(connection.start_url, { redirect: 'manual', headers });
    expect(old.status).toBe(302);
    const oldState = new URL(old.headers.get('location')!).searchParams.get('state')!;
    clock.advance(25 * 60_000);
    const fresh = await fetch(connection.start_url, { redirect: 'manual', headers });
    const freshState = new URL(fresh.headers.get('location')!).searchParams.get('state')!;
    await pruneExpired(server.platform.db, clock.now(), features);
    const left = await server.platform.db
      .selectFrom('sso_flows')
      .select('id')
      .where('id', 'in', [oldState, freshState])
      .execute();
    expect(left.map((row) => row.id)).toEqual([freshState]);
  });
});

// Single sign-on through OpenID Connect against oidc-provider on loopback: connections managed by owners (the issuer
// discovered when given, the secret never returned, audited), a person signed in in Chromium through the provider's
// login and consent pages to the dashboard (a new member just in time, with workspace.member.added; the same member
// the next time), and the callbacks refused: an unknown state, another browser's, an expired one, one used twice.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/platform/clock.ts';
import { signInLink } from '../sessions/support.ts';
import { hasChromium, launchChromium } from '../support/chromium.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { type OidcTestProvider, startOidcProvider } from './identity-providers.ts';
import { createConnection, expectProblem, memberAddedEvents, members, start } from './support.ts';

const LOOPBACK = { WEBHOOKS_ALLOW_LOOPBACK: 'true' };

describe.each(databaseKinds)('OpenID Connect connections on %s', (database) => {
  let server: TestServer;
  let provider: OidcTestProvider;
  const clock = new ManualClock();
  beforeAll(async () => {
    server = await startTestServer({ database, clock, env: LOOPBACK });
    provider = await startOidcProvider(server.url);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), provider?.close()]);
  });

  const oidcBody = (extra: Record<string, unknown> = {}) => ({
    name: 'Test provider',
    protocol: 'oidc',
    domains: ['acme.example'],
    oidc: { issuer: provider.issuer, client_id: provider.clientId, client_secret: provider.clientSecret },
    ...extra,
  });

  test('an owner creates, reads, lists, updates and deletes a connection; the secret is never returned', async () => {
    const created = await createConnection(server, oidcBody({ default_role: 'editor' }));
    expect(created).toMatchObject({
      object: 'sso_connection',
      protocol: 'oidc',
      default_role: 'editor',
      domains: ['acme.example'],
      required: false,
      start_url: `${server.url}/sso/${created.id}/start`,
      oidc: {
        issuer: provider.issuer,
        client_id: 'content-service',
        redirect_uri: `${server.url}/sso/${created.id}/callback`,
      },
      saml: null,
    });
    expect(JSON.stringify(created)).not.toContain(provider.clientSecret);
    const read = await server.call('GET', `/v1/sso-connections/${created.id}`);
    expect(read.body).toEqual(created);
    const list = await server.call('GET', '/v1/sso-connections');
    expect(list.body.data.map((c: { id: string }) => c.id)).toContain(created.id);
    expect(list.text).not.toContain(provider.clientSecret);

    const updated = await server.call('PATCH', `/v1/sso-connections/${created.id}`, {
      body: { default_role: 'viewer', domains: ['acme.example', 'acme-labs.example'], required: true },
    });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toMatchObject({
      default_role: 'viewer',
      domains: ['acme-labs.example', 'acme.example'],
      required: true,
    });

    const other = await server.call('POST', '/v1/sso-connections', {
      body: oidcBody({ name: 'Another', domains: ['acme-labs.example'] }),
    });
    await expectProblem(other, 409, 'sso_domain_taken');

    const deleted = await server.call('DELETE', `/v1/sso-connections/${created.id}`);
    expect(deleted.status).toBe(204);
    expect((await server.call('GET', `/v1/sso-connections/${created.id}`)).status).toBe(404);
    const audit = await server.call('GET', `/v1/audit-logs?target_id=${created.id}`);
    expect(audit.body.data.map((entry: { action: string }) => entry.action).sort()).toEqual([
      'sso_connection.created',
      'sso_connection.deleted',
      'sso_connection.updated',
    ]);
    expect(audit.text).not.toContain(provider.clientSecret);
  });

  test('only owners manage connections', async () => {
    const admin = await server.createKey('admin');
    const answer = await server.call('GET', '/v1/sso-connections', { key: admin.secret });
    await expectProblem(answer, 403, 'insufficient_role');
  });

  test('refused when given: an issuer without discovery, settings of the other protocol, required without a domain', async () => {
    const closed = await server.call('POST', '/v1/sso-connections', {
      body: oidcBody({ domains: [], oidc: { issuer: 'http://127.0.0.1:9', client_id: 'x', client_secret: 'y' } }),
    });
    const problem = await expectProblem(closed, 422, 'sso_discovery_failed');
    expect(closed.body.errors[0].pointer).toBe('/oidc/issuer');
    expect(problem.detail).toContain('discovery document');
    const mixed = await server.call('POST', '/v1/sso-connections', {
      body: oidcBody({ domains: [], saml: { idp_metadata_url: 'https://idp.example/metadata' } }),
    });
    await expectProblem(mixed, 422, 'validation_failed');
    expect(mixed.body.errors[0].pointer).toBe('/saml');
    const required = await server.call('POST', '/v1/sso-connections', {
      body: oidcBody({ domains: [], required: true }),
    });
    await expectProblem(required, 422, 'validation_failed');
    expect(required.body.errors[0].pointer).toBe('/required');
  });

  test('callbacks are refused for an unknown state, another browser, an expired state, and a second use', async () => {
    const connection = await createConnection(server, oidcBody({ domains: ['refused.example'] }));
    const callback = connection.oidc!.redirect_uri;

    const unknown = await fetch(`${callback}?code=abc&state=not-a-state-of-ours`, { redirect: 'manual' });
    const unknownProblem = await expectProblem(unknown, 400, 'sso_state_invalid');
    expect(unknownProblem.detail).toContain('start the sign-in again');

    const first = await start(connection.start_url);
    const authorize = new URL(first.location);
    expect(authorize.origin).toBe(provider.issuer);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('nonce')).toBeTruthy();
    const state = authorize.searchParams.get('state')!;
    const elsewhere = await fetch(`${callback}?code=abc&state=${state}`, { redirect: 'manual' });
    const elsewhereProblem = await expectProblem(elsewhere, 400, 'sso_state_invalid');
    expect(elsewhereProblem.detail).toContain('another browser');

    const used = await fetch(`${callback}?code=abc&state=${state}`, {
      redirect: 'manual',
      headers: { Cookie: first.cookie },
    });
    // The code is not one the provider gave: the state is consumed, and the provider refuses the code.
    await expectProblem(used, 401, 'sso_response_invalid');
    const again = await fetch(`${callback}?code=abc&state=${state}`, {
      redirect: 'manual',
      headers: { Cookie: first.cookie },
    });
    await expectProblem(again, 401, 'sso_response_replayed');

    const cancelled = await start(connection.start_url);
    const cancelledState = new URL(cancelled.location).searchParams.get('state')!;
    const denied = await fetch(
      `${callback}?error=access_denied&error_description=The+person+cancelled&state=${cancelledState}`,
      { redirect: 'manual', headers: { Cookie: cancelled.cookie } },
    );
    const deniedProblem = await expectProblem(denied, 401, 'sso_identity_provider_error');
    expect(deniedProblem.detail).toContain('access_denied');

    const late = await start(connection.start_url);
    const lateState = new URL(late.location).searchParams.get('state')!;
    clock.advance(11 * 60_000);
    const expired = await fetch(`${callback}?code=abc&state=${lateState}`, {
      redirect: 'manual',
      headers: { Cookie: late.cookie },
    });
    await expectProblem(expired, 400, 'sso_state_expired');
  });
});

describe.skipIf(!hasChromium)('signing in through OpenID Connect in Chromium', () => {
  let server: TestServer;
  let provider: OidcTestProvider;
  let browser: Browser;
  let connection: Awaited<ReturnType<typeof createConnection>>;
  beforeAll(async () => {
    server = await startTestServer({ env: LOOPBACK });
    provider = await startOidcProvider(server.url);
    browser = await launchChromium();
    connection = await createConnection(server, {
      name: 'Test provider',
      protocol: 'oidc',
      default_role: 'editor',
      domains: ['acme.example'],
      oidc: { issuer: provider.issuer, client_id: provider.clientId, client_secret: provider.clientSecret },
    });
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([server?.close(), provider?.close()]);
  });

  /** Signs in at the provider's development pages (any password) and returns the session cookie. */
  async function signInWithBrowser(email: string, startUrl = connection.start_url) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(startUrl);
    await page.fill('input[name=login]', email);
    await page.fill('input[name=password]', 'any password');
    await page.click('button[type=submit]');
    await page.click('button[type=submit]'); // the consent page's Continue
    await page.waitForURL(`${server.url}/dashboard**`);
    const cookie = (await context.cookies(server.url)).find((c) => c.name === 'cs_session');
    await context.close();
    expect(cookie?.value).toMatch(/^cs_sess_/);
    return `cs_session=${cookie!.value}`;
  }

  test('a person new to the workspace signs in, becomes a member with the default role, and lands on the dashboard', async () => {
    const before = await memberAddedEvents(server);
    const cookie = await signInWithBrowser('ada@acme.example');
    const session = await server.call('GET', '/v1/session', { key: null, headers: { Cookie: cookie } });
    expect(session.status, session.text).toBe(200);
    expect(session.body).toMatchObject({
      workspace: { id: server.workspaceId },
      user: { email: 'ada@acme.example' },
      role: 'editor',
      method: 'oidc',
    });
    const ada = (await members(server)).find((m) => m.email === 'ada@acme.example');
    expect(ada).toMatchObject({ role: 'editor', scim_source: null });
    const events = await memberAddedEvents(server);
    expect(events.length).toBe(before.length + 1);
    expect(events[0]!.data).toMatchObject({ email: 'ada@acme.example', role: 'editor', scim_source: null });

    // The next sign-in finds the member: no second member, no second event.
    await signInWithBrowser('ada@acme.example');
    expect((await members(server)).filter((m) => m.email === 'ada@acme.example')).toHaveLength(1);
    expect((await memberAddedEvents(server)).length).toBe(before.length + 1);
  });

  test("from the dashboard's sign-in page, through the provider, back to the dashboard as the person", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${server.url}/dashboard?workspace=${server.workspaceId}`);
    await page.fill('#sso-email', 'joan@acme.example');
    await page.click('[data-part=sso-signin] button[type=submit]');
    await page.fill('input[name=login]', 'joan@acme.example');
    await page.fill('input[name=password]', 'any password');
    await page.click('button[type=submit]');
    await page.click('button[type=submit]');
    await page.waitForURL(`${server.url}/dashboard**`);
    await expect.poll(() => page.textContent('[data-part=person]')).toBe('joan@acme.example');
    await context.close();
  });

  test('the start by email finds the connection of the domain; a required connection turns sign-in links away', async () => {
    const byEmail = `${server.url}/sso/start?workspace_id=${server.workspaceId}&email=grace%40acme.example&return_to=%2Fdashboard%23%2Fmembers`;
    const cookie = await signInWithBrowser('grace@acme.example', byEmail);
    expect(cookie).toMatch(/^cs_session=/);

    const updated = await server.call('PATCH', `/v1/sso-connections/${connection.id}`, { body: { required: true } });
    expect(updated.status).toBe(200);
    const link = new URL(await signInLink(server, 'grace@acme.example'));
    const redeemed = await fetch(`${server.url}/sign-in/link`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: server.url },
      body: new URLSearchParams({ token: link.searchParams.get('token')! }).toString(),
    });
    expect(redeemed.status).toBe(303);
    expect(redeemed.headers.get('location')).toBe(connection.start_url);
    expect(redeemed.headers.get('set-cookie')).toBeNull();
  });

  test("an email outside the connection's domains is refused", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(connection.start_url);
    await page.fill('input[name=login]', 'mallory@elsewhere.example');
    await page.fill('input[name=password]', 'any password');
    await page.click('button[type=submit]');
    const answer = page.waitForResponse((r) => r.url().startsWith(connection.oidc!.redirect_uri));
    await page.click('button[type=submit]');
    const response = await answer;
    // The browser is shown the refusal as a page, with the problem's code and the way back to the sign-in.
    expect(response.status()).toBe(403);
    expect(response.headers()['content-type']).toMatch(/^text\/html/);
    await page.locator('[data-part="code"]').waitFor();
    expect(await page.locator('[data-part="code"]').innerText()).toBe('sso_email_not_allowed');
    expect(await page.locator('[data-part="detail"]').innerText()).toContain("not in the connection's domains");
    expect(await page.getByRole('link', { name: 'Back to sign-in' }).getAttribute('href')).toBe('/dashboard');
    await context.close();
    expect((await members(server)).some((m) => m.email === 'mallory@elsewhere.example')).toBe(false);
  });
});

// The dashboard in headless Chromium (Debian's, or CHROMIUM_PATH) against a real server: signing in, the playground
// it lands on (an answer streamed from a sandbox model with its tokens and cost, a refusal shown as its problem), the
// workspace, API keys (a secret shown once, rotation with its grace, revocation after a confirmation), what a viewer
// key sees, webhooks (an endpoint on a loopback receiver, a test event, its delivery and attempts, a replay that the
// receiver gets again), members (no Remove on one's own row), the logs read as a person reads them (actors by name,
// whole words, nothing clipped) and the usage chart's axes; single sign-on (an OpenID Connect connection created,
// what to register at the provider, required and not, deleted) and directory tokens (a secret shown once with the
// SCIM base URL, rotation, revocation), owners only; and axe-core on every page, the sign-in pages and the pages of
// a refused single sign-on.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bySystem, recordAudit } from '../../src/platform/audit.ts';
import { SCIM_JSON } from '../directory/support.ts';
import { signInLink } from '../sessions/support.ts';
import { type OidcTestProvider, samlIdp, startOidcProvider } from '../sso/identity-providers.ts';
import { hasChromium, launchChromium } from '../support/chromium.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
/** The page's window once the test has put axe-core into it. */
type WithAxe = { axe: typeof import('axe-core') };
const PAGES = [
  'Playground',
  'Workspace',
  'API keys',
  'Members',
  'Single sign-on',
  'Directory',
  'Projects',
  'Webhooks',
  'Events',
  'Logs',
  'Usage',
  'Sessions',
];

/** The serious and critical violations axe-core finds on the page (axe-core put into it first, once). */
async function seriousViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ content: AXE });
  return page.evaluate(async () => {
    const result = await (window as unknown as WithAxe).axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
}

describe.skipIf(!hasChromium)('the dashboard', () => {
  let server: TestServer;
  let receiver: Receiver;
  let provider: OidcTestProvider;
  let browser: Browser;
  beforeAll(async () => {
    [server, receiver] = await Promise.all([
      startTestServer({ env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } }),
      startReceiver(),
    ]);
    provider = await startOidcProvider(server.url);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([server?.close(), receiver?.close(), provider?.close()]);
  });

  async function signIn(
    key: string,
    options: { width?: number; axe?: boolean } = {},
  ): Promise<{ page: Page; problems: string[] }> {
    // axe-core is put into the page by the test, which the page's policy would refuse: only that test bypasses it.
    const page = await browser.newPage({
      viewport: { width: options.width ?? 1280, height: 900 },
      bypassCSP: options.axe ?? false,
    });
    // A control that never appears fails the test with its place instead of hanging it.
    page.setDefaultTimeout(10_000);
    const problems: string[] = [];
    page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
    page.on('pageerror', (error) => problems.push(error.message));
    const response = await page.goto(`${server.url}/dashboard`);
    expect(response!.headers()['content-security-policy']).toContain("script-src 'self'");
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
    return { page, problems };
  }

  test('an owner signs in, sees the workspace, creates a key whose secret is shown once, rotates and revokes it', async () => {
    const { page, problems } = await signIn(server.ownerKey);
    expect(await page.locator('[data-part="role"]').innerText()).toBe('owner');
    // At 1280 px the header's button and links are each one line.
    for (const control of [
      page.getByRole('button', { name: 'Sign out' }),
      page.getByRole('link', { name: 'API keys' }),
    ])
      expect(await control.evaluate((element) => element.getClientRects().length)).toBe(1);
    expect(
      await page
        .getByRole('button', { name: 'Sign out' })
        .evaluate((element) => element.scrollHeight <= parseFloat(getComputedStyle(element).lineHeight) * 1.5 + 16),
    ).toBe(true);
    // Sign out stays on the bar's first row, beside the workspace's name, rather than wrapping below it.
    const signOut = (await page.getByRole('button', { name: 'Sign out' }).boundingBox())!;
    const name = (await page.locator('header.top strong').boundingBox())!;
    expect(signOut.y).toBeLessThan(name.y + name.height);
    // The page a person lands on is the playground, first in the navigation.
    await page.getByRole('heading', { name: 'Playground', level: 1 }).waitFor();
    expect((await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link').allInnerTexts())[0]).toBe(
      'Playground',
    );
    await page.getByRole('link', { name: 'Workspace' }).click();
    expect(await page.locator('[data-part="workspace"]').innerText()).toContain('600 requests per key every 60 s');
    // The key is kept for the tab only: not in the URL, not in localStorage.
    expect(page.url()).not.toContain(server.ownerKey);
    expect(await page.evaluate(() => JSON.stringify(localStorage))).not.toContain('cs_');

    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Name').fill('CI deploys');
    await page.getByLabel('Role').selectOption('editor');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = await page.locator('[data-part="secret-value"]').innerText();
    expect(secret).toMatch(/^cs_live_[0-9A-Za-z]{40}$/);
    expect(await page.locator('[data-part="secret"]').innerText()).toContain('shown only once');
    const created = await fetch(`${server.url}/v1/workspace`, { headers: { Authorization: `Bearer ${secret}` } });
    expect((await created.json()).caller).toMatchObject({ role: 'editor', api_key_name: 'CI deploys' });
    await page.getByRole('button', { name: 'I have copied it' }).click();
    expect(await page.locator('[data-part="secret"]').count()).toBe(0);
    expect(await page.locator('body').innerText()).not.toContain(secret);

    const row = page.locator('tr', { hasText: 'CI deploys' });
    await row.getByRole('button', { name: 'Rotate' }).click();
    const rotated = await page.locator('[data-part="secret-value"]').innerText();
    expect(rotated).not.toBe(secret);
    expect(await page.locator('[data-part="secret"]').innerText()).toMatch(
      /previous secret keeps working until .* \(24 hours\)/,
    );
    await page.getByRole('button', { name: 'I have copied it' }).click();
    await expect.poll(() => row.locator('[data-part="grace"]').count()).toBe(1);

    await row.getByRole('button', { name: 'Revoke', exact: true }).click();
    await row.getByRole('button', { name: 'Revoke key' }).click();
    await expect.poll(() => row.locator('[data-part="status"]').innerText()).toBe('revoked');
    expect(
      (await fetch(`${server.url}/v1/workspace`, { headers: { Authorization: `Bearer ${rotated}` } })).status,
    ).toBe(401);
    expect(problems).toEqual([]);
    await page.close();
  });

  test('an owner connects an OpenID provider: what to register there, required for the domain and not, deleted', async () => {
    const { page, problems } = await signIn(server.ownerKey, { axe: true });
    await page.getByRole('link', { name: 'Single sign-on' }).click();
    await page.getByRole('heading', { name: 'Single sign-on', level: 1 }).waitFor();
    const form = page.locator('[data-part="create-sso-connection"]');
    await form.getByLabel('Name').fill('Test provider');
    await form.getByLabel('OpenID Connect').check();
    await form.getByLabel('Issuer URL').fill(provider.issuer);
    await form.getByLabel('Client ID').fill(provider.clientId);
    await form.getByLabel('Client secret').fill(provider.clientSecret);
    await form.getByLabel('Email domains (optional)').fill('Acme.example');
    await form.getByLabel('Role of people who join by signing in').selectOption('editor');
    await form.getByRole('button', { name: 'Create connection' }).click();

    // The details of the new connection: the redirect URI and start URL the API gives, to register at the provider.
    const details = page.locator('[data-part="sso-details"]');
    await details.waitFor();
    const listed = (await server.call('GET', '/v1/sso-connections')).body.data as Array<{
      id: string;
      start_url: string;
      default_role: string;
      domains: string[];
      oidc: { redirect_uri: string };
    }>;
    expect(listed).toHaveLength(1);
    const connection = listed[0]!;
    expect(connection).toMatchObject({ default_role: 'editor', domains: ['acme.example'] });
    expect(await details.locator('[data-part="redirect-uri"]').innerText()).toBe(connection.oidc.redirect_uri);
    expect(await details.locator('[data-part="start-url"]').innerText()).toBe(connection.start_url);
    expect(await page.locator('body').innerText()).not.toContain(provider.clientSecret);
    await page.getByRole('cell', { name: 'Test provider', exact: true }).waitFor();
    expect(await seriousViolations(page), "a connection's details").toEqual([]);

    // Required for its domain, then not.
    const required = details.getByLabel('Require single sign-on for these domains');
    await required.check();
    await expect
      .poll(async () => (await server.call('GET', `/v1/sso-connections/${connection.id}`)).body.required)
      .toBe(true);
    await expect.poll(() => page.locator('table [data-part="required"]').innerText()).toBe('yes');
    await required.uncheck();
    await expect
      .poll(async () => (await server.call('GET', `/v1/sso-connections/${connection.id}`)).body.required)
      .toBe(false);

    // The start URL the page shows sends a browser to the provider.
    const started = await fetch(connection.start_url, { redirect: 'manual' });
    expect(started.status).toBe(302);
    expect(started.headers.get('location')).toContain(provider.issuer);

    await details.getByRole('button', { name: 'Delete', exact: true }).click();
    await details.getByRole('button', { name: 'Delete connection' }).click();
    await page.locator('[data-part="empty"]').waitFor();
    expect((await server.call('GET', `/v1/sso-connections/${connection.id}`)).status).toBe(404);
    expect(problems).toEqual([]);
    await page.close();
  });

  test('an owner connects a SAML identity provider by its metadata and reads the ACS URL and entity id to enter there', async () => {
    const { page, problems } = await signIn(server.ownerKey);
    await page.getByRole('link', { name: 'Single sign-on' }).click();
    const form = page.locator('[data-part="create-sso-connection"]');
    await form.getByLabel('Name').fill('SAML provider');
    await form.getByLabel('SAML 2.0').check();
    await form.getByLabel('Or the metadata XML').fill(samlIdp().metadataXml);
    await form.getByRole('button', { name: 'Create connection' }).click();
    const details = page.locator('[data-part="sso-details"]');
    await details.waitFor();
    const created = (await server.call('GET', '/v1/sso-connections')).body.data.find(
      (item: { name: string }) => item.name === 'SAML provider',
    ) as { id: string; saml: { acs_url: string; sp_entity_id: string; sp_metadata_url: string } };
    expect(await details.locator('[data-part="acs-url"]').innerText()).toBe(created.saml.acs_url);
    expect(await details.locator('[data-part="sp-entity-id"]').innerText()).toBe(created.saml.sp_entity_id);
    expect(await details.locator('[data-part="sp-metadata-url"]').innerText()).toBe(created.saml.sp_metadata_url);
    // Without a domain there is nothing to require.
    expect(await details.getByLabel('Require single sign-on for these domains').isDisabled()).toBe(true);
    expect((await server.call('DELETE', `/v1/sso-connections/${created.id}`)).status).toBe(204);
    expect(problems).toEqual([]);
    await page.close();
  });

  test('an owner creates a directory token shown once with the SCIM base URL, rotates it and revokes it', async () => {
    const { page, problems } = await signIn(server.ownerKey, { axe: true });
    await page.getByRole('link', { name: 'Directory' }).click();
    await page.getByLabel('Name').fill('Okta production');
    await page.getByLabel('Directory', { exact: true }).fill('okta');
    await page.getByRole('button', { name: 'Create token' }).click();
    const shown = page.locator('[data-part="secret"]');
    const secret = await shown.locator('[data-part="secret-value"]').innerText();
    expect(secret).toMatch(/^cs_scim_/);
    expect(await shown.innerText()).toContain('shown only once');
    const scimBaseUrl = await shown.locator('[data-part="scim-base-url"]').innerText();
    expect(scimBaseUrl).toBe(`${server.url}/scim/v2/${server.workspaceId}`);
    await shown.getByRole('button', { name: 'Copy SCIM base URL' }).waitFor();
    expect(await seriousViolations(page), 'a secret shown once').toEqual([]);
    const scim = (token: string) =>
      fetch(`${scimBaseUrl}/Users`, { headers: { Authorization: `Bearer ${token}`, Accept: SCIM_JSON } });
    expect((await scim(secret)).status).toBe(200);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    expect(await page.locator('[data-part="secret"]').count()).toBe(0);
    expect(await page.locator('body').innerText()).not.toContain(secret);

    const row = page.locator('tr', { hasText: 'Okta production' });
    await row.getByRole('button', { name: 'Rotate Okta production' }).click();
    const rotated = await page.locator('[data-part="secret-value"]').innerText();
    expect(rotated).not.toBe(secret);
    expect(await page.locator('[data-part="secret"]').innerText()).toMatch(
      /previous secret keeps working until .* \(24 hours\)/,
    );
    expect((await scim(rotated)).status).toBe(200);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    await expect.poll(() => row.locator('[data-part="grace"]').count()).toBe(1);

    await row.getByRole('button', { name: 'Revoke Okta production' }).click();
    await row.getByRole('button', { name: 'Revoke token' }).click();
    await expect.poll(() => row.locator('[data-part="status"]').innerText()).toBe('revoked');
    expect((await scim(rotated)).status).toBe(401);
    expect((await scim(secret)).status).toBe(401);
    expect(problems).toEqual([]);
    await page.close();
  });

  test('admins and viewers see that single sign-on and directory tokens are for owners, and no controls', async () => {
    for (const [role, article] of [
      ['admin', 'an'],
      ['viewer', 'a'],
    ] as const) {
      const key = await server.createKey(role);
      const { page, problems } = await signIn(key.secret);
      for (const name of ['Single sign-on', 'Directory']) {
        await page.getByRole('link', { name, exact: true }).click();
        // Polled: the click returns before the page it opens replaces the one before (whose words are alike).
        await expect
          .poll(() => page.locator('[data-part="not-allowed"]').innerText())
          .toBe(
            `Only owners manage ${name === 'Directory' ? 'directory tokens' : 'single sign-on'}; you are signed in as ${article} ${role}. Ask an owner of the workspace, or sign in as one.`,
          );
        expect(await page.locator('main form').count()).toBe(0);
        expect(await page.locator('main table').count()).toBe(0);
      }
      expect(problems).toEqual([]);
      await page.close();
    }
  });

  test('a viewer key sees the workspace and no write controls', async () => {
    const viewer = await server.createKey('viewer');
    const { page } = await signIn(viewer.secret);
    expect(await page.locator('[data-part="role"]').innerText()).toBe('viewer');
    // A viewer may not call the models, so it lands on the workspace rather than on the playground.
    await page.locator('[data-part="workspace"]').waitFor();
    expect(await page.getByRole('heading', { name: 'Playground', level: 1 }).count()).toBe(0);
    const notAllowed = () => page.locator('[data-part="not-allowed"]').innerText();
    await page.getByRole('link', { name: 'API keys' }).click();
    await expect
      .poll(notAllowed)
      .toBe("A viewer key cannot see the workspace's API keys; sign in with an admin or owner key.");
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await expect
      .poll(notAllowed)
      .toBe("A viewer key cannot see the workspace's webhooks; sign in with an admin or owner key.");
    expect(await page.getByRole('button').allInnerTexts()).toEqual(['Sign out']);
    await page.close();
  });

  test('webhooks: an endpoint on a loopback receiver, a test event, its delivery and attempts, and a replay', {
    timeout: 60_000,
  }, async () => {
    const { page, problems } = await signIn(server.ownerKey);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('URL').fill(`${receiver.url}/dashboard`);
    await page.getByLabel('workflow.*').check();
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    expect(await page.locator('[data-part="secret-value"]').innerText()).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    const row = page.locator('tr', { hasText: `${receiver.url}/dashboard` });
    await row.getByRole('button', { name: 'Send test event' }).click();
    await expect.poll(() => row.locator('[data-part="note"]').count()).toBe(1);
    const [first] = await receiver.waitFor(1, 10_000);
    expect(first!.body.test).toBe(true);

    await row.getByRole('button', { name: 'Deliveries' }).click();
    // The receiver already has the test event: its delivery is in the endpoint's list.
    await page.locator('[data-part="deliveries"] li').first().waitFor();
    expect(await page.locator('[data-part="deliveries"] li').count()).toBe(1);
    // A test delivery is labelled a test, not a replay as well.
    expect(await page.locator('[data-part="deliveries"] li button').first().innerText()).toMatch(/ · test$/);
    await page.locator('[data-part="deliveries"] li button').first().click();
    await expect.poll(() => page.locator('[data-part="attempts"] li').count()).toBe(1);
    expect(await page.locator('[data-part="attempts"]').innerText()).toMatch(/^#1 succeeded · 200 · \d+ ms/);
    expect(JSON.parse(await page.locator('[data-part="payload"]').innerText())).toMatchObject({
      id: first!.body.id,
      test: true,
    });

    // A real event (a workflow run's completion) is delivered, then replayed from its delivery.
    const workflow = await server.call('POST', '/v1/workflows', {
      body: { name: 'Hello', steps: [{ id: 'x', type: 'transform', function: 'template', value: 'hi' }] },
    });
    await server.call('POST', `/v1/workflows/${workflow.body.id}/runs`, { body: {} });
    const [, completed] = await receiver.waitFor(2, 20_000);
    expect(completed!.body.type).toBe('workflow.run.completed');
    await page.getByRole('button', { name: 'Refresh' }).click();
    const real = page.locator('[data-part="deliveries"] li button', {
      hasText: /^workflow\.run\.completed · delivered · 1 attempt\(s\) · [^·]+$/,
    });
    await real.click();
    await expect.poll(() => page.locator('[data-part="payload"]').innerText()).toContain(completed!.body.id);

    await page.getByRole('button', { name: 'Replay to this endpoint' }).click();
    await expect
      .poll(() => page.locator('[data-part="delivery"]').innerText())
      .toContain('Queued again for this endpoint');
    const [, , again] = await receiver.waitFor(3, 10_000);
    expect(again!.body.id).toBe(completed!.body.id);

    // A selection of events, replayed from the events list to every subscribed endpoint.
    await page.getByRole('link', { name: 'Events' }).click();
    await page.getByLabel(`Select workflow.run.completed ${completed!.body.id}`).check();
    await page.getByRole('button', { name: 'Replay selected (1)' }).click();
    await expect
      .poll(() => page.locator('[data-part="note"]').innerText())
      .toBe('1 event(s) queued again for every subscribed endpoint.');
    const [, , , fourth] = await receiver.waitFor(4, 10_000);
    expect(fourth!.body.id).toBe(completed!.body.id);
    expect(problems).toEqual([]);
    await page.close();
  });

  test('members, projects, logs with filters, events, usage and spend limits', async () => {
    await server.call('POST', '/v1/chat/completions', {
      body: { model: 'sandbox-writer', messages: [{ role: 'user', content: 'Hello there' }] },
    });
    expect(
      (
        await server.call('POST', '/v1/spend-limits', {
          body: { scope: { type: 'api_key', id: server.ownerKeyId }, amount_usd: 5, period: 'month' },
        })
      ).status,
    ).toBe(201);
    const { page, problems } = await signIn(server.ownerKey);
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByLabel('Email').fill('ana@example.com');
    await page.getByLabel('Role').selectOption('viewer');
    await page.getByRole('button', { name: 'Add member' }).click();
    await expect.poll(() => page.locator('[data-part="members"]').innerText()).toContain('ana@example.com');
    await page.getByRole('button', { name: 'Add member' }).waitFor();
    await page.getByLabel('Email').fill('ana@example.com');
    await page.getByRole('button', { name: 'Add member' }).click();
    // A problem document is shown as it came: its title and detail.
    await expect.poll(() => page.locator('[data-part="problem"]').count()).toBe(1);
    // The signed-in key's own member has no Remove (the API refuses it: 409 cannot_remove_self); others do.
    const own = page.locator('[data-part="members"] tr', { hasText: 'owner@test.example' });
    expect(await own.locator('[data-part="you"]').innerText()).toBe('you');
    expect(await own.getByRole('button').count()).toBe(0);
    await page.getByRole('button', { name: 'Remove ana@example.com' }).click();
    await expect.poll(() => page.locator('[data-part="members"]').innerText()).not.toContain('ana@example.com');

    await page.getByRole('link', { name: 'Projects' }).click();
    await page.getByLabel('Name').fill('Spring campaign');
    await page.getByRole('button', { name: 'Create project' }).click();
    await expect.poll(() => page.locator('[data-part="projects"]').innerText()).toContain('Spring campaign');

    await page.getByRole('link', { name: 'Logs' }).click();
    await expect.poll(() => page.locator('[data-part="audit log"]').innerText()).toContain('project created');
    await page.getByLabel('Action').fill('member.removed');
    await page.getByLabel('Action').press('Enter');
    await expect
      .poll(async () =>
        (await page.locator('[data-part="audit log"] tbody tr').allInnerTexts()).every((row) =>
          row.includes('member removed'),
        ),
      )
      .toBe(true);
    await page.getByLabel('Path starts with').fill('/v1/projects');
    await page.getByLabel('Path starts with').press('Enter');
    await expect
      .poll(async () =>
        (await page.locator('[data-part="request log"] tbody tr').allInnerTexts()).every((row) =>
          row.includes('/v1/projects'),
        ),
      )
      .toBe(true);

    await page.getByRole('link', { name: 'Usage' }).click();
    await expect.poll(() => page.locator('[data-part="usage"]').innerText()).toContain('sandbox-writer');
    // The chart's axes: dates along the bottom (today's among them, "Nov 3"), dollars up the side from $0.00.
    const chart = page.locator('[data-part="usage-chart"]');
    const today = new Date().toLocaleDateString('en', { month: 'short', day: 'numeric', timeZone: 'UTC' });
    const dates = await chart.locator('[data-part="x-axis"] text').allTextContents();
    expect(dates.length).toBeGreaterThanOrEqual(5);
    expect(dates.every((label) => /^[A-Z][a-z]{2} \d{1,2}$/.test(label))).toBe(true);
    expect(dates.at(-1)).toBe(today);
    // No two day labels overlap.
    const spans = await chart
      .locator('[data-part="x-axis"] text')
      .evaluateAll((labels) =>
        labels.map((label) => [label.getBoundingClientRect().left, label.getBoundingClientRect().right]),
      );
    for (let i = 1; i < spans.length; i++) expect(spans[i]![0]!, dates[i]).toBeGreaterThan(spans[i - 1]![1]!);
    const dollars = await chart.locator('[data-part="y-axis"] text').allTextContents();
    expect(dollars[0]).toMatch(/^\$0\.0+$/);
    expect(dollars.length).toBeGreaterThanOrEqual(2);
    expect(dollars.every((label) => /^\$\d+\.\d{2,8}$/.test(label))).toBe(true);
    // The ticks rise evenly and the top one covers the day's spend, which the table by day shows.
    const values = dollars.map((label) => Number(label.slice(1)));
    expect(values).toEqual([...values].sort((a, b) => a - b));
    const byDay = await page.locator('[data-part="usage-by-day"] tbody tr').allInnerTexts();
    expect(byDay.length).toBeGreaterThanOrEqual(1);
    const highest = Math.max(...byDay.map((row) => Number(row.trim().split(/\s+/).at(-1))));
    expect(values.at(-1)!).toBeGreaterThanOrEqual(highest);
    expect(await chart.getAttribute('role')).toBe('img');
    expect(await chart.locator('title').first().textContent()).toContain('US dollars');
    // The spend limits under the chart: the owner key's monthly limit with the spend of this month, as the API has it.
    const limit = (await server.call('GET', '/v1/spend-limits')).body.data[0];
    const limits = page.locator('[data-part="spend-limits"] tbody tr');
    await expect.poll(() => limits.count()).toBe(1);
    const row = (await limits.first().innerText()).replace(/\s+/g, ' ');
    expect(row).toContain(`API key ${server.ownerKeyId} Month ${limit.spent_usd.toFixed(6)} 5.00`);
    expect(row).toContain(`${limit.resets_at.slice(0, 16).replace('T', ' ')}`);
    await page.getByRole('link', { name: 'Events' }).click();
    await expect.poll(() => page.locator('[data-part="events"] li').count()).toBeGreaterThan(0);
    expect(problems.filter((problem) => !/409|Conflict/.test(problem))).toEqual([]);
    await page.close();
  });

  test('the playground streams an answer from sandbox-writer, with its tokens and cost, from the keyboard', async () => {
    const { page, problems } = await signIn(server.ownerKey, { axe: true });
    const model = page.getByLabel('Model');
    await expect.poll(() => model.inputValue()).toBe('sandbox-writer');
    // Every model offered is one this server can call and that chats.
    const offered = await model
      .locator('option')
      .evaluateAll((options) => options.map((option) => (option as HTMLOptionElement).value));
    const available = (await server.call('GET', '/v1/models?available=true&capability=chat')).body.data.map(
      (m: { id: string }) => m.id,
    );
    expect(offered.length).toBeGreaterThan(0);
    expect(available).toEqual(expect.arrayContaining(offered));
    expect(await page.getByLabel('Brand voice (optional)').inputValue()).toBe('');

    const prompt = 'Write a launch note for our spring collection of linen shirts.';
    await page.getByLabel('Prompt').fill(prompt);
    await page.getByLabel('Prompt').press('Control+Enter');
    await page.locator('[data-part="cost"]').waitFor();
    // The same request without a stream gives the same text and usage (the sandbox is deterministic).
    const direct = await server.call('POST', '/v1/chat/completions', {
      body: { model: 'sandbox-writer', messages: [{ role: 'user', content: prompt }] },
    });
    expect(direct.status).toBe(200);
    expect(await page.locator('[data-part="answer"]').innerText()).toBe(direct.body.choices[0].message.content);
    expect(await page.locator('[data-part="prompt-tokens"]').innerText()).toBe(String(direct.body.usage.prompt_tokens));
    expect(await page.locator('[data-part="completion-tokens"]').innerText()).toBe(
      String(direct.body.usage.completion_tokens),
    );
    expect(await page.locator('[data-part="cost"]').innerText()).toBe(`$${direct.body.cost_usd.toFixed(6)}`);
    expect(await page.locator('[data-part="answer"]').getAttribute('aria-busy')).toBe('false');
    expect(await page.getByRole('button', { name: 'Send' }).isEnabled()).toBe(true);

    // The controls are reached with the keyboard, in order.
    await page.getByLabel('Model').focus();
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      await page.keyboard.press('Tab');
      order.push(await page.evaluate(() => document.activeElement?.id || document.activeElement?.textContent || ''));
    }
    expect(order).toEqual(['playground-voice', 'playground-prompt', 'Send']);

    await page.addScriptTag({ content: AXE });
    const violations = await page.evaluate(async () =>
      (await (window as unknown as WithAxe).axe.run(document)).violations.map((v) => `${v.id}: ${v.impact}`),
    );
    expect(violations).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  test('a refused answer shows its problem: a banned phrase stops the stream with policy_violation', async () => {
    const rule = await server.call('POST', '/v1/compliance-rules', {
      body: { name: 'No superlatives (dashboard)', kind: 'banned_phrase', phrases: ['world-class'] },
    });
    expect(rule.status).toBe(201);
    try {
      const { page } = await signIn(server.ownerKey);
      await expect.poll(() => page.getByLabel('Model').inputValue()).toBe('sandbox-writer');
      await page.getByLabel('Model').selectOption('sandbox-echo');
      await page.getByLabel('Prompt').fill('Our support team is world-class and always on.');
      await page.getByRole('button', { name: 'Send' }).click();
      const problem = page.locator('[data-part="problem"]');
      await problem.waitFor();
      const { title } = (
        await server.call('POST', '/v1/chat/completions', {
          body: { model: 'sandbox-echo', messages: [{ role: 'user', content: 'world-class' }] },
        })
      ).body;
      expect(title).toBeTruthy();
      expect(await problem.innerText()).toContain(title);
      expect(await page.locator('body').innerText()).not.toContain('world-class and');
      expect(await page.locator('[data-part="cost"]').count()).toBe(0);
      await page.close();
    } finally {
      await server.call('DELETE', `/v1/compliance-rules/${rule.body.id}`);
    }
  });

  test('the logs read as a person reads them: actors by name, whole words, nothing clipped, at any width', async () => {
    await server.call('POST', '/v1/projects', { body: { name: 'Readable logs' } });
    await recordAudit(
      server.platform.db,
      bySystem(server.workspaceId, 'workflow run run_01KJWVH9HXMK84N844C76ZG76G', new Date()),
      {
        action: 'workflow_step.approved',
        target: {
          type: 'workflow_run',
          id: 'run_01KJWVH9HXMK84N844C76ZG76G',
          display_name: 'Weekly newsletter draft for the spring collection launch',
        },
      },
    );
    for (const width of [1280, 380]) {
      const { page, problems } = await signIn(server.ownerKey, { width });
      await page.getByRole('link', { name: 'Logs' }).click();
      const rows = page.locator('[data-part="audit log"] tbody tr');
      await rows.first().waitFor();
      // Actions read as words; the code (what the filter takes) is the element's title.
      const system = rows.filter({ hasText: 'workflow step approved' });
      expect(await system.locator('[data-part="action"]').getAttribute('title')).toBe('workflow_step.approved');
      expect(await system.locator('[data-part="actor"]').innerText()).toBe(
        'system: workflow run run_01KJWVH9HXMK84N844C76ZG76G',
      );
      const byKey = rows.filter({ hasText: 'project created' }).first();
      expect(await byKey.locator('[data-part="actor"]').innerText()).toBe('Owner key (owner key)');
      expect(await byKey.locator('[data-part="actor"]').getAttribute('title')).toBe(server.ownerKeyId);
      expect(await page.locator('[data-part="audit log"]').innerText()).not.toContain('{"type"');

      // Each action is one whole word on one line, shown in full; targets and their cells are not clipped.
      const layout = await page.locator('[data-part="audit log"]').evaluate((table) =>
        [...table.querySelectorAll('[data-part="action"]')].map((action) => ({
          text: action.textContent,
          lines: action.getClientRects().length,
          height: (action as HTMLElement).offsetHeight,
          lineHeight: parseFloat(getComputedStyle(action).lineHeight) || 20,
          clipped: action.scrollWidth > action.clientWidth,
          cellClipped: [...action.closest('tr')!.children].some((cell) => cell.scrollWidth > cell.clientWidth),
        })),
      );
      const approved = layout.find((item) => item.text === 'workflow step approved');
      expect(approved, `at ${width}px`).toBeDefined();
      for (const item of layout) {
        expect(item.lines, `${item.text} at ${width}px`).toBe(1);
        expect(item.height, `${item.text} at ${width}px`).toBeLessThan(item.lineHeight * 1.5);
        expect(item.clipped, `${item.text} at ${width}px`).toBe(false);
        expect(item.cellClipped, `${item.text}'s row at ${width}px`).toBe(false);
      }
      expect(await system.locator('[data-part="target"]').innerText()).toContain(
        'Weekly newsletter draft for the spring collection launch',
      );
      // The request log answers and shows its rows, each key by its name (its id in the title), not its id.
      await page.locator('[data-part="request log"] tbody tr').first().waitFor();
      const key = page.locator('[data-part="request log"] [data-part="key"]').first();
      await key.waitFor();
      expect(await key.innerText()).toBe('Owner key');
      expect(await key.getAttribute('title')).toBe(server.ownerKeyId);
      expect(await page.locator('[data-part="skeleton"]').count()).toBe(0);
      expect(problems).toEqual([]);
      await page.close();
    }
  });

  test('axe-core finds no serious or critical violation on any page, wide or narrow', async () => {
    for (const width of [1280, 380]) {
      const { page } = await signIn(server.ownerKey, { width, axe: true });
      for (const name of PAGES) {
        await page.getByRole('link', { name, exact: true }).click();
        await page
          .locator('[data-part="loading"]')
          .first()
          .waitFor({ state: 'detached' })
          .catch(() => {});
        expect(await seriousViolations(page), `${name} at ${width}px`).toEqual([]);
        // Nothing runs off the screen: a wide table scrolls sideways inside its own region, the page never does.
        expect(
          await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth),
          `${name} at ${width}px fits the screen`,
        ).toBe(true);
      }
      // The sign-in page too: a link by email, single sign-on, a key.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('button', { name: 'Continue with single sign-on' }).waitFor();
      expect(await seriousViolations(page), `sign-in at ${width}px`).toEqual([]);
      await page.close();
    }
  });

  test('axe-core finds no serious or critical violation on the pages of a person signed in, and of a refused sign-in', async () => {
    for (const width of [1280, 380]) {
      const page = await browser.newPage({ viewport: { width, height: 900 }, bypassCSP: true });
      page.setDefaultTimeout(10_000);
      // A sign-in link's page, then the person's sessions.
      await page.goto(await signInLink(server, 'owner@test.example'));
      expect(await seriousViolations(page), `sign-in link at ${width}px`).toEqual([]);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
      await page.getByRole('link', { name: 'Sessions', exact: true }).click();
      await page.locator('[data-part="sign-out-current"]').waitFor();
      expect(await seriousViolations(page), `sessions of a person at ${width}px`).toEqual([]);
      // A refused single sign-on, as a browser sees it.
      const refused = await page.goto(
        `${server.url}/sso/start?workspace_id=${server.workspaceId}&email=ada@nowhere.example`,
      );
      expect(refused!.status()).toBe(404);
      await page.locator('[data-part="code"]').waitFor();
      expect(await page.locator('[data-part="code"]').innerText()).toBe('not_found');
      expect(await seriousViolations(page), `refused sign-in at ${width}px`).toEqual([]);
      await page.getByRole('link', { name: 'Back to sign-in' }).click();
      await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
      await page.context().close();
    }
  });
});

// The dashboard in headless Chromium (Debian's, or CHROMIUM_PATH) against a real server: signing in, the workspace,
// API keys (a secret shown once, rotation with its grace, revocation after a confirmation), what a viewer key sees,
// and webhooks (an endpoint on a loopback receiver, a test event, its delivery and attempts, a replay that the
// receiver gets again).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { CHROMIUM, hasChromium } from '../support/chromium.ts';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const PAGES = ['Workspace', 'API keys', 'Members', 'Projects', 'Webhooks', 'Events', 'Logs', 'Usage'];

describe.skipIf(!hasChromium)('the dashboard', () => {
  let server: TestServer;
  let receiver: Receiver;
  let browser: Browser;
  beforeAll(async () => {
    [server, receiver] = await Promise.all([startTestServer({ env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } }), startReceiver()]);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([server?.close(), receiver?.close()]);
  });

  async function signIn(key: string, options: { width?: number; axe?: boolean } = {}): Promise<{ page: Page; problems: string[] }> {
    // axe-core is put into the page by the test, which the page's policy would refuse: only that test bypasses it.
    const page = await browser.newPage({ viewport: { width: options.width ?? 1280, height: 900 }, bypassCSP: options.axe ?? false });
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
    expect(await page.locator('[data-part="secret"]').innerText()).toMatch(/previous secret keeps working until .* \(24 hours\)/);
    await page.getByRole('button', { name: 'I have copied it' }).click();
    await expect.poll(() => row.locator('[data-part="grace"]').count()).toBe(1);

    await row.getByRole('button', { name: 'Revoke', exact: true }).click();
    await row.getByRole('button', { name: 'Revoke key' }).click();
    await expect.poll(() => row.locator('[data-part="status"]').innerText()).toBe('revoked');
    expect((await fetch(`${server.url}/v1/workspace`, { headers: { Authorization: `Bearer ${rotated}` } })).status).toBe(401);
    expect(problems).toEqual([]);
    await page.close();
  });

  test('a viewer key sees the workspace and no write controls', async () => {
    const viewer = await server.createKey('viewer');
    const { page } = await signIn(viewer.secret);
    expect(await page.locator('[data-part="role"]').innerText()).toBe('viewer');
    await page.getByRole('link', { name: 'API keys' }).click();
    expect(await page.locator('[data-part="not-allowed"]').innerText()).toContain('viewer key cannot see');
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    expect(await page.locator('[data-part="not-allowed"]').innerText()).toContain('viewer key cannot see');
    expect(await page.getByRole('button').allInnerTexts()).toEqual(['Sign out']);
    await page.close();
  });

  test('webhooks: an endpoint on a loopback receiver, a test event, its delivery and attempts, and a replay', { timeout: 60_000 }, async () => {
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
    await page.locator('[data-part="deliveries"] li button').first().click();
    await expect.poll(() => page.locator('[data-part="attempts"] li').count()).toBe(1);
    expect(await page.locator('[data-part="attempts"]').innerText()).toMatch(/^#1 succeeded · 200 · \d+ ms/);
    expect(JSON.parse(await page.locator('[data-part="payload"]').innerText())).toMatchObject({ id: first!.body.id, test: true });

    // A real event (a workflow run's completion) is delivered, then replayed from its delivery.
    const workflow = await server.call('POST', '/v1/workflows', { body: { name: 'Hello', steps: [{ id: 'x', type: 'transform', function: 'template', value: 'hi' }] } });
    await server.call('POST', `/v1/workflows/${workflow.body.id}/runs`, { body: {} });
    const [, completed] = await receiver.waitFor(2, 20_000);
    expect(completed!.body.type).toBe('workflow.run.completed');
    await page.getByRole('button', { name: 'Refresh' }).click();
    const real = page.locator('[data-part="deliveries"] li button', { hasText: /^workflow\.run\.completed · delivered · 1 attempt\(s\) · [^·]+$/ });
    await real.click();
    await expect.poll(() => page.locator('[data-part="payload"]').innerText()).toContain(completed!.body.id);

    await page.getByRole('button', { name: 'Replay to this endpoint' }).click();
    await expect.poll(() => page.locator('[data-part="delivery"]').innerText()).toContain('Queued again for this endpoint');
    const [, , again] = await receiver.waitFor(3, 10_000);
    expect(again!.body.id).toBe(completed!.body.id);

    // A selection of events, replayed from the events list to every subscribed endpoint.
    await page.getByRole('link', { name: 'Events' }).click();
    await page.getByLabel(`Select workflow.run.completed ${completed!.body.id}`).check();
    await page.getByRole('button', { name: 'Replay selected (1)' }).click();
    await expect.poll(() => page.locator('[data-part="note"]').innerText()).toBe('1 event(s) queued again for every subscribed endpoint.');
    const [, , , fourth] = await receiver.waitFor(4, 10_000);
    expect(fourth!.body.id).toBe(completed!.body.id);
    expect(problems).toEqual([]);
    await page.close();
  });

  test('members, projects, logs with filters, events and usage', async () => {
    await server.call('POST', '/v1/chat/completions', { body: { model: 'sandbox-writer', messages: [{ role: 'user', content: 'Hello there' }] } });
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
    await page.getByRole('button', { name: 'Remove ana@example.com' }).click();
    await expect.poll(() => page.locator('[data-part="members"]').innerText()).not.toContain('ana@example.com');

    await page.getByRole('link', { name: 'Projects' }).click();
    await page.getByLabel('Name').fill('Spring campaign');
    await page.getByRole('button', { name: 'Create project' }).click();
    await expect.poll(() => page.locator('[data-part="projects"]').innerText()).toContain('Spring campaign');

    await page.getByRole('link', { name: 'Logs' }).click();
    await expect.poll(() => page.locator('[data-part="audit log"]').innerText()).toContain('project.created');
    await page.getByLabel('Action').fill('member.removed');
    await page.getByLabel('Action').press('Enter');
    await expect.poll(async () => (await page.locator('[data-part="audit log"] tbody tr').allInnerTexts()).every((row) => row.includes('member.removed'))).toBe(true);
    await page.getByLabel('Path starts with').fill('/v1/projects');
    await page.getByLabel('Path starts with').press('Enter');
    await expect.poll(async () => (await page.locator('[data-part="request log"] tbody tr').allInnerTexts()).every((row) => row.includes('/v1/projects'))).toBe(true);

    await page.getByRole('link', { name: 'Usage' }).click();
    await expect.poll(() => page.locator('[data-part="usage"]').innerText()).toContain('sandbox-writer');
    expect(await page.locator('[data-part="usage-chart"]').count()).toBe(1);
    await page.getByRole('link', { name: 'Events' }).click();
    await expect.poll(() => page.locator('[data-part="events"] li').count()).toBeGreaterThan(0);
    expect(problems.filter((problem) => !/409|Conflict/.test(problem))).toEqual([]);
    await page.close();
  });

  test('axe-core finds no serious or critical violation on any page, wide or narrow', async () => {
    for (const width of [1280, 380]) {
      const { page } = await signIn(server.ownerKey, { width, axe: true });
      await page.addScriptTag({ content: AXE });
      for (const name of PAGES) {
        await page.getByRole('link', { name, exact: true }).click();
        await page.locator('[data-part="loading"]').first().waitFor({ state: 'detached' }).catch(() => {});
        const violations = await page.evaluate(async () => {
          const result = await (window as any).axe.run(document, { resultTypes: ['violations'] });
          return result.violations.filter((v: any) => v.impact === 'serious' || v.impact === 'critical').map((v: any) => `${v.id}: ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`);
        });
        expect(violations, `${name} at ${width}px`).toEqual([]);
      }
      // The sign-in page too.
      await page.getByRole('button', { name: 'Sign out' }).click();
      const signInViolations = await page.evaluate(async () => (await (window as any).axe.run(document)).violations.filter((v: any) => v.impact === 'serious' || v.impact === 'critical').map((v: any) => v.id));
      expect(signInViolations, `sign-in at ${width}px`).toEqual([]);
      await page.close();
    }
  });
});

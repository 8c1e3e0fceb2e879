// The dashboard on its own (`npm run dashboard`) against the Prism mock of the contract, as a frontend team uses it
// before the backend exists: signing in with any key, every page renders the mock's example answers without an
// error, and a new key's secret (the example's) is shown once.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { type StandaloneDashboard, startStandaloneDashboard } from '../../src/features/dashboard/standalone.ts';
import { hasChromium, launchChromium } from '../support/chromium.ts';

const mock = inject('contractTargets').find((target) => target.name === 'mock');

describe.skipIf(!mock || !hasChromium)('the dashboard against the Prism mock', () => {
  let dashboard: StandaloneDashboard;
  let browser: Browser;
  beforeAll(async () => {
    dashboard = await startStandaloneDashboard({ apiBase: mock!.baseUrl });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await dashboard?.close();
  });

  test('signs in, renders every page from the examples, and shows a new secret once', async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
    await page.goto(dashboard.url);
    await page.getByLabel('API key').fill('cs_test_anything');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Dashboard' }).waitFor();
    await page.getByRole('heading', { name: 'Playground', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'Workspace', exact: true }).click();
    expect(await page.locator('[data-part="workspace"]').innerText()).toContain('requests per key');
    for (const name of [
      'Playground',
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
    ]) {
      await page.getByRole('link', { name, exact: true }).click();
      await expect.poll(() => page.locator('[data-part="loading"]').count(), { timeout: 10_000 }).toBe(0);
      expect(await page.locator('[data-part="problem"]').count(), name).toBe(0);
    }
    await page.getByRole('link', { name: 'API keys', exact: true }).click();
    await page.getByLabel('Name').fill('From the mock');
    await page.getByRole('button', { name: 'Create key' }).click();
    expect(await page.locator('[data-part="secret-value"]').innerText()).toMatch(/^cs_live_/);
    expect(problems).toEqual([]);
    await page.close();
  });
});

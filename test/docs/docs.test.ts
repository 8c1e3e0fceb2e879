// Renders the docs portal (`npm run docs`) and opens it in headless Chromium: every tag shows all of its
// operations (webhooks included), and the AsyncAPI page shows every event message.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { spec } from '../support/spec.ts';
import { projectRoot } from '../support/prism.ts';

const site = join(projectRoot, 'docs', 'site');
let browser: Browser;

beforeAll(async () => {
  execFileSync(process.execPath, [join(projectRoot, 'scripts', 'build-docs.ts')], { cwd: projectRoot, stdio: 'ignore' });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
});

afterAll(async () => {
  await browser?.close();
});

async function open(file: string): Promise<{ page: Page; failedRequests: string[] }> {
  const page = await browser.newPage();
  const failedRequests: string[] = [];
  // The pages are self-contained: any request leaving the file system is a bug in the build.
  page.on('request', (request) => {
    if (!request.url().startsWith('file:') && !request.url().startsWith('data:')) failedRequests.push(request.url());
  });
  await page.goto(pathToFileURL(join(site, file)).href);
  return { page, failedRequests };
}

type Operation = { tag: string; operationId: string; summary: string };

function operationsOf(items: Record<string, Record<string, any>>): Operation[] {
  return Object.values(items).flatMap((item) =>
    ['get', 'put', 'post', 'patch', 'delete']
      .filter((m) => item[m])
      .map((m) => ({ tag: item[m].tags?.[0] as string, operationId: item[m].operationId as string, summary: item[m].summary as string })),
  );
}

describe('the OpenAPI reference (Redocly)', () => {
  const operations = [...operationsOf(spec.paths), ...operationsOf(spec.webhooks ?? {})];
  const tags = (spec.tags as { name: string }[]).map((t) => t.name);
  let sectionIds: string[] = [];
  let tagTexts: Record<string, string> = {};
  let failed: string[] = [];

  beforeAll(async () => {
    const { page, failedRequests } = await open('index.html');
    await page.waitForSelector('[id^="tag/"]', { timeout: 60_000 });
    sectionIds = await page.$$eval('[id*="/operation/"]', (nodes) => nodes.map((n) => n.id));
    for (const tag of tags) tagTexts[tag] = await page.locator(`[id="tag/${tag}"]`).first().innerText();
    failed = failedRequests;
    await page.close();
  });

  test('loads without reaching the network', () => {
    expect(failed).toEqual([]);
  });

  test.each(tags)('shows the tag %s with every one of its operations', (tag) => {
    const expected = operations.filter((o) => o.tag === tag);
    expect(expected.length, `tag ${tag} has operations`).toBeGreaterThan(0);
    expect(tagTexts[tag]).toContain(tag);
    for (const o of expected) {
      expect(sectionIds, `${o.operationId} is rendered`).toContain(`tag/${tag}/operation/${o.operationId}`);
    }
  });
});

describe('the AsyncAPI reference', () => {
  test('shows every event type as a message', async () => {
    const { page, failedRequests } = await open('asyncapi.html');
    await page.waitForSelector('#asyncapi .aui-root, #asyncapi [class*="aui"]', { timeout: 60_000 });
    const text = await page.locator('#asyncapi').innerText();
    expect(text).not.toMatch(/Error/);
    for (const type of Object.keys(spec.webhooks ?? {})) expect(text, `${type} is rendered`).toContain(type);
    expect(failedRequests).toEqual([]);
    await page.close();
  });
});

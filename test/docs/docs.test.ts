// Renders the docs portal (`npm run docs`) and opens it in headless Chromium: every tag shows all of its
// operations (webhooks included), the AsyncAPI page shows every event message, and the chat, brand voices and
// documents guides render.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { hasChromium, launchChromium } from '../support/chromium.ts';
import { navigationOf, PORTAL_NAVIGATION } from '../support/portal.ts';
import { projectRoot } from '../support/prism.ts';
import { type Json, spec } from '../support/spec.ts';

const site = join(projectRoot, 'docs', 'site');
let browser: Browser;

beforeAll(async () => {
  if (!hasChromium) return;
  execFileSync(process.execPath, [join(projectRoot, 'scripts', 'build-docs.ts')], {
    cwd: projectRoot,
    stdio: 'ignore',
  });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
});

async function open(file: string): Promise<{ page: Page; failedRequests: string[] }> {
  const page = await browser.newPage();
  const failedRequests: string[] = [];
  // The pages are self-contained: any request leaving the file system (a script, a style, data, an image such as
  // Redoc's logo) is a bug in the build.
  page.on('request', (request) => {
    if (!/^(file|data|blob):/.test(request.url())) failedRequests.push(request.url());
  });
  await page.goto(pathToFileURL(join(site, file)).href);
  return { page, failedRequests };
}

type Operation = { tag: string; operationId: string; summary: string };

function operationsOf(items: Record<string, Json>): Operation[] {
  return Object.values(items).flatMap((item) =>
    ['get', 'put', 'post', 'patch', 'delete']
      .filter((m) => item[m])
      .map((m) => ({
        tag: item[m].tags?.[0] as string,
        operationId: item[m].operationId as string,
        summary: item[m].summary as string,
      })),
  );
}

describe.skipIf(!hasChromium)('the navigation bar', () => {
  test.each(PORTAL_NAVIGATION)('%s links every other page of the portal from a bar at its top', async (file) => {
    const { page, failedRequests } = await open(file);
    const bar = page.locator('nav.portal');
    await bar.waitFor();
    expect(await bar.locator('a').evaluateAll((anchors) => anchors.map((a) => a.getAttribute('href')))).toEqual(
      navigationOf(file),
    );
    expect(await bar.locator('[aria-current="page"]').count()).toBe(1);
    const box = (await bar.boundingBox())!;
    expect(box.y).toBe(0);
    expect(box.height).toBeGreaterThan(0);
    expect(failedRequests).toEqual([]);
    await page.close();
  });
});

describe.skipIf(!hasChromium)('the OpenAPI reference (Redocly)', () => {
  const operations = [...operationsOf(spec.paths), ...operationsOf(spec.webhooks ?? {})];
  const tags = (spec.tags as { name: string }[]).map((t) => t.name);
  let page: Page;
  let failed: string[] = [];

  beforeAll(async () => {
    const opened = await open('index.html');
    page = opened.page;
    failed = opened.failedRequests;
    await page.locator('.menu-item-type-group').first().waitFor({ timeout: 60_000 });
  });

  test('loads its scripts and styles without reaching the network', () => {
    expect(failed).toEqual([]);
  });

  // Its own waits are up to 30 s each, and the scroll reads the whole page up to 60 times: on a loaded machine (two
  // test files run at once) a large tag took over the default 30 s (CI: Chatbots).
  test.each(tags)('shows the tag %s with every one of its operations', { timeout: 120_000 }, async (tag) => {
    const expected = operations.filter((o) => o.tag === tag);
    expect(expected.length, `tag ${tag} has operations`).toBeGreaterThan(0);
    // Redoc 3 shows one tag per page: open it from the side menu, as a reader would.
    const group = page.locator('[data-component-name="Menu/MenuItem"].menu-item-type-group', {
      has: page.locator(`[data-text="${tag}"]`),
    });
    const description = (spec.tags as { name: string; description: string }[]).find((t) => t.name === tag)!.description;
    // On a loaded machine Redoc sometimes drops a click that comes while it is still scrolling to the previous tag
    // (the address stayed on the previous tag's operation, the page never moved): click again, as a reader would.
    let opened = false;
    for (let attempt = 0; attempt < 5 && !opened; attempt++) {
      await group.locator('a').first().click();
      opened = await page
        .waitForFunction((text) => document.body.innerText.includes(text), description, { timeout: 8_000 })
        .then(
          () => true,
          () => false,
        );
    }
    expect(opened, `the page of ${tag} opens from the side menu`).toBe(true);
    const items = group.locator('.menu-item-type-operation [data-text]');
    await items.first().waitFor({ timeout: 30_000 });
    const listed = await items.allInnerTexts();
    // The page renders the sections near the viewport only: scroll down (a bounded number of times) and note
    // every operation whose section came into view.
    const rendered = new Set<string>();
    for (let i = 0; i < 60 && rendered.size < expected.length; i++) {
      const text = await page.locator('body').innerText();
      for (const o of expected) if (text.includes(o.summary)) rendered.add(o.summary);
      await page.mouse.wheel(0, 1500);
      await page.waitForTimeout(50);
    }
    for (const o of expected) {
      expect(listed, `${o.operationId} is in the menu of ${tag}`).toContain(o.summary);
      expect([...rendered], `${o.operationId} has its section on the page of ${tag}`).toContain(o.summary);
    }
  });
});

describe.skipIf(!hasChromium)('the AsyncAPI reference', () => {
  test('shows every event type as a message, with its payload and examples, as static HTML', async () => {
    const html = readFileSync(join(site, 'asyncapi.html'), 'utf8');
    // Static: no script to download, parse and run before anything shows, and a page a fraction of the React
    // component's size with the document inlined.
    expect(html).not.toContain('<script');
    expect(Buffer.byteLength(html)).toBeLessThan(1024 * 1024);
    const { page, failedRequests } = await open('asyncapi.html');
    const text = await page.locator('main#asyncapi').innerText();
    for (const type of Object.keys(spec.webhooks ?? {})) {
      expect(text, `${type} is rendered`).toContain(type);
      const section = page.locator(`section.message[id="message-${type}"]`);
      expect(await section.count(), `${type} has its section`).toBe(1);
      expect(await section.locator('h4', { hasText: 'Payload' }).count()).toBe(1);
      expect(await section.locator('code.name', { hasText: /^data$/ }).count(), `${type}'s data`).toBeGreaterThan(0);
    }
    for (const channel of ['Webhook endpoint']) expect(text).toContain(channel);
    expect(text).toContain('documentRealtime');
    // Inline code is code, in the guides' font, never Markdown's backticks shown as text.
    const prose = await page.locator('main#asyncapi').evaluate((main) => {
      const copy = main.cloneNode(true) as HTMLElement;
      for (const code of copy.querySelectorAll('code, pre')) code.remove();
      return copy.textContent ?? '';
    });
    expect(prose).not.toContain('`');
    const fonts = await page.evaluate(() => ({
      code: getComputedStyle(document.querySelector('main p code')!).fontFamily,
      body: getComputedStyle(document.body).fontFamily,
    }));
    const guide = await open('chat.html');
    expect(
      await guide.page.evaluate(() => ({
        code: getComputedStyle(document.querySelector('main p code')!).fontFamily,
        body: getComputedStyle(document.body).fontFamily,
      })),
    ).toEqual(fonts);
    await guide.page.close();
    expect(failedRequests).toEqual([]);
    await page.close();
  });
});

describe.skipIf(!hasChromium)('the chat guide', () => {
  test('renders every section, its examples, and links to the other pages', async () => {
    const { page, failedRequests } = await open('chat.html');
    const text = await page.locator('main').innerText();
    for (const heading of [
      'Your first completion, with no provider key',
      'With the OpenAI SDK',
      'Streaming',
      'Models',
      'Threads',
      'Parameters',
      'Errors',
      'Fallbacks',
      'Usage and spend',
    ]) {
      expect(await page.locator('h2', { hasText: heading }).count(), heading).toBe(1);
    }
    expect(text).toContain('"model": "sandbox-writer"');
    expect(text).toContain('upstream_rate_limited');
    expect(text).toContain('"models_tried": [{"model": "gpt-4o-mini", "code": "upstream_unavailable", "status": 503}]');
    const links = await page
      .locator('nav.portal a, main p a')
      .evaluateAll((anchors) => anchors.map((a) => a.getAttribute('href')));
    expect(links).toEqual([...navigationOf('chat.html'), 'tools.html']);
    expect(failedRequests).toEqual([]);
    await page.close();
  });
});

describe.skipIf(!hasChromium)('the embeddings and Responses API guide', () => {
  test('renders its sections and examples, links to the other pages and to Call tools', async () => {
    const { page, failedRequests } = await open('embeddings-and-responses.html');
    const text = await page.locator('main').innerText();
    for (const heading of ['Embeddings', 'The Responses API'])
      expect(await page.locator('h2', { hasText: heading }).count(), heading).toBe(1);
    for (const shown of ['sandbox-embedding', 'cosineSimilarity', 'previous_response_id', 'response.output_text.delta'])
      expect(text).toContain(shown);
    const links = await page
      .locator('nav.portal a, main p a')
      .evaluateAll((anchors) => anchors.map((a) => a.getAttribute('href')));
    expect(links).toEqual([...navigationOf('embeddings-and-responses.html'), 'tools.html']);
    expect(failedRequests).toEqual([]);
    await page.close();
  });
});

describe.skipIf(!hasChromium)('the tools guide', () => {
  test('renders every section and its examples, and links to the other pages', async () => {
    const { page, failedRequests } = await open('tools.html');
    const text = await page.locator('main').innerText();
    for (const heading of [
      'An agent loop, with no provider key',
      'Streaming',
      'Parallel calls and tool_choice',
      'Images',
      'The output policy covers arguments',
      'Threads',
      'Limits and errors',
    ]) {
      expect(await page.locator('h2', { hasText: heading }).count(), heading).toBe(1);
    }
    for (const shown of ['"tool_calls"', 'image_unreadable', 'delta.tool_calls']) expect(text).toContain(shown);
    const links = await page
      .locator('nav.portal a, main p a')
      .evaluateAll((anchors) => anchors.map((a) => a.getAttribute('href')));
    expect(links).toEqual(navigationOf('tools.html'));
    expect(failedRequests).toEqual([]);
    await page.close();
  });
});

describe.skipIf(!hasChromium)('the brand voices guide', () => {
  test('shows a voice trained from a sample, its sliders, and a blocked output with its event', async () => {
    const { page, failedRequests } = await open('voices.html');
    const text = await page.locator('main').innerText();
    for (const heading of [
      'Train a voice from a sample',
      'What training measures',
      'Tune it',
      'Write in the voice',
      'Check a text against the voice',
      'Banned phrases and compliance rules',
      'A blocked output',
    ]) {
      expect(await page.locator('h2', { hasText: heading }).count(), heading).toBe(1);
    }
    for (const shown of [
      '"status": "ready"',
      '"formality": 1',
      'policy_violation',
      '"type": "audit.policy.violation"',
      'event: error',
    ])
      expect(text).toContain(shown);
    const links = await page
      .locator('nav.portal a, main p a')
      .evaluateAll((anchors) => anchors.map((a) => a.getAttribute('href')));
    expect(links).toEqual(navigationOf('voices.html'));
    expect(failedRequests).toEqual([]);
    await page.close();
  });
});

describe.skipIf(!hasChromium)('the documents guide', () => {
  test('shows documents, real-time editing, versions, every AI command and publishing, with their examples', async () => {
    const { page, failedRequests } = await open('documents.html');
    const text = await page.locator('main').innerText();
    for (const heading of [
      'Create a document',
      'List and get documents',
      'Update a document',
      'Edit in real time',
      'How the socket and the API agree',
      'Versions',
      'AI commands',
      'Publishing',
      'Delete a document',
    ]) {
      expect(await page.locator('h2', { hasText: new RegExp(`^${heading}$`) }).count(), heading).toBe(1);
    }
    for (const command of ['outline', 'expand', 'summarize', 'rewrite', 'cite', 'translate']) {
      expect(await page.locator('h3', { hasText: new RegExp(`^${command}$`) }).count(), command).toBe(1);
      expect(text, `an example runs ${command}`).toContain(`"command": "${command}"`);
    }
    for (const shown of [
      '"kind": "create"',
      'version_conflict',
      '"object": "document.edit_token"',
      'new HocuspocusProvider',
      'token_wrong_document',
      '4403',
      '"kind": "realtime"',
      '"restored_from_version_number": 1',
      '"model": "sandbox-echo"',
      'selection_out_of_range',
      'policy_violation',
      '## References',
      '"type": "document.published"',
      'rel="nofollow noopener"',
      'Content-Security-Policy',
    ]) {
      expect(text, shown).toContain(shown);
    }
    // Headings get ids, so the guide's sections can be linked to.
    expect(await page.locator('h2#how-the-socket-and-the-api-agree').count()).toBe(1);
    const links = await page
      .locator('nav.portal a')
      .evaluateAll((anchors) => anchors.map((a) => a.getAttribute('href')));
    expect(links).toEqual(navigationOf('documents.html'));
    expect(failedRequests).toEqual([]);
    await page.close();
  });
});

describe.skipIf(!hasChromium)('the chatbots guide', () => {
  test('walks from a knowledge base to the widget on a site, with escalation, ratings and conversations', async () => {
    const { page, failedRequests } = await open('chatbots.html');
    const text = await page.locator('main').innerText();
    for (const heading of [
      '1. A knowledge base to answer from',
      '2. Create the chatbot',
      '3. Ask it from your server',
      '4. Hand over to a person',
      '5. Put it on your website',
      '6. Ratings and conversations',
    ]) {
      expect(await page.locator('h2', { hasText: heading }).count(), heading).toBe(1);
    }
    for (const shown of [
      '"object": "chatbot.reply"',
      '"citations"',
      '[1].',
      '"escalation_reason": "keyword"',
      'transcript_url',
      'frame-ancestors',
      '/widget.js',
      'widget does not answer the origin',
      'csat_max=2',
      '"source": "api"',
    ]) {
      expect(text, shown).toContain(shown);
    }
    expect(failedRequests).toEqual([]);
    await page.close();
  });
});

describe.skipIf(!hasChromium)('the workflows guide', () => {
  test('is in the portal: the definition, its checks, a run, the approval and the result', async () => {
    const { page, failedRequests } = await open('workflows.html');
    const text = await page.locator('main').innerText();
    for (const heading of [
      '1. The definition',
      '2. Check it and save it',
      '3. Run it',
      '4. Approve it',
      '5. The result',
      'Where runs are carried out',
    ]) {
      expect(await page.locator('h2', { hasText: heading }).count(), heading).toBe(1);
    }
    for (const shown of [
      'type: approval',
      'Content-Type: application/yaml',
      'invalid_workflow_definition',
      'approval_url',
      'workflow.run.completed',
      'WORKFLOW_CONCURRENCY',
    ]) {
      expect(text, shown).toContain(shown);
    }
    expect(failedRequests).toEqual([]);
    await page.close();
  });
});

describe.skipIf(!hasChromium)('the operate guide', () => {
  test('is in the portal: limits, fallbacks, traces and every metric the server registers', async () => {
    const { page, failedRequests } = await open('operate.html');
    expect(await page.locator('h1').innerText()).toBe('Operate content-service');
    for (const heading of ['Spend limits', 'Fallbacks', 'Traces', 'Metrics'])
      expect(await page.locator('h2', { hasText: heading }).count(), heading).toBe(1);
    const text = await page.locator('main').innerText();
    for (const shown of [
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'traceresponse',
      'gen_ai.usage.input_tokens',
      'fallback_models',
      'spend_limit_reached',
      'histogram_quantile',
    ])
      expect(text, shown).toContain(shown);
    // The list of metrics is Grafana's reference: every metric the platform and the features register is in it.
    const sources = [
      'src/platform/metrics.ts',
      'src/features/engine/observability.ts',
      'src/features/webhooks/index.ts',
      'src/features/webhooks/metrics.ts',
      'src/features/workflows/index.ts',
    ]
      .map((file) => readFileSync(join(projectRoot, file), 'utf8'))
      .join('\n');
    const names = [
      ...sources.matchAll(/name: `\$\{PREFIX\}(\w+)`/g),
      ...sources.matchAll(/name: '(\w+)',\n\s+help:/g),
    ].map((match) => `content_service_${match[1]}`);
    expect(names.length).toBeGreaterThanOrEqual(12);
    for (const name of names) expect(text, name).toContain(name);
    expect(
      await page.locator('nav.portal a, main p a').evaluateAll((anchors) => anchors.map((a) => a.getAttribute('href'))),
    ).toEqual(navigationOf('operate.html'));
    expect(failedRequests).toEqual([]);
    await page.close();
  });
});

describe.skipIf(!hasChromium)('the changelog', () => {
  test('is in the portal: the entries that contract:publish wrote, newest first', async () => {
    const { page, failedRequests } = await open('changelog.html');
    expect(await page.locator('h1').innerText()).toBe('Changelog');
    const text = await page.locator('main').innerText();
    expect(text).toContain('npm run check:breaking');
    expect(text).toContain('First published edition of v1');
    const dates = await page.locator('h2').allInnerTexts();
    expect(dates.length).toBeGreaterThan(0);
    expect([...dates].sort().reverse()).toEqual(dates);
    expect(failedRequests).toEqual([]);
    await page.close();
  });
});

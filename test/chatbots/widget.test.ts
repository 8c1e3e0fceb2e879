// The website widget (src/features/chatbots/widget/) in headless Chromium, on two real origins on loopback: a shop
// page on an allowed origin (http://localhost:<port>) pastes the snippet, opens the launcher, asks a question, sees
// the answer stream in with its source, and rates the conversation (the rating and its event reach the API); a page
// on another origin (http://127.0.0.1:<other port>) gets no launcher and a clear refusal in its console, and a frame
// it embeds by hand is blocked by frame-ancestors. Also the pages over HTTP.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { hasChromium, launchChromium } from '../support/chromium.ts';
import { eventually } from '../support/expect.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/** A customer's site on loopback: one page with the snippet (and, on request, a hand-made frame of the chat). */
async function startSite(host: string, snippet: () => string) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://site');
    const extra = url.searchParams.get('frame')
      ? `<iframe id="direct" src="${url.searchParams.get('frame')}"></iframe>`
      : '';
    res
      .writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
      .end(
        `<!doctype html><html><head><title>Shop</title></head><body><h1>Shop</h1>${extra}${snippet()}</body></html>`,
      );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://${host}:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let server: TestServer;
let allowed: Awaited<ReturnType<typeof startSite>>;
let refused: Awaited<ReturnType<typeof startSite>>;
let chatbot: { id: string; embed: { key: string; snippet: string } };

beforeAll(async () => {
  server = await startTestServer();
  const snippet = () => chatbot.embed.snippet;
  [allowed, refused] = await Promise.all([startSite('localhost', snippet), startSite('127.0.0.1', snippet)]);
  const base = (await server.call('POST', '/v1/knowledge-bases', { body: { name: 'Help' } })).body.id;
  const source = await server.call('POST', `/v1/knowledge-bases/${base}/sources`, {
    body: {
      type: 'text',
      title: 'Shipping',
      content: 'Orders ship within two working days. Delivery inside the EU takes three to five days.',
    },
  });
  await eventually(
    () => server.call('GET', `/v1/knowledge-bases/${base}/sources/${source.body.id}`),
    (got) => got.body.status === 'ready',
    20_000,
  );
  const created = await server.call('POST', '/v1/chatbots', {
    body: {
      name: 'Shop help',
      model: 'sandbox-writer',
      instructions: 'Help shoppers.',
      knowledge_base_ids: [base],
      allowed_origins: [allowed.origin],
      widget: { accent_color: '#0F766E' },
    },
  });
  expect(created.status, created.text).toBe(201);
  chatbot = created.body;
  // The snippet names the server's public base URL; the tests' server listens on its own port.
  chatbot.embed.snippet = chatbot.embed.snippet.replace(/src="[^"]+\/widget\.js"/, `src="${server.url}/widget.js"`);
});

afterAll(async () => {
  await Promise.all([server?.close(), allowed?.close(), refused?.close()]);
});

describe('the pages over HTTP', () => {
  test('the launcher is a script any site may load; the frame names the allowed origins in frame-ancestors', async () => {
    const script = await server.call('GET', '/widget.js', { key: null });
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(script.headers.get('access-control-allow-origin')).toBe('*');
    expect(script.text.length).toBeGreaterThan(1000);
    const frame = await server.call('GET', `/embed/frame?key=${chatbot.embed.key}`, { key: null });
    expect(frame.status).toBe(200);
    expect(frame.headers.get('content-security-policy')).toContain(`frame-ancestors ${allowed.origin}`);
    expect(frame.headers.get('cache-control')).toBe('no-store');
    expect(frame.text).toContain(`<meta name="embed-key" content="${chatbot.embed.key}">`);
    expect(frame.text).not.toMatch(/<script>|<style>/);
    expect(
      (await server.call('GET', '/embed/frame?key=emb_00000000000000000000000000000000', { key: null })).status,
    ).toBe(404);
    expect((await server.call('GET', '/embed/assets/frame.js', { key: null })).status).toBe(200);
  });
});

describe.skipIf(!hasChromium)('in Chromium', () => {
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function chatFrame(page: Page): Promise<Frame> {
    return eventually(
      async () => page.frames().find((frame) => frame.url().startsWith(`${server.url}/embed/frame`)),
      (frame) => frame !== undefined,
    ).then((frame) => frame!);
  }

  test('on an allowed origin: the launcher opens the chat, a reply streams in with its source, and the visitor rates it', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`${allowed.origin}/`);
    const launcher = page.locator('#content-service-chat [data-part="launcher"]');
    await launcher.waitFor();
    expect(await launcher.getAttribute('aria-label')).toBe('Open chat with Shop help');
    await launcher.click();
    const frame = await chatFrame(page);
    await frame.locator('body[data-state="ready"]').waitFor();
    expect(await frame.locator('[data-role="assistant"]').first().textContent()).toContain(
      'Hi! How can I help you today?',
    );

    await frame.locator('[data-part="input"]').fill('How long does delivery take inside the EU?');
    await frame.locator('[data-part="input"]').press('Enter');
    const answer = frame.locator('[data-role="assistant"]').nth(1);
    await answer.locator('[data-part="sources"]').waitFor();
    expect(await answer.locator('.text').textContent()).toBe('Delivery inside the EU takes three to five days [1].');
    expect(await answer.locator('[data-part="sources"]').textContent()).toBe('Shipping');

    await frame.locator('[data-score="4"]').click();
    await frame.locator('.comment input').fill('Quick answer');
    await frame.locator('[data-part="csat-send"]').click();
    await frame.locator('[data-part="thanks"]').waitFor();
    expect(errors).toEqual([]);

    const conversations = await server.call('GET', `/v1/chatbots/${chatbot.id}/conversations?channel=embed`);
    expect(conversations.body.data[0]).toMatchObject({
      message_count: 2,
      csat: { score: 4, comment: 'Quick answer', source: 'embed' },
    });
    expect(conversations.body.data[0].page_url).toMatch(new RegExp(`^${allowed.origin}`));
    await page.close();
  });

  test('on another origin: no launcher, a clear refusal in the console, and a hand-made frame is blocked', async () => {
    const page = await browser.newPage();
    const console: string[] = [];
    page.on('console', (message) => console.push(message.text()));
    await page.goto(
      `${refused.origin}/?frame=${encodeURIComponent(`${server.url}/embed/frame?key=${chatbot.embed.key}`)}`,
    );
    const marker = page.locator('#content-service-chat');
    await marker.waitFor({ state: 'attached' });
    expect(await marker.getAttribute('data-state')).toBe('refused');
    expect(await marker.getAttribute('data-code')).toBe('origin_not_allowed');
    expect(await page.locator('[data-part="launcher"]').count()).toBe(0);
    expect(console.some((line) => line.startsWith('[content-service chat]') && line.includes(refused.origin))).toBe(
      true,
    );
    // frame-ancestors: Chromium refuses to render the chat inside this page, and says why.
    await eventually(
      async () => console.some((line) => line.includes('frame-ancestors')),
      (said) => said,
    );
    const direct = await (await page.$('#direct'))!.contentFrame();
    const rendered = await direct?.evaluate(() => document.querySelector('#app') !== null).catch(() => false);
    expect(rendered ?? false).toBe(false);
    await page.close();
  });
});

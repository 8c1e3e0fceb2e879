// The reference editor (src/features/documents/editor/): the page's headers and its assets over HTTP; then, in
// headless Chromium, real-time editing of one document: two browsers with an edit token type into it and each sees
// the other's text, which the API then returns; a third with a read token sees it, says read-only, and cannot change
// it; a page without a token says how to get one; a bad token is refused.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { hasChromium, launchChromium } from '../support/chromium.ts';
import { eventually } from '../support/expect.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let documentId: string;
let editToken: string;
let readToken: string;

beforeAll(async () => {
  // Versions after 200 ms without changes, so that the session's text reaches the document while the test waits.
  server = await startTestServer({ env: { REALTIME_VERSION_IDLE_MS: '200' } });
  const created = await server.call('POST', '/v1/documents', {
    body: { title: 'Editor page', content: 'A shared draft.' },
  });
  expect(created.status, created.text).toBe(201);
  documentId = created.body.id;
  editToken = created.body.edit_token.token;
  const read = await server.call('POST', `/v1/documents/${documentId}/edit-token`, { body: { permission: 'read' } });
  expect(read.status, read.text).toBe(201);
  expect(read.body.permission).toBe('read');
  readToken = read.body.token;
});

afterAll(async () => {
  await server?.close();
});

describe('the page over HTTP', () => {
  test('is a small HTML page with a strict policy, served without a key and never cached', async () => {
    const answer = await server.call('GET', `/editor/${documentId}`, { key: null });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    expect(answer.headers.get('referrer-policy')).toBe('no-referrer');
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const policy = Object.fromEntries(
      answer.headers
        .get('content-security-policy')!
        .split(/;\s*/)
        .map((directive) => [directive.split(' ')[0], directive.split(' ').slice(1)]),
    );
    expect(policy['default-src']).toEqual(["'none'"]);
    expect(policy['script-src']).toEqual(["'self'"]);
    expect(policy['style-src']).toEqual(["'self'"]);
    expect(policy['connect-src']).toContain("'self'");
    expect(policy['frame-ancestors']).toEqual(["'none'"]);
    expect(answer.text).toContain(`<title>Editor · ${documentId}</title>`);
    expect(answer.text).toContain('<script type="module" src="/editor/assets/editor.js"></script>');
    expect(answer.text).toContain('<link rel="stylesheet" href="/editor/assets/editor.css">');
    expect(answer.text).toMatch(/<p id="status"[^>]*>/);
    expect(answer.text).toContain('<main id="editor"');
    expect(answer.text).not.toMatch(/<script>|<style>| style=/);
  });

  test('is 404 for a path that is not a document id', async () => {
    for (const id of ['doc_bad', documentId.toLowerCase(), `${documentId.slice(0, -1)}I`, `${documentId}0`, 'assets']) {
      const answer = await server.call('GET', `/editor/${id}`, { key: null });
      expect(answer.status, id).toBe(404);
      expect(answer.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    }
    // An asset it does not have falls through to the contract's 404.
    expect((await server.call('GET', '/editor/assets/other.js', { key: null })).status).toBe(404);
  });

  test('serves the client bundle with an ETag, and 304 when it matches', async () => {
    const answer = await server.call('GET', '/editor/assets/editor.js', { key: null });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    const etag = answer.headers.get('etag')!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    // Tiptap, Yjs and the provider in one minified module: no import statement left for the browser to resolve.
    expect(answer.text.length).toBeGreaterThan(100_000);
    expect(answer.text).not.toMatch(/\bimport\s*[{*"']/);
    const again = await server.call('GET', '/editor/assets/editor.js', {
      key: null,
      headers: { 'If-None-Match': etag },
    });
    expect(again.status).toBe(304);
    expect(again.headers.get('etag')).toBe(etag);
    const style = await server.call('GET', '/editor/assets/editor.css', { key: null });
    expect(style.status).toBe(200);
    expect(style.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(style.text).toContain('.ProseMirror');
  });
});

describe.skipIf(!hasChromium)('in Chromium', () => {
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const first = 'Alpha typed in the first browser';
  const second = 'Bravo typed in the second browser';

  beforeAll(async () => {
    browser = await launchChromium();
  });

  afterAll(async () => {
    await Promise.all(contexts.map((context) => context.close()));
    await browser?.close();
  });

  interface Opened {
    page: Page;
    /** Console errors and uncaught exceptions (a request the page's policy blocked is one). */
    errors: string[];
    /** The URLs of the WebSockets the page opened. */
    sockets: string[];
  }

  /** A new browser context (its own storage and connection) on the editor page, with the token in the fragment. */
  async function open(token?: string): Promise<Opened> {
    const context = await browser.newContext();
    contexts.push(context);
    const page = await context.newPage();
    const errors: string[] = [];
    const sockets: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    page.on('pageerror', (error) => errors.push(String(error)));
    page.on('websocket', (socket) => sockets.push(socket.url()));
    await page.goto(`${server.url}/editor/${documentId}${token ? `#token=${token}` : ''}`);
    return { page, errors, sockets };
  }

  const editorText = (page: Page) => page.locator('#editor .ProseMirror').innerText();
  const status = (page: Page) => page.locator('#status');

  async function synced(page: Page): Promise<void> {
    await page.locator('#status[data-state="synced"]').waitFor({ timeout: 10_000 });
  }

  /**
   * Clicks into the editor and types a paragraph of its own at the document's end or start. (The two browsers write
   * in different places: typing at one spot at once can garble characters in y-prosemirror, whatever the server.)
   */
  async function typeParagraph(page: Page, text: string, where: 'end' | 'start' = 'end'): Promise<void> {
    // No click first: the click's own selection reaches ProseMirror as a later \`selectionchange\` and could move the
    // cursor from where focus() put it to the clicked spot (the text then landed in the wrong place in 3 runs of 10).
    await page.evaluate((position) => window.editor!.commands.focus(position), where);
    await page.waitForFunction((position) => {
      const editor = window.editor!;
      const at = position === 'start' ? 1 : editor.state.doc.content.size - 1;
      return editor.isFocused && editor.state.selection.empty && editor.state.selection.from === at;
    }, where);
    if (where === 'end') await page.keyboard.press('Enter');
    await page.keyboard.type(text);
    if (where === 'start') await page.keyboard.press('Enter');
  }

  async function showsAll(page: Page, texts: string[]): Promise<void> {
    await expect
      .poll(() => editorText(page), { timeout: 10_000, interval: 50 })
      .toSatisfy((shown: string) => texts.every((text) => shown.includes(text)));
  }

  test('two browsers with an edit token see each other’s typing, and the document keeps both', async () => {
    const [a, b] = await Promise.all([open(editToken), open(editToken)]);
    await Promise.all([synced(a.page), synced(b.page)]);
    for (const { page } of [a, b]) {
      await expect(status(page).textContent()).resolves.toBe('synced');
      expect(await page.locator('#editor .ProseMirror').getAttribute('contenteditable')).toBe('true');
      expect(await editorText(page)).toContain('A shared draft.');
    }

    await Promise.all([typeParagraph(a.page, first, 'end'), typeParagraph(b.page, second, 'start')]);
    await Promise.all([showsAll(a.page, [first, second]), showsAll(b.page, [first, second])]);
    await expect
      .poll(async () => (await editorText(a.page)) === (await editorText(b.page)), { timeout: 10_000, interval: 50 })
      .toBe(true);
    const shown = await editorText(a.page);
    expect(shown.indexOf(second)).toBeLessThan(shown.indexOf('A shared draft.'));
    expect(shown.indexOf('A shared draft.')).toBeLessThan(shown.indexOf(first));

    const saved = await eventually(
      () => server.call('GET', `/v1/documents/${documentId}`),
      (answer) => answer.status === 200 && answer.body.content.includes(first) && answer.body.content.includes(second),
      15_000,
    );
    const content: string = saved.body.content;
    expect(content.indexOf(second)).toBeLessThan(content.indexOf('A shared draft.'));
    expect(content.indexOf('A shared draft.')).toBeLessThan(content.indexOf(first));

    // The token stayed in the fragment: the WebSocket's URL carries none (so no server log sees it); the page broke
    // none of its policy.
    for (const { sockets, errors } of [a, b]) {
      expect(sockets).toEqual([`${server.url.replace(/^http/, 'ws')}/v1/documents/${documentId}/realtime`]);
      expect(errors).toEqual([]);
    }

    // A read token: the text, read-only, and no way to change it.
    const c = await open(readToken);
    await synced(c.page);
    await expect(status(c.page).textContent()).resolves.toBe('synced · read-only');
    expect(await c.page.locator('#editor .ProseMirror').getAttribute('contenteditable')).toBe('false');
    await showsAll(c.page, [first, second]);
    const before = await editorText(c.page);
    await c.page.click('#editor .ProseMirror');
    await c.page.keyboard.type('Typed without permission');
    expect(await editorText(c.page)).toBe(before);
    // Even a change made through the editor's API stays in that browser: the server ignores a read-only session's
    // updates. The marker typed next in the first browser reaches the other two after it.
    await c.page.evaluate(() => window.editor!.commands.insertContent(' Inserted without permission'));
    expect(await editorText(c.page)).toContain('Inserted without permission');
    const marker = 'Charlie typed after the read-only attempt';
    await typeParagraph(a.page, marker);
    await Promise.all([showsAll(b.page, [marker]), showsAll(c.page, [marker])]);
    for (const { page } of [a, b]) expect(await editorText(page)).not.toContain('without permission');
    const after = await eventually(
      () => server.call('GET', `/v1/documents/${documentId}`),
      (answer) => answer.body.content.includes(marker),
      15_000,
    );
    expect(after.body.content).not.toContain('without permission');
    expect(c.errors).toEqual([]);
  });

  test('without a token the page says how to get one, and opens no connection', async () => {
    const { page, sockets } = await open();
    await page.locator('#missing-token').waitFor({ state: 'visible', timeout: 10_000 });
    const help = (await page.locator('#missing-token').innerText()).replace(/\s+/g, ' ');
    expect(help).toContain(`POST /v1/documents/${documentId}/edit-token`);
    expect(help).toContain(`/editor/${documentId}#token=`);
    expect(await status(page).getAttribute('data-state')).toBe('no-token');
    expect(sockets).toEqual([]);
  });

  test('a token the server does not accept is refused, and the editor stays read-only', async () => {
    const { page } = await open('edt_bm90.YSB0b2tlbg.c2lnbmF0dXJl');
    await page.locator('#status[data-state="refused"]').waitFor({ timeout: 10_000 });
    expect(await status(page).textContent()).toMatch(/^refused: \S/);
    expect(await page.locator('#editor .ProseMirror').getAttribute('contenteditable')).toBe('false');
  });
});

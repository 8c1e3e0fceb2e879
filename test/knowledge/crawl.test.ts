// The crawl of a `url` knowledge source (src/features/knowledge/crawl.ts) on a real HTTP site on loopback: breadth
// first to the crawl depth, the page limit, the same site only (`localhost` is another host than `127.0.0.1`),
// robots.txt, the pages that fail along the way, the file types that go through extraction, and the first page
// that decides the source. Loopback is reachable only with private networks allowed (the development setting);
// without it no request reaches the site.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CrawlError, type CrawledPage, crawl, normaliseUrl } from '../../src/features/knowledge/crawl.ts';

let server: http.Server;
let port: number;
let base: string;
let pdf: Uint8Array;
/** Every request the site answered: host header and path. */
const requests: Array<{ host: string; path: string }> = [];

const page = (title: string, body: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><main><h1>${title}</h1>${body}</main></body></html>`;

beforeAll(async () => {
  const document = await PDFDocument.create();
  const font = await document.embedFont(StandardFonts.Helvetica);
  document.addPage().drawText('The wholesale price list is sent on request.', { x: 50, y: 700, size: 12, font });
  pdf = await document.save();

  server = http.createServer((req, res) => {
    const path = req.url!;
    requests.push({ host: req.headers.host ?? '', path });
    const html = (body: string) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
    switch (path) {
      case '/robots.txt':
        return res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nDisallow: /private\n');
      case '/':
        return html(
          page(
            'Home',
            `<p>Welcome to the Northwind help centre.</p>
            <a href="/a">A</a> <a href="b">B</a> <a href="/a#section">A again</a> <a href="/a?lang=fr">A in French</a>
            <a href="/private/secret">Secret</a> <a href="/missing">Missing</a> <a href="/notes.txt">Notes</a>
            <a href="/guide.pdf">Guide</a> <a href="/to-metadata">Metadata</a> <a href="/moved">Moved</a>
            <a href="http://localhost:${port}/elsewhere">Another host</a> <a href="mailto:help@example.com">Mail</a>`,
          ),
        );
      case '/a':
      case '/a?lang=fr':
        return html(
          page('Shipping', '<p>Orders ship within two days.</p><a href="/a/deeper">Deeper</a> <a href="/">Home</a>'),
        );
      case '/b':
        return html(page('Returns', '<p>Returns are free for thirty days.</p><a href="/b/deeper">Deeper</a>'));
      case '/a/deeper':
        return html(
          page('Shipping abroad', '<p>International orders ship within a week.</p><a href="/a/deepest">Deepest</a>'),
        );
      case '/b/deeper':
        return html(page('Refunds', '<p>Refunds reach the card within five days.</p>'));
      case '/a/deepest':
        return html(page('Customs', '<p>Customs duties are paid by the buyer.</p>'));
      case '/notes.txt':
        return res
          .writeHead(200, { 'content-type': 'text/plain; charset=utf-8' })
          .end('Opening hours: nine to five, Monday to Friday.\n');
      case '/guide.pdf':
        return res.writeHead(200, { 'content-type': 'application/pdf' }).end(pdf);
      case '/to-metadata':
        // Link-local (cloud metadata): refused even with private networks allowed, before any connection.
        return res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      case '/moved':
        // To a page already crawled: given once.
        return res.writeHead(301, { location: '/b' }).end();
      case '/links-only':
        return html('<html><body><a href="/b"></a></body></html>');
      case '/empty':
        return html('<html><body></body></html>');
      case '/private/start':
        return html(page('Private', '<p>Not for robots.</p>'));
      case '/start-moved':
        return res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
      case '/slow-links':
        return html(
          page('Slow links', '<p>One of these never answers.</p><a href="/slow">Slow</a> <a href="/b">B</a>'),
        );
      case '/slow':
        return; // never answers
      case '/image.png':
        return res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
      default: // '/fails' and every other path not above: a 500, except /missing
        if (path === '/missing')
          return res.writeHead(404, { 'content-type': 'text/html' }).end('<title>Not found</title>');
        return res.writeHead(500, { 'content-type': 'text/plain' }).end('boom');
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

/** The requests made by the crawl run in `fn`, robots.txt left out unless asked. */
async function requestsDuring<T>(
  fn: () => Promise<T>,
  withRobots = false,
): Promise<{ value: T; made: Array<{ host: string; path: string }> }> {
  const from = requests.length;
  const value = await fn();
  return { value, made: requests.slice(from).filter((r) => withRobots || r.path !== '/robots.txt') };
}

async function crawlError(promise: Promise<unknown>): Promise<CrawlError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CrawlError);
  return error as CrawlError;
}

const dev = { allowPrivateNetworks: true };

describe('with private networks allowed (the development setting)', () => {
  test('depth 0 fetches the first page alone, as Markdown with its title', async () => {
    const { value, made } = await requestsDuring(() => crawl(`${base}/#top`, { ...dev, depth: 0, maxPages: 50 }));
    expect(value.skipped).toEqual([]);
    expect(value.pages).toHaveLength(1);
    expect(value.pages[0]).toMatchObject({ url: `${base}/`, title: 'Home' });
    expect(value.pages[0]!.text).toContain('Welcome to the Northwind help centre.');
    expect(value.pages[0]!.bytes).toBeGreaterThan(0);
    expect(made.map((r) => r.path)).toEqual(['/']);
  });

  test('depth 1: the pages the first links to on its host, each once, files through extraction; failures skipped', async () => {
    const seen: CrawledPage[] = [];
    const { value, made } = await requestsDuring(
      () => crawl(base, { ...dev, depth: 1, maxPages: 50, onPage: async (p) => void seen.push(p) }),
      true,
    );
    // Breadth first, in link order; the fragment dropped (one /a), the query kept (another page).
    expect(value.pages.map((p) => p.url)).toEqual([
      `${base}/`,
      `${base}/a`,
      `${base}/b`,
      `${base}/a?lang=fr`,
      `${base}/notes.txt`,
      `${base}/guide.pdf`,
    ]);
    expect(seen).toEqual(value.pages);
    const byUrl = new Map(value.pages.map((p) => [p.url, p]));
    expect(byUrl.get(`${base}/a`)).toMatchObject({ title: 'Shipping' });
    expect(byUrl.get(`${base}/a`)!.text).toContain('Orders ship within two days.');
    expect(byUrl.get(`${base}/notes.txt`)!.text).toContain('Opening hours: nine to five');
    expect(byUrl.get(`${base}/guide.pdf`)!.text).toContain('wholesale price list');
    expect(byUrl.get(`${base}/guide.pdf`)!.bytes).toBe(pdf.length);

    expect(value.skipped).toEqual([
      { url: `${base}/private/secret`, code: 'robots_disallowed', message: expect.stringContaining('robots.txt') },
      { url: `${base}/missing`, code: 'http_error', message: `${base}/missing answered 404 Not Found.` },
      { url: `${base}/to-metadata`, code: 'url_not_allowed', message: expect.stringContaining('169.254.169.254') },
    ]);
    // robots.txt once; the disallowed page, the other host, the next level and the metadata address never asked for.
    expect(made.filter((r) => r.path === '/robots.txt')).toHaveLength(1);
    expect(made.map((r) => r.path)).not.toContain('/private/secret');
    expect(made.map((r) => r.path)).not.toContain('/a/deeper');
    expect(made.filter((r) => !r.host.startsWith('127.0.0.1'))).toEqual([]);
    // /moved redirected to /b, which was already crawled: fetched, not given twice.
    expect(made.map((r) => r.path)).toContain('/moved');
    expect(value.pages.filter((p) => p.url === `${base}/b`)).toHaveLength(1);
  });

  test('depth 2 reaches the pages two links away, and no further', async () => {
    const { value, made } = await requestsDuring(() => crawl(`${base}/`, { ...dev, depth: 2, maxPages: 50 }));
    const urls = value.pages.map((p) => p.url);
    expect(urls).toEqual(expect.arrayContaining([`${base}/a/deeper`, `${base}/b/deeper`]));
    // The level-2 pages come after every level-1 page.
    expect(urls.indexOf(`${base}/a/deeper`)).toBeGreaterThan(urls.indexOf(`${base}/guide.pdf`));
    expect(made.map((r) => r.path)).not.toContain('/a/deepest');
    // Each URL once, although /a?lang=fr and /a both link to /a/deeper and back home.
    for (const path of ['/', '/a', '/a/deeper', '/b/deeper'])
      expect(made.filter((r) => r.path === path)).toHaveLength(1);
  });

  test('max_pages caps the pages fetched, the first included; robots-disallowed links are not counted', async () => {
    const { value, made } = await requestsDuring(() => crawl(base, { ...dev, depth: 3, maxPages: 3 }));
    expect(made.map((r) => r.path)).toEqual(['/', '/a', '/b']);
    expect(value.pages.map((p) => p.url)).toEqual([`${base}/`, `${base}/a`, `${base}/b`]);

    const six = await requestsDuring(() => crawl(base, { ...dev, depth: 1, maxPages: 6 }));
    // /, /a, /b, /a?lang=fr, (/private/secret not fetched), /missing, /notes.txt.
    expect(six.made.map((r) => r.path)).toEqual(['/', '/a', '/b', '/a?lang=fr', '/missing', '/notes.txt']);
  });

  test('an error thrown by onPage ends the crawl', async () => {
    const failing = crawl(base, {
      ...dev,
      depth: 1,
      maxPages: 50,
      onPage: async () => Promise.reject(new Error('index down')),
    });
    await expect(failing).rejects.toThrow('index down');
  });

  test('the first page decides: 500 is http_error, unreachable is fetch_failed, robots and redirects too', async () => {
    const e500 = await crawlError(crawl(`${base}/fails`, { ...dev, depth: 1, maxPages: 5 }));
    expect(e500.code).toBe('http_error');
    expect(e500.message).toBe(`${base}/fails answered 500 Internal Server Error.`);

    // A port nothing listens on.
    const closed = http.createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const closedPort = (closed.address() as AddressInfo).port;
    closed.close();
    await once(closed, 'close');
    const unreachable = await crawlError(crawl(`http://127.0.0.1:${closedPort}/`, { ...dev, depth: 1, maxPages: 5 }));
    expect(unreachable.code).toBe('fetch_failed');

    expect((await crawlError(crawl(`${base}/private/start`, { ...dev, depth: 0, maxPages: 5 }))).code).toBe(
      'robots_disallowed',
    );
    expect((await crawlError(crawl(`${base}/start-moved`, { ...dev, depth: 0, maxPages: 5 }))).code).toBe(
      'url_not_allowed',
    );
    expect((await crawlError(crawl(`${base}/image.png`, { ...dev, depth: 0, maxPages: 5 }))).code).toBe(
      'unsupported_content',
    );
    expect((await crawlError(crawl(`${base}/empty`, { ...dev, depth: 1, maxPages: 5 }))).code).toBe('empty_content');
    expect((await crawlError(crawl('ftp://127.0.0.1/', { ...dev, depth: 0, maxPages: 5 }))).code).toBe(
      'url_not_allowed',
    );
  });

  test('bounded: a page that does not answer in time is skipped; a page over the byte limit is cut, a cut PDF unreadable', async () => {
    const slow = await crawl(`${base}/slow-links`, { ...dev, depth: 1, maxPages: 5, timeoutMs: 200 });
    expect(slow.pages.map((p) => p.url)).toEqual([`${base}/slow-links`, `${base}/b`]);
    expect(slow.skipped).toEqual([
      { url: `${base}/slow`, code: 'fetch_failed', message: `${base}/slow did not answer within 0.2 s.` },
    ]);

    const cut = await crawl(base, { ...dev, depth: 0, maxPages: 1, maxBytesPerPage: 200 });
    expect(cut.pages[0]!.bytes).toBe(200);
    const pdfCut = await crawlError(
      crawl(`${base}/guide.pdf`, { ...dev, depth: 0, maxPages: 1, maxBytesPerPage: 200 }),
    );
    expect(pdfCut.code).toBe('unreadable_file');
  });

  test('a first page of links only is not a failure when the pages it links to have text', async () => {
    const { pages, skipped } = await crawl(`${base}/links-only`, { ...dev, depth: 1, maxPages: 5 });
    expect(pages.map((p) => p.url)).toEqual([`${base}/b`]);
    expect(skipped).toEqual([{ url: `${base}/links-only`, code: 'empty_content', message: expect.any(String) }]);
  });
});

describe('with private networks refused (production)', () => {
  test('a loopback URL, literal or by name, is url_not_allowed and no request reaches the site', async () => {
    for (const start of [`${base}/`, `http://localhost:${port}/`]) {
      const { made } = await requestsDuring(async () => {
        const error = await crawlError(crawl(start, { allowPrivateNetworks: false, depth: 2, maxPages: 10 }));
        expect(error.code).toBe('url_not_allowed');
        return error;
      }, true);
      expect(made).toEqual([]);
    }
  });
});

test('normaliseUrl: http(s) only, no fragment, the query kept, no credentials', () => {
  expect(normaliseUrl('/a?b=1#c', 'https://example.com/x')).toBe('https://example.com/a?b=1');
  expect(normaliseUrl('HTTPS://Example.COM')).toBe('https://example.com/');
  expect(normaliseUrl('javascript:alert(1)')).toBeNull();
  expect(normaliseUrl('mailto:a@example.com')).toBeNull();
  expect(normaliseUrl('https://user:pw@example.com/')).toBeNull();
  expect(normaliseUrl('not a url')).toBeNull();
});

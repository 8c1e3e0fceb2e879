// The pages a cite command cites (src/features/documents/sources.ts), fetched from a real HTTP server on loopback:
// the URL policy refuses http and loopback unless private networks are allowed (WEBHOOKS_ALLOW_LOOPBACK, the
// development setting), so the pages are read with it allowed, and refused without it. A page that cannot be read
// is still a source, titled by its host and path. An injected `fetch` stands in for https on the same server.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { fetchCitationSources, readHtml } from '../../src/features/documents/sources.ts';

const article = `<!doctype html>
<html><head>
  <meta charset="utf-8"><title>Retail report &amp; outlook &#8212; 2026</title>
  <style>body { color: red }</style>
  <script>var secret = "not text";</script>
</head><body>
  <nav><a href="/">Home</a> <a href="/about">About us</a></nav>
  <main>
    <h1>Retail in spring</h1>
    <!-- <p>commented out</p> -->
    <p>Sales rose <b>4%</b> in&nbsp;spring.
       Most shoppers   now buy online.</p>
    <script>document.write("no")</script>
  </main>
  <footer>© Example</footer>
</body></html>`;

let server: http.Server;
let base: string;
const requests: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    requests.push(req.url!);
    const html = (body: string, headers: Record<string, string> = {}) =>
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers }).end(body);
    switch (req.url) {
      case '/article':
        return html(article);
      case '/og':
        return html(
          '<html><head><meta content="The OG title" property="og:title"></head><body><article><p>Only the article.</p></article><aside>Related</aside></body></html>',
        );
      case '/latin1':
        return res
          .writeHead(200, { 'content-type': 'text/html; charset=iso-8859-1' })
          .end(Buffer.from('<title>Caf\xe9 cr\xe8me</title><p>D\xe9j\xe0 vu</p>', 'latin1'));
      case '/moved':
        return res.writeHead(301, { location: '/article' }).end();
      case '/loop':
        return res.writeHead(302, { location: '/loop' }).end();
      case '/missing':
        return res.writeHead(404, { 'content-type': 'text/html' }).end('<title>Not found</title>');
      case '/report.pdf':
        return res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.7');
      case '/big':
        // A title, then far more than the limit: only the start is read.
        res.writeHead(200, { 'content-type': 'text/html' });
        res.write(`<title>Big page</title><p>${'word '.repeat(1000)}</p>`);
        return res.end('x'.repeat(3 * 1024 * 1024));
      case '/slow':
        return; // never answers
      default:
        return res.writeHead(500).end();
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  server.close();
});

describe('with private networks allowed (the development setting)', () => {
  test('the title and the text of the main part: no script, style, navigation, comment or footer; entities decoded', async () => {
    const [source] = await fetchCitationSources([`${base}/article`], { allowPrivateNetworks: true });
    expect(source).toEqual({
      n: 1,
      url: `${base}/article`,
      title: 'Retail report & outlook — 2026',
      excerpt: 'Retail in spring Sales rose 4% in spring. Most shoppers now buy online.',
    });
  });

  test('numbered in request order, fetched in parallel; every failure still a source titled by host and path', async () => {
    const urls = ['/og', '/moved', '/missing', '/report.pdf', '/loop', '/latin1'].map((path) => base + path);
    const sources = await fetchCitationSources(urls, { allowPrivateNetworks: true });
    expect(sources).toEqual([
      { n: 1, url: urls[0], title: 'The OG title', excerpt: 'Only the article.' },
      // A redirect is followed (and checked again); the source keeps the URL it was given.
      {
        n: 2,
        url: urls[1],
        title: 'Retail report & outlook — 2026',
        excerpt: expect.stringContaining('Sales rose 4%'),
      },
      { n: 3, url: urls[2], title: '127.0.0.1/missing', excerpt: '' },
      { n: 4, url: urls[3], title: '127.0.0.1/report.pdf', excerpt: '' },
      { n: 5, url: urls[4], title: '127.0.0.1/loop', excerpt: '' },
      { n: 6, url: urls[5], title: 'Café crème', excerpt: 'Déjà vu' },
    ]);
  });

  test('at most maxBytes of a page, and at most timeoutMs for it', async () => {
    const started = Date.now();
    const [big, slow] = await fetchCitationSources([`${base}/big`, `${base}/slow`], {
      allowPrivateNetworks: true,
      maxBytes: 64 * 1024,
      timeoutMs: 300,
    });
    expect(Date.now() - started).toBeLessThan(3000);
    expect(big!.title).toBe('Big page');
    // About 1,500 characters, cut at a word.
    expect(big!.excerpt).toMatch(/^(word ){299}word…$/);
    expect(slow).toEqual({ n: 2, url: `${base}/slow`, title: '127.0.0.1/slow', excerpt: '' });
  });
});

describe('without private networks (production): the URL policy refuses', () => {
  test('http and loopback addresses are never requested; the source is the URL, titled by host and path', async () => {
    const before = requests.length;
    const port = new URL(base).port;
    const sources = await fetchCitationSources(
      [`${base}/article`, `https://127.0.0.1:${port}/article`, `https://localhost:${port}/docs/`],
      { allowPrivateNetworks: false },
    );
    expect(sources).toEqual([
      { n: 1, url: `${base}/article`, title: '127.0.0.1/article', excerpt: '' },
      { n: 2, url: `https://127.0.0.1:${port}/article`, title: '127.0.0.1/article', excerpt: '' },
      // A name that resolves to loopback: refused at connect time by the guarded lookup.
      { n: 3, url: `https://localhost:${port}/docs/`, title: 'localhost/docs', excerpt: '' },
    ]);
    expect(requests.length).toBe(before);
  });

  test('an injected fetch (https to a public name, served here) is used; a literal private address is refused before it, even after a redirect', async () => {
    const asked: string[] = [];
    const fetch: typeof globalThis.fetch = async (input, init) => {
      const url = new URL(String(input));
      asked.push(url.href);
      if (url.pathname === '/to-private')
        return new Response(null, { status: 302, headers: { location: 'https://10.0.0.8/admin' } });
      return globalThis.fetch(`${base}${url.pathname}`, init);
    };
    const sources = await fetchCitationSources(
      ['https://docs.example.test/article', 'https://[::1]/article', 'https://docs.example.test/to-private'],
      { allowPrivateNetworks: false, fetch },
    );
    expect(sources.map((s) => [s.n, s.title])).toEqual([
      [1, 'Retail report & outlook — 2026'],
      [2, '[::1]/article'],
      [3, 'docs.example.test/to-private'],
    ]);
    expect(asked).toEqual(['https://docs.example.test/article', 'https://docs.example.test/to-private']);
  });
});

describe('readHtml', () => {
  test('an unclosed script takes the rest of the page; a missing </head> does not', () => {
    expect(readHtml('<title>T</title><p>Before</p><script>never closed <p>hidden</p>')).toEqual({
      title: 'T',
      excerpt: 'Before',
    });
    expect(readHtml('<head><title>T</title><body><p>Shown</p>')).toEqual({ title: 'T', excerpt: 'Shown' });
  });

  test('no title and no og:title: an empty title (the caller falls back to host and path)', () => {
    expect(readHtml('<p>Just text &lt;b&gt; &#x1F600;</p>')).toEqual({ title: '', excerpt: 'Just text <b> 😀' });
  });
});

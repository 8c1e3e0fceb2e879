// The web pages a `cite` command cites: each URL fetched once, best effort (5 s, 2 MB), through the platform's SSRF
// guard (url-guard.ts: https only and public addresses only, every address checked at connect time), for its title
// and a plain-text excerpt the model cites from. A page that cannot be read is still a source: its reference is the
// URL itself, titled by its host and path, with no excerpt.
import { decode } from '../../platform/text-decoding.ts';
import { fetchGuarded, type GuardedResponse, UrlNotAllowedError } from '../../platform/url-guard.ts';
import type { CitationSource } from './commands.ts';

export interface SourceFetchOptions {
  /** The development setting of the webhooks (WEBHOOKS_ALLOW_LOOPBACK): also http, and loopback or private hosts. */
  allowPrivateNetworks: boolean;
  /** For the whole of each URL, redirects included. Default 5 s. */
  timeoutMs?: number;
  /** At most this much of each page is read (its start: the title is in the head). Default 2 MB. */
  maxBytes?: number;
  /**
   * Replaces the guarded transport (tests). The scheme and IP-literal checks still apply; the check of the
   * addresses a host name resolves to is the guarded transport's, so a replacement must do its own.
   */
  fetch?: typeof fetch;
}

const EXCERPT_CHARS = 1500;

/** The sources, numbered from 1 in the order of `urls`, fetched in parallel. Never throws. */
export async function fetchCitationSources(urls: string[], options: SourceFetchOptions): Promise<CitationSource[]> {
  return Promise.all(urls.map((url, i) => fetchSource(url, i + 1, options)));
}

/** What a source is called when its page gives no title: its host and path. */
export function fallbackTitle(raw: string): string {
  try {
    const url = new URL(raw);
    return `${url.hostname}${url.pathname.replace(/(?<!\/)\/+$/, '')}`;
  } catch {
    return raw;
  }
}

async function fetchSource(url: string, n: number, options: SourceFetchOptions): Promise<CitationSource> {
  const source: CitationSource = { n, url, title: fallbackTitle(url), excerpt: '' };
  try {
    const page = await fetchPage(url, options);
    if (!page) return source;
    if (page.html) {
      const { title, excerpt } = readHtml(page.text);
      return { ...source, title: title || source.title, excerpt };
    }
    return { ...source, excerpt: excerptOf(page.text) };
  } catch {
    // Refused, unreachable, too slow, broken: the reference is still the URL.
    return source;
  }
}

/** The page's text (at most `maxBytes` of it), whether it is HTML; null for an answer that is not a readable page. */
async function fetchPage(raw: string, options: SourceFetchOptions): Promise<{ text: string; html: boolean } | null> {
  const readable = (type: string) => /html|xml/.test(type || 'text/html') || type.startsWith('text/plain');
  let page: GuardedResponse;
  try {
    page = await fetchGuarded(raw, {
      ...options,
      headers: {
        accept: 'text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1',
        'user-agent': 'content-service/0.1 (citation sources)',
      },
      readBody: readable,
    });
  } catch (error) {
    if (error instanceof UrlNotAllowedError) return null;
    throw error;
  }
  const type = page.contentType || 'text/html';
  if (page.status < 200 || page.status > 299 || !readable(type)) return null;
  const html = /html|xml/.test(type);
  return { text: decode(page.bytes, type, html), html };
}

const ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  ndash: '–',
  mdash: '—',
  hellip: '…',
  lsquo: '‘',
  rsquo: '’',
  ldquo: '“',
  rdquo: '”',
  laquo: '«',
  raquo: '»',
  middot: '·',
  bull: '•',
  copy: '©',
  reg: '®',
  trade: '™',
  euro: '€',
};

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]{2,8});/gi, (entity, name: string) => {
    if (name[0] !== '#') return ENTITIES[name.toLowerCase()] ?? entity;
    const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : Number(name.slice(1));
    return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : entity;
  });
}

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** The first ~1,500 characters of plain text, cut at a space, with an ellipsis when cut. */
function excerptOf(text: string): string {
  const plain = collapse(text);
  if (plain.length <= EXCERPT_CHARS) return plain;
  let cut = plain.lastIndexOf(' ', EXCERPT_CHARS);
  if (cut < EXCERPT_CHARS - 300) cut = EXCERPT_CHARS;
  const code = plain.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--;
  return `${plain.slice(0, cut)}…`;
}

/**
 * HTML without these elements (and comments). Linear: each opening tag found is closed by the first closing tag
 * after it, looked up from there. An element never closed takes the rest of the page with it when `unclosed` is
 * `rest` (a script's text runs to the end), else only its opening tag goes (HTML may leave out `</head>`). A closing
 * tag looked for in vain is not looked for again: `<nav>` repeated without `</nav>` made the search quadratic.
 */
function withoutElements(html: string, names: string[], unclosed: 'rest' | 'tag'): string {
  const open = new RegExp(`<!--|<(${names.join('|')})(?=[\\s/>])`, 'gi');
  const neverClosed = new Set<string>();
  let out = '';
  let from = 0;
  for (let match = open.exec(html); match; match = open.exec(html)) {
    out += `${html.slice(from, match.index)} `;
    const name = match[0] === '<!--' ? '--' : match[1]!.toLowerCase();
    let end: RegExpExecArray | null = null;
    if (!neverClosed.has(name)) {
      const close = name === '--' ? /-->/g : new RegExp(`</${name}\\s*>`, 'gi');
      close.lastIndex = open.lastIndex;
      end = close.exec(html);
      if (!end) neverClosed.add(name);
    }
    if (!end && unclosed === 'rest') return out;
    const tagEnd = html.indexOf('>', open.lastIndex);
    from = open.lastIndex = end ? end.index + end[0].length : tagEnd < 0 ? html.length : tagEnd + 1;
  }
  return out + html.slice(from);
}

function attributes(tag: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of tag.matchAll(/(?<![\w:-])(?=([\w:-]+))\1\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/g))
    found.set(m[1]!.toLowerCase(), m[2] ?? m[3] ?? m[4] ?? '');
  return found;
}

/** The title of a page (`<title>`, else `og:title`) and the start of its text. */
export function readHtml(whole: string): { title: string; excerpt: string } {
  // The title and the excerpt are at the start: the rest of a large page is not read.
  const html = whole.slice(0, 512 * 1024);
  const page = withoutElements(html, ['script', 'style', 'noscript', 'template', 'svg'], 'rest');
  let title = /<title\b[^<>]*>([^<]*)<\/title\s*>/i.exec(page)?.[1] ?? '';
  if (!collapse(title)) {
    for (const [tag] of page.matchAll(/<meta\b[^<>]*>/gi)) {
      const attrs = attributes(tag);
      if ((attrs.get('property') ?? attrs.get('name')) === 'og:title') title = attrs.get('content') ?? '';
      if (collapse(title)) break;
    }
  }
  // The text of the main part of the page when it says which that is; navigation and the like are not the source.
  let body = withoutElements(
    page,
    ['head', 'title', 'nav', 'footer', 'aside', 'form', 'iframe', 'button', 'select'],
    'tag',
  );
  for (const name of ['main', 'article']) {
    const start = new RegExp(`<${name}\\b[^<>]*>`, 'i').exec(body);
    if (!start) continue;
    let end = -1;
    for (const close of body.matchAll(new RegExp(`</${name}\\s*>`, 'gi'))) end = close.index;
    body = body.slice(start.index + start[0].length, end > start.index ? end : undefined);
    break;
  }
  const text = decodeEntities(body.replace(/<[^<>]*>/g, ' '));
  return { title: collapse(decodeEntities(title)).slice(0, 300), excerpt: excerptOf(text) };
}

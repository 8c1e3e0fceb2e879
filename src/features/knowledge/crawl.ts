// The pages of a `url` source (KnowledgeBaseSourceUrlCreateRequest): the first page, and with a crawl depth above 0
// the pages it links to on the same site (scheme, host and port), breadth first, each URL once, at most `maxPages`
// fetched. Every fetch, robots.txt included, goes through the SSRF guard of the documents' cite sources
// (`fetchGuarded`: each redirect hop checked, every address checked at connect time). robots.txt is read once per
// site, for the user agent `content-service`; a missing or failing one allows everything. HTML is turned into
// Markdown (and gives the links to follow); PDF, Word, Markdown, CSV and plain text go through `extractText`.
//
// The first page decides the source: when it fails, `crawl` throws a `CrawlError` with the reason (the codes of
// KnowledgeBaseSourceError). A later page that fails is listed in `skipped` and the crawl goes on.
import robotsModule from 'robots-parser';
import { decode } from '../../platform/text-decoding.ts';
import { fetchGuarded, type GuardedResponse, UrlNotAllowedError } from '../../platform/url-guard.ts';
import { extractTextOffLoop, htmlToMarkdownOffLoop } from './extract-pool.ts';

export interface CrawledPage {
  /** The address that answered (after redirects), without its fragment. */
  url: string;
  title: string | null;
  /** The page's clean text (Markdown for HTML). */
  text: string;
  /** The size of the body read. */
  bytes: number;
}

export type CrawlErrorCode =
  | 'fetch_failed'
  | 'http_error'
  | 'url_not_allowed'
  | 'robots_disallowed'
  | 'unsupported_content'
  | 'unreadable_file'
  | 'empty_content';

export class CrawlError extends Error {
  readonly code: CrawlErrorCode;
  constructor(code: CrawlErrorCode, message: string) {
    super(message);
    this.name = 'CrawlError';
    this.code = code;
  }
}

export interface CrawlOptions {
  /** How many links deep to follow from the first page; 0 fetches it alone. */
  depth: number;
  /** The most pages fetched (requested), the first included; robots.txt is not counted. */
  maxPages: number;
  /** The development setting (WEBHOOKS_ALLOW_LOOPBACK): loopback and private addresses too. */
  allowPrivateNetworks: boolean;
  /** For each page, redirects and body included. Default 10 s. */
  timeoutMs?: number;
  /** At most this much of each page is read. Default 5 MB. */
  maxBytesPerPage?: number;
  /** Replaces the guarded transport (tests); the scheme and IP-literal checks still apply. */
  fetch?: typeof fetch;
  /** Called for each page as it is done, before the next is fetched; an error it throws ends the crawl. */
  onPage?: (page: CrawledPage) => Promise<void>;
}

export interface CrawlResult {
  pages: CrawledPage[];
  skipped: Array<{ url: string; code: CrawlErrorCode; message: string }>;
}

const USER_AGENT = 'content-service';
const ROBOTS_MAX_BYTES = 512 * 1024;
const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml']);
/** Binary formats a cut body cannot be read from; text is read as far as it goes. */
const WHOLE_TYPES = new Set([
  'application/pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
]);
/** The media type of a body served without one (or as application/octet-stream), by the URL's extension. */
const BY_EXTENSION: Record<string, string> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  md: 'text/markdown',
  markdown: 'text/markdown',
  txt: 'text/plain',
  csv: 'text/csv',
  html: 'text/html',
  htm: 'text/html',
};

type Robots = { isAllowed(url: string, ua?: string): boolean | undefined } | null;
// A CommonJS module whose types declare an ES default export: at run time the default import is the function itself.
const robotsParser = robotsModule as unknown as (url: string, contents: string) => NonNullable<Robots>;

/** The URL to crawl for an href: http(s) only, no credentials, no fragment (the query is kept); null otherwise. */
export function normaliseUrl(raw: string, base?: string): string | null {
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    return null;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) return null;
  url.hash = '';
  return url.href;
}

export async function crawl(start: string, options: CrawlOptions): Promise<CrawlResult> {
  const first = normaliseUrl(start);
  if (!first) throw new CrawlError('url_not_allowed', `${start} is not an http or https URL.`);
  const depth = Math.max(0, Math.floor(options.depth));
  const maxPages = Math.max(1, Math.floor(options.maxPages));
  const fetchOptions = {
    allowPrivateNetworks: options.allowPrivateNetworks,
    // A knowledge source may be http (the contract says so); the addresses are what the guard is for.
    allowHttp: true,
    timeoutMs: options.timeoutMs ?? 10_000,
    maxBytes: options.maxBytesPerPage ?? 5 * 1024 * 1024,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  };

  // robots.txt, once per site (a redirect of a page may lead to another).
  const robots = new Map<string, Promise<Robots>>();
  const robotsFor = (origin: string): Promise<Robots> => {
    let found = robots.get(origin);
    if (!found) {
      found = readRobots(origin, fetchOptions);
      robots.set(origin, found);
    }
    return found;
  };
  const allowed = async (url: string) => (await robotsFor(new URL(url).origin))?.isAllowed(url, USER_AGENT) !== false;

  const result: CrawlResult = { pages: [], skipped: [] };
  let site = new URL(first).origin;
  const seen = new Set<string>([first]);
  // The pages that answered, by the URL that answered: two links that redirect to one page give it once.
  const done = new Set<string>();
  // Breadth first: the queue holds the pages of one level before those of the next.
  const queue: Array<{ url: string; level: number }> = [{ url: first, level: 0 }];
  let fetched = 0;
  let emptyFirst: CrawlError | null = null;

  for (let next = 0; next < queue.length && fetched < maxPages; next++) {
    const { url, level } = queue[next]!;
    const isFirst = next === 0;
    if (done.has(url)) continue;
    try {
      if (!(await allowed(url)))
        throw new CrawlError('robots_disallowed', `robots.txt of ${new URL(url).host} disallows ${url}.`);
      fetched++;
      const page = await fetchOne(url, fetchOptions, allowed);
      // A first page that redirects to another site (http → https, example.com → www.example.com) moves the crawl there.
      if (isFirst) site = new URL(page.url).origin;
      if (done.has(page.url)) continue;
      done.add(page.url);
      seen.add(page.url);
      if (level < depth && new URL(page.url).origin === site) {
        for (const link of page.links) {
          const target = normaliseUrl(link);
          if (!target || seen.has(target) || new URL(target).origin !== site) continue;
          seen.add(target);
          queue.push({ url: target, level: level + 1 });
        }
      }
      if (!page.text.trim()) throw new CrawlError('empty_content', `No text could be extracted from ${page.url}.`);
      const crawled: CrawledPage = { url: page.url, title: page.title, text: page.text, bytes: page.bytes };
      result.pages.push(crawled);
      await options.onPage?.(crawled);
    } catch (error) {
      if (!(error instanceof CrawlError)) throw error;
      // An empty first page that links on (a page of links) does not fail the source; the pages it links to may.
      if (isFirst && error.code === 'empty_content' && queue.length > 1) {
        emptyFirst = error;
      } else if (isFirst) {
        throw error;
      }
      result.skipped.push({ url, code: error.code, message: error.message });
    }
  }
  if (result.pages.length === 0 && emptyFirst)
    throw new CrawlError('empty_content', `No text could be extracted from ${first} or the pages it links to.`);
  return result;
}

type FetchOptions = Parameters<typeof fetchGuarded>[1];

async function readRobots(origin: string, options: FetchOptions): Promise<Robots> {
  const url = `${origin}/robots.txt`;
  try {
    const answer = await fetchGuarded(url, {
      ...options,
      maxBytes: ROBOTS_MAX_BYTES,
      headers: { accept: 'text/plain', 'user-agent': `${USER_AGENT}/0.1` },
    });
    if (answer.status < 200 || answer.status > 299) return null;
    return robotsParser(url, decode(answer.bytes, answer.contentType, false));
  } catch {
    // Unreachable, refused or too slow: no rules. (A refused site refuses its pages just the same.)
    return null;
  }
}

/** One page: fetched, checked, and read. Throws a `CrawlError` saying why it cannot be used. */
async function fetchOne(
  url: string,
  options: FetchOptions,
  allowed: (url: string) => Promise<boolean>,
): Promise<{ url: string; title: string | null; text: string; bytes: number; links: string[] }> {
  let answer: GuardedResponse;
  try {
    answer = await fetchGuarded(url, {
      ...options,
      headers: {
        accept:
          'text/html,application/xhtml+xml,text/markdown,text/plain,text/csv,application/pdf,application/vnd.openxmlformats-officedocument.wordprocessingml.document;q=0.9,*/*;q=0.1',
        'user-agent': `${USER_AGENT}/0.1 (knowledge crawler)`,
      },
    });
  } catch (error) {
    if (error instanceof UrlNotAllowedError) throw new CrawlError('url_not_allowed', `${error.message}.`);
    const timedOut = (error as Error)?.name === 'TimeoutError' || (error as Error)?.name === 'AbortError';
    const reason = timedOut
      ? `did not answer within ${(options.timeoutMs ?? 0) / 1000} s`
      : `could not be reached (${describe(error)})`;
    throw new CrawlError('fetch_failed', `${url} ${reason}.`);
  }
  const finalUrl = normaliseUrl(answer.finalUrl) ?? answer.finalUrl;
  if (answer.status >= 300 && answer.status < 400)
    throw new CrawlError('http_error', `${url} redirected too many times.`);
  if (answer.status < 200 || answer.status > 299)
    throw new CrawlError('http_error', `${finalUrl} answered ${answer.status}${statusText(answer.status)}.`);
  // The page that answered is the one robots.txt must allow, after a redirect too.
  if (finalUrl !== url && !(await allowed(finalUrl)))
    throw new CrawlError('robots_disallowed', `robots.txt of ${new URL(finalUrl).host} disallows ${finalUrl}.`);

  const mediaType = mediaTypeOf(answer, finalUrl);
  if (HTML_TYPES.has(mediaType)) {
    const { title, text, links } = await htmlToMarkdownOffLoop(
      decode(answer.bytes, answer.contentType, true),
      finalUrl,
    );
    return { url: finalUrl, title, text, bytes: answer.bytes.length, links };
  }
  if (answer.truncated && WHOLE_TYPES.has(mediaType)) {
    throw new CrawlError(
      'unreadable_file',
      `${finalUrl} is larger than ${Math.round((options.maxBytes ?? 0) / 1024 / 1024)} MB, the most read of a page.`,
    );
  }
  try {
    const charset = /;\s*charset=[^;]+/.exec(answer.contentType)?.[0] ?? '';
    const { title, text } = await extractTextOffLoop(answer.bytes, `${mediaType}${charset}`, {
      url: finalUrl,
      name: new URL(finalUrl).pathname.split('/').pop() || new URL(finalUrl).hostname,
    });
    return { url: finalUrl, title, text, bytes: answer.bytes.length, links: [] };
  } catch (error) {
    const code = (error as { code?: unknown })?.code;
    if (code === 'unsupported_content' || code === 'unreadable_file' || code === 'empty_content') {
      throw new CrawlError(code, `${finalUrl}: ${(error as Error).message}`);
    }
    throw error;
  }
}

/** The media type of an answer without parameters; by the URL's extension when the server does not say. */
function mediaTypeOf(answer: GuardedResponse, url: string): string {
  const declared = answer.contentType.split(';')[0]!.trim();
  if (declared && declared !== 'application/octet-stream' && declared !== 'binary/octet-stream') return declared;
  const extension = /\.([a-z0-9]+)$/i.exec(new URL(url).pathname)?.[1]?.toLowerCase();
  const byExtension = extension ? BY_EXTENSION[extension] : undefined;
  if (byExtension) return byExtension;
  if (Buffer.from(answer.bytes.subarray(0, 5)).toString('latin1') === '%PDF-') return 'application/pdf';
  // No type said and none to guess: a web page, as browsers take it.
  return declared || 'text/html';
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  410: 'Gone',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

function statusText(status: number): string {
  const text = STATUS_TEXT[status];
  return text ? ` ${text}` : '';
}

function describe(error: unknown): string {
  const code =
    (error as { code?: unknown; cause?: { code?: unknown } })?.code ??
    (error as { cause?: { code?: unknown } })?.cause?.code;
  return typeof code === 'string' ? code : error instanceof Error ? error.message : String(error);
}

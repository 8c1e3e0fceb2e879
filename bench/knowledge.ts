// `npm run bench:knowledge`: knowledge-base ingestion throughput and search latency, on SQLite and on PostgreSQL
// (when reachable). Not part of `npm test`. Issue 13's target: a search p99 under 50 ms on a corpus of at least
// 10,000 chunks; ingestion throughput (pages/s) has none and is reported.
//
// The corpus: BENCH_PAGES (500) deterministic English-like pages of some 10,000 characters each (a seeded PRNG over a
// vocabulary of 3,000 words: 92 function words, then 169 common product words, then made-up ones, drawn by Zipf's
// law (rank r ∝ 1 / r, so "the" is one word in nine and the function words six in ten), in sentences, paragraphs and
// sections), each page with four rarer topic words of its own (every topic word is shared by some three pages) in
// its title, its headings and one sentence in five, so that queries have real answers. The knowledge base
// chunks at 200 tokens with an overlap of 25 (the default 512 would give some 4,000 chunks from these pages), which
// makes some 11,900 chunks of the 500 pages; the report says how many, and whether that reaches 10,000.
//
// Ingestion, two ways, from the request that adds the source to the poll that sees it ready (every 100 ms, so the
// figure is within 0.1 s):
//   - crawl: the pages served by a loopback HTTP site in this process, added as ONE url source: its first page (an
//     article that also lists all the others), crawl_depth 1, max_pages BENCH_PAGES (the contract allows 500). So it
//     is the whole path of a crawled page: robots.txt, the guarded fetch, Readability and turndown, chunking (token
//     counts), the inserts and the full-text index. The server must run with WEBHOOKS_ALLOW_LOOPBACK=true to fetch
//     loopback, which config.ts refuses with NODE_ENV=production: this server alone runs with NODE_ENV=development
//     (SEED_DEMO=false, LOG_LEVEL=warn), which changes nothing else of ours.
//   - text: the same pages' text (Markdown) as BENCH_PAGES text sources of a second knowledge base, added four at a
//     time, until its source_status_counts say all are ready; chunking and indexing without the crawl. Measured after
//     the searches, so that the searched corpus is the crawled one alone.
// pages/s = pages / seconds; chunks/s = chunks / seconds.
//
// Search: the server runs as `npm start` does in production (NODE_ENV=production, LOG_LEVEL=warn, REDIS_URL unset, its
// own process) on the database the crawl filled. POST /v1/knowledge-bases/{id}/search with top_k 10, at 1 and at
// BENCH_CONNECTIONS (10) concurrent requests, BENCH_DURATION seconds (10) each after BENCH_WARMUP seconds (2).
// Queries (2,000, deterministic, cycled): seven in ten are 1 to 4 topic words of one page; three in ten are
// question-like ("how do I … the …?"), whose common words (how, do, the) occur in nearly every chunk: SQLite's
// FTS5 matches them all, PostgreSQL's english configuration drops them as stop words. Latency: from the request being
// written to its answer read, client-side; "source page in top 10": how many answers include a chunk of the page the
// query's topic words were drawn from. Requests rotate over BENCH_KEYS (300) keys, so no key nears its 600 a minute.
// On PostgreSQL the searches run twice: on the tables as the crawl left them (the planner has statistics only if
// autovacuum has analysed them meanwhile, which it does within a minute or so of the inserts when it is on, never
// when it is off), then after an ANALYZE of the knowledge tables, as autovacuum leaves them.
//
// Hybrid search (BENCH_HYBRID=true): the servers get an OpenAI key and base URL pointing at the tests' fake OpenAI
// upstream in this process (test/support/fake-providers.ts), so every chunk is embedded as it is ingested and every
// search embeds its query and fuses the full-text ranking with the cosine similarities computed in the server. The
// fake's vectors have 256 dimensions (text-embedding-3-small's have 1,536: six times the arithmetic per chunk) and
// answer at once (a real provider adds its own latency to ingestion and to each search); the figures are the
// server's own share.
//
// Settings: BENCH_HYBRID (false), BENCH_PAGES (500, at most 500), BENCH_DURATION (10), BENCH_WARMUP (2), BENCH_CONNECTIONS (10),
// BENCH_KEYS (300), BENCH_DATABASES ("sqlite,postgres"), BENCH_POSTGRES_URL (postgres://postgres@127.0.0.1:5432/test;
// a fresh database is created next to it and dropped after), BENCH_NODE_ARGS (Node options for the servers:
// `--cpu-prof --cpu-prof-dir=DIR` profiles them).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { COMMAND_LINE_FLAGS } from '../src/platform/collector.ts';
import { type FakeProvider, startFakeOpenAi } from '../test/support/fake-providers.ts';
import { freshPostgresDatabase, POSTGRES_URL } from './postgres.ts';
import { cleanUp, cleanups, freePort, positive, root, seedWorkspace, startProcess } from './support.ts';

const PAGES = positive('BENCH_PAGES', 500);
const DURATION = positive('BENCH_DURATION', 10);
const WARMUP = positive('BENCH_WARMUP', 2, true);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 10);
const KEYS = positive('BENCH_KEYS', 300);
const DATABASES = (process.env.BENCH_DATABASES ?? 'sqlite,postgres')
  .split(',')
  .map((d) => d.trim())
  .filter(Boolean);
const HYBRID = process.env.BENCH_HYBRID === 'true';
/** The fake OpenAI upstream of hybrid runs. */
let embeddings: FakeProvider | undefined;
const P99_TARGET_MS = 50;
const CORPUS_TARGET_CHUNKS = 10_000;
const CHUNKING = { max_chunk_tokens: 200, overlap_tokens: 25 };
const PAGE_CHARACTERS = 10_000;
const TOPICS_PER_PAGE = 4;
const TOP_K = 10;
const QUERIES = 2000;
const POLL_MS = 100;
/** Text sources added at once. */
const TEXT_CONCURRENCY = 4;
/** How long an ingestion may take before the benchmark gives up. */
const INGEST_TIMEOUT_MS = 600_000;

if (!Number.isInteger(PAGES) || PAGES > 500)
  throw new Error(`BENCH_PAGES must be a whole number up to 500 (a url source's max_pages), got ${PAGES}`);
for (const database of DATABASES)
  if (database !== 'sqlite' && database !== 'postgres')
    throw new Error(`BENCH_DATABASES: unknown database ${database} (sqlite, postgres)`);

// ------------------------------------------------------------------------------------------------------- corpus

/** mulberry32: a small seeded PRNG, so the corpus and the queries are the same on every run. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FUNCTION_WORDS = (
  'the of and to a in is that for it as with on be by this are or from at which an but not have has they you we can will their more ' +
  'when if one all also there been into its other than some these would only each may most new them two first about then such so over ' +
  'any after between where both through before while should because under very well just those same many often however without again ' +
  'every our your could how what why do does i my'
).split(' ');
const COMMON_WORDS = (
  'account team page setting report customer order payment invoice plan user access file folder project task message email link price ' +
  'product service support update change data list view field form rule step option default limit period date time number amount status ' +
  'record note draft review release version feature issue request answer question problem error result share export import search filter ' +
  'group role member owner admin key token session device browser phone address region language currency tax discount refund shipping ' +
  'delivery stock item catalogue brand voice style tone document template workflow schedule calendar event reminder notification alert ' +
  'dashboard chart metric goal budget cost usage quota backup restore archive history log audit policy security password login sign ' +
  'create open close save delete remove add edit move copy send receive check choose select enable disable allow block keep find show ' +
  'hide start stop run build test learn need want use make take give set get read write follow return apply connect sync upload download ' +
  'install configure manage track measure improve reduce increase'
).split(' ');
const ONSETS = [
  'b',
  'c',
  'd',
  'f',
  'g',
  'h',
  'j',
  'k',
  'l',
  'm',
  'n',
  'p',
  'r',
  's',
  't',
  'v',
  'w',
  'br',
  'cl',
  'cr',
  'dr',
  'fl',
  'gr',
  'pl',
  'pr',
  'sh',
  'sk',
  'sl',
  'sp',
  'st',
  'str',
  'th',
  'tr',
  'ch',
];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ea', 'ee', 'oo', 'ou', 'oa', 'ie'];
const CODAS = ['', '', '', 'n', 'r', 'l', 's', 't', 'm', 'nd', 'st', 'ck', 'nt', 'rd', 'ng'];
const SUFFIXES = ['', '', '', '', 'er', 'ing', 'ed', 'ly', 'tion', 'ment', 'ness', 'able', 'ity', 'al', 'ous'];

/** `count` made-up words of `syllables` syllables and an English ending, none of them in `taken` (which they join). */
function madeUpWords(random: () => number, count: number, syllables: [number, number], taken: Set<string>): string[] {
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  const words: string[] = [];
  while (words.length < count) {
    const n = syllables[0] + Math.floor(random() * (syllables[1] - syllables[0] + 1));
    let word = '';
    for (let s = 0; s < n; s++) word += pick(ONSETS) + pick(VOWELS) + (s === n - 1 ? pick(CODAS) : '');
    word += pick(SUFFIXES);
    if (word.length < 4 || taken.has(word)) continue;
    taken.add(word);
    words.push(word);
  }
  return words;
}

/** A sampler of ranks 0 … size − 1, rank r with a weight 1 / (r + 1)^exponent, as word frequencies go. */
function zipf(size: number, exponent: number): (random: () => number) => number {
  const cumulative = new Float64Array(size);
  let sum = 0;
  for (let r = 0; r < size; r++) cumulative[r] = sum += 1 / (r + 1) ** exponent;
  return (random) => {
    const target = random() * sum;
    let lo = 0;
    let hi = size - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < target) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

interface Page {
  path: string;
  title: string;
  topics: string[];
  /** Sections of paragraphs, each under its heading. */
  sections: Array<{ heading: string; paragraphs: string[] }>;
  characters: number;
}

interface Query {
  body: string;
  kind: 'keywords' | 'question';
  /** The page its topic words were drawn from. */
  path: string;
}

function corpus(pages: number): { pages: Page[]; queries: Query[]; vocabulary: number } {
  const random = prng(13);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  const capital = (word: string) => word[0]!.toUpperCase() + word.slice(1);
  const taken = new Set([...FUNCTION_WORDS, ...COMMON_WORDS]);
  const content = [
    ...COMMON_WORDS,
    ...madeUpWords(random, 3000 - FUNCTION_WORDS.length - COMMON_WORDS.length, [1, 2], taken),
  ];
  // Ranked as English goes: the function words first, then the content words; rank r has a frequency ∝ 1 / r.
  const vocabulary = [...FUNCTION_WORDS, ...content];
  // Some three pages share each topic word: rare across the corpus, frequent in its pages.
  const topicWords = madeUpWords(
    random,
    Math.max(TOPICS_PER_PAGE * 2, Math.ceil((pages * TOPICS_PER_PAGE) / 3)),
    [3, 3],
    taken,
  );
  const rank = zipf(vocabulary.length, 1);
  const contentRank = zipf(content.length, 1);
  const word = () => vocabulary[rank(random)]!;
  const sentence = (topics: string[]) => {
    const length = 6 + Math.floor(random() * 16);
    const words = Array.from({ length }, word);
    if (random() < 0.2) words[Math.floor(random() * length)] = pick(topics);
    if (length > 12 && random() < 0.4) words[Math.floor(length / 2)] += ',';
    return `${capital(words.join(' '))}${random() < 0.08 ? '?' : '.'}`;
  };

  const result: Page[] = [];
  for (let p = 0; p < pages; p++) {
    const topics: string[] = [];
    while (topics.length < TOPICS_PER_PAGE) {
      const topic = pick(topicWords);
      if (!topics.includes(topic)) topics.push(topic);
    }
    const title = `${capital(topics[0]!)} and ${topics[1]}: ${content[contentRank(random)]} ${content[contentRank(random)]}`;
    const sections: Page['sections'] = [];
    let characters = 0;
    while (characters < PAGE_CHARACTERS) {
      const heading = `${capital(pick(topics))} ${content[contentRank(random)]} ${content[contentRank(random)]}`;
      const paragraphs: string[] = [];
      for (let n = 0; n < 4 && characters < PAGE_CHARACTERS; n++) {
        const paragraph = Array.from({ length: 3 + Math.floor(random() * 5) }, () => sentence(topics)).join(' ');
        paragraphs.push(paragraph);
        characters += paragraph.length;
      }
      sections.push({ heading, paragraphs });
      characters += heading.length;
    }
    result.push({ path: `/articles/${p}.html`, title, topics, sections, characters });
  }

  const templates: Array<(t: string[]) => string> = [
    (t) => `how do I ${t[0]} the ${t[1]}?`,
    (t) => `what is ${t[0]}`,
    (t) => `why does ${t[0]} ${t[1]} not work?`,
    (t) => `where can I find ${t[0]} and ${t[1]}?`,
    (t) => `can the ${t[0]} use ${t[1]} with ${t[2]}?`,
  ];
  const queries: Query[] = [];
  for (let q = 0; q < QUERIES; q++) {
    const page = pick(result);
    const shuffled = [...page.topics];
    for (let i = shuffled.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
    }
    if (random() < 0.3) {
      queries.push({
        kind: 'question',
        path: page.path,
        body: JSON.stringify({ query: pick(templates)(shuffled), top_k: TOP_K }),
      });
    } else {
      queries.push({
        kind: 'keywords',
        path: page.path,
        body: JSON.stringify({ query: shuffled.slice(0, 1 + Math.floor(random() * 4)).join(' '), top_k: TOP_K }),
      });
    }
  }
  return { pages: result, queries, vocabulary: vocabulary.length + topicWords.length };
}

const escapeHtml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** A page as the site serves it; the first also lists all the others (the crawl's only links). */
function pageHtml(page: Page, index: number, all: Page[]): string {
  const article = page.sections
    .map((s) => `<h2>${escapeHtml(s.heading)}</h2>\n${s.paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('\n')}`)
    .join('\n');
  const list =
    index === 0
      ? `<nav><h2>All articles</h2><ul>\n${all
          .slice(1)
          .map((other) => `<li><a href="${other.path}">${escapeHtml(other.title)}</a></li>`)
          .join('\n')}\n</ul></nav>`
      : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(page.title)}</title></head><body><main><article><h1>${escapeHtml(page.title)}</h1>\n${article}\n</article></main>${list}<footer><p>Benchmark help centre</p></footer></body></html>`;
}

/** A page as a text source: Markdown. */
function pageText(page: Page): string {
  return [`# ${page.title}`, ...page.sections.flatMap((s) => [`## ${s.heading}`, ...s.paragraphs])].join('\n\n');
}

/** The loopback site the crawl reads: the pages, prerendered; anything else (robots.txt too) answers 404. */
async function startSite(pages: Page[]): Promise<{ url: string; served: () => number; close(): Promise<void> }> {
  const bodies = new Map(pages.map((page, index) => [page.path, Buffer.from(pageHtml(page, index, pages))]));
  let served = 0;
  const server = http.createServer((request, response) => {
    const body = bodies.get(request.url ?? '');
    if (!body) return void response.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found');
    served += 1;
    response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    served: () => served,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

// ---------------------------------------------------------------------------------------------------- the API

class Api {
  readonly url: string;
  readonly secrets: string[];
  #next = 0;

  constructor(url: string, secrets: string[]) {
    this.url = url;
    this.secrets = secrets;
  }

  /** The next key of the pool. */
  secret(): string {
    return this.secrets[this.#next++ % this.secrets.length]!;
  }

  async call<T>(method: string, path: string, body: unknown, expected: number): Promise<T> {
    const response = await fetch(this.url + path, {
      method,
      headers: {
        Authorization: `Bearer ${this.secret()}`,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (response.status !== expected) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 500)}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }
}

interface SourceView {
  id: string;
  status: 'pending' | 'processing' | 'ready' | 'failed';
  chunk_count: number;
  character_count: number;
  url: { page_count: number } | null;
  error: { code: string; message: string } | null;
}

interface BaseView {
  id: string;
  status: string;
  chunk_count: number;
  character_count: number;
  source_status_counts: Record<SourceView['status'], number>;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------------------------------------------- ingestion

interface Ingestion {
  way: 'crawl (1 url source)' | 'text sources';
  pages: number;
  chunks: number;
  characters: number;
  seconds: number;
  /** From adding the source to the first page searchable (crawl only). */
  first_page_s?: number;
}

async function ingestCrawl(api: Api, siteUrl: string, pages: number): Promise<{ base: string; result: Ingestion }> {
  const base = await api.call<{ id: string }>(
    'POST',
    '/v1/knowledge-bases',
    { name: 'Benchmark crawl', chunking: CHUNKING },
    201,
  );
  const started = performance.now();
  const source = await api.call<SourceView>(
    'POST',
    `/v1/knowledge-bases/${base.id}/sources`,
    { type: 'url', url: `${siteUrl}/articles/0.html`, crawl_depth: 1, max_pages: pages },
    202,
  );
  let firstPage: number | undefined;
  let last = -1;
  for (;;) {
    await sleep(POLL_MS);
    const seen = await api.call<SourceView>(
      'GET',
      `/v1/knowledge-bases/${base.id}/sources/${source.id}`,
      undefined,
      200,
    );
    const elapsed = (performance.now() - started) / 1000;
    const count = seen.url?.page_count ?? 0;
    if (firstPage === undefined && count > 0) firstPage = elapsed;
    if (count >= last + 100) {
      process.stdout.write(`  crawl: ${count} pages, ${seen.chunk_count} chunks after ${elapsed.toFixed(1)} s\n`);
      last = count;
    }
    if (seen.status === 'failed') throw new Error(`the crawl failed: ${seen.error?.code} ${seen.error?.message}`);
    if (seen.status === 'ready') {
      return {
        base: base.id,
        result: {
          way: 'crawl (1 url source)',
          pages: count,
          chunks: seen.chunk_count,
          characters: seen.character_count,
          seconds: elapsed,
          first_page_s: firstPage ?? elapsed,
        },
      };
    }
    if (elapsed * 1000 > INGEST_TIMEOUT_MS)
      throw new Error(`the crawl was not ready within ${INGEST_TIMEOUT_MS / 1000} s (${count} pages)`);
  }
}

async function ingestText(api: Api, pages: Page[]): Promise<Ingestion> {
  const base = await api.call<{ id: string }>(
    'POST',
    '/v1/knowledge-bases',
    { name: 'Benchmark text sources', chunking: CHUNKING },
    201,
  );
  const texts = pages.map((page) => ({ type: 'text', title: page.title, content: pageText(page) }));
  const started = performance.now();
  let next = 0;
  const adding = Promise.all(
    Array.from({ length: TEXT_CONCURRENCY }, async () => {
      while (next < texts.length) await api.call('POST', `/v1/knowledge-bases/${base.id}/sources`, texts[next++], 202);
    }),
  );
  let added = false;
  void adding.then(
    () => (added = true),
    () => undefined,
  );
  for (;;) {
    await Promise.race([sleep(POLL_MS), adding]);
    const seen = await api.call<BaseView>('GET', `/v1/knowledge-bases/${base.id}`, undefined, 200);
    const elapsed = (performance.now() - started) / 1000;
    const counts = seen.source_status_counts;
    if (counts.failed > 0) throw new Error(`${counts.failed} text sources failed`);
    if (added && counts.ready === texts.length) {
      await adding;
      return {
        way: 'text sources',
        pages: counts.ready,
        chunks: seen.chunk_count,
        characters: seen.character_count,
        seconds: elapsed,
      };
    }
    if (elapsed * 1000 > INGEST_TIMEOUT_MS)
      throw new Error(`the text sources were not ready within ${INGEST_TIMEOUT_MS / 1000} s (${counts.ready} ready)`);
  }
}

// ------------------------------------------------------------------------------------------------------- search

interface SearchResult {
  /** On PostgreSQL: whether the planner had statistics of the knowledge tables. */
  stage: string;
  connections: number;
  searches_per_second: number;
  latency_ms: { p50: number; p99: number; max: number };
  /** p99 by kind of query. */
  keywords_p99_ms: number;
  questions_p99_ms: number;
  searches: number;
  /** Answers with a chunk of the page the query was drawn from. */
  source_in_top_k: number;
  /** Answers with no hit at all. */
  empty: number;
  failures: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** One search: its latency and its hits' URLs. */
function searchOnce(
  agent: http.Agent,
  api: Api,
  base: string,
  query: Query,
): Promise<{ ms: number; urls: Array<string | null> }> {
  const url = new URL(api.url);
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: `/v1/knowledge-bases/${base}/search`,
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(query.body),
          Authorization: `Bearer ${api.secret()}`,
        },
      },
      (response) => {
        const parts: Buffer[] = [];
        response.on('data', (part: Buffer) => parts.push(part));
        response.on('end', () => {
          const ms = performance.now() - started;
          if (response.statusCode !== 200)
            return reject(new Error(`status ${response.statusCode}: ${Buffer.concat(parts).toString().slice(0, 300)}`));
          const body = JSON.parse(Buffer.concat(parts).toString()) as { data: Array<{ url: string | null }> };
          resolve({ ms, urls: body.data.map((hit) => hit.url) });
        });
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(query.body);
  });
}

async function load(
  api: Api,
  base: string,
  siteUrl: string,
  queries: Query[],
  connections: number,
  seconds: number,
): Promise<Omit<SearchResult, 'stage'>> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const all: number[] = [];
  const byKind: Record<Query['kind'], number[]> = { keywords: [], question: [] };
  let found = 0;
  let empty = 0;
  let failures = 0;
  let firstError: unknown;
  let next = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < deadline) {
        const query = queries[next++ % queries.length]!;
        try {
          const { ms, urls } = await searchOnce(agent, api, base, query);
          all.push(ms);
          byKind[query.kind].push(ms);
          if (urls.length === 0) empty += 1;
          if (urls.includes(siteUrl + query.path)) found += 1;
        } catch (error) {
          firstError ??= error;
          failures += 1;
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  if (firstError) process.stderr.write(`  ${failures} searches failed, the first: ${String(firstError)}\n`);
  for (const list of [all, byKind.keywords, byKind.question]) list.sort((a, b) => a - b);
  const round = (ms: number) => Number(ms.toFixed(2));
  return {
    connections,
    searches_per_second: Math.round(all.length / elapsed),
    latency_ms: { p50: round(percentile(all, 50)), p99: round(percentile(all, 99)), max: round(all.at(-1) ?? NaN) },
    keywords_p99_ms: round(percentile(byKind.keywords, 99)),
    questions_p99_ms: round(percentile(byKind.question, 99)),
    searches: all.length,
    source_in_top_k: found,
    empty,
    failures,
  };
}

// --------------------------------------------------------------------------------------------------------- main

interface DatabaseResult {
  database: 'SQLite' | 'PostgreSQL';
  ingestions: Ingestion[];
  /** The crawled knowledge base, as searched. */
  corpus_chunks: number;
  searches: SearchResult[];
}

/** Whether PostgreSQL's planner has statistics of the chunks (autovacuum analysed them), and whether autovacuum is on. */
async function postgresStatistics(url: string): Promise<{ analysed: boolean; autovacuum: string }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const tables = await client.query<{ analysed: boolean }>(
      `select (last_analyze is not null or last_autoanalyze is not null) as analysed from pg_stat_user_tables where relname = 'knowledge_chunks'`,
    );
    const setting = await client.query<{ autovacuum: string }>('show autovacuum');
    return { analysed: tables.rows[0]?.analysed ?? false, autovacuum: setting.rows[0]!.autovacuum };
  } finally {
    await client.end();
  }
}

async function postgresAnalyse(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('analyze knowledge_chunks, knowledge_sources, knowledge_bases');
  } finally {
    await client.end();
  }
}

/** BENCH_NODE_ARGS: extra Node options for the servers, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile them. */
const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);

async function startServer(
  databaseUrl: string,
  mode: 'crawl' | 'production',
): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_BASE_URL: url,
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'warn',
    REDIS_URL: '',
    ...(embeddings ? { OPENAI_API_KEY: 'sk-bench', OPENAI_BASE_URL: embeddings.url } : {}),
    // The crawl reads a loopback site: a development setting, refused with NODE_ENV=production.
    ...(mode === 'crawl'
      ? { NODE_ENV: 'development', WEBHOOKS_ALLOW_LOOPBACK: 'true', SEED_DEMO: 'false' }
      : { NODE_ENV: 'production', WEBHOOKS_ALLOW_LOOPBACK: 'false' }),
  };
  const stop = await startProcess(
    `server (${mode})`,
    process.execPath,
    [...COMMAND_LINE_FLAGS, ...nodeArgs, 'src/main.ts'],
    env,
    url,
    '/readyz',
  );
  return { url, stop };
}

async function benchDatabase(
  name: DatabaseResult['database'],
  databaseUrl: string,
  site: Awaited<ReturnType<typeof startSite>>,
  pages: Page[],
  queries: Query[],
): Promise<DatabaseResult> {
  process.stdout.write(`${name}: seeding ${KEYS} keys\n`);
  const secrets = await seedWorkspace(databaseUrl, KEYS, 'editor');
  const ingestions: Ingestion[] = [];

  // Crawl, on a server that may fetch loopback; stopped with SIGTERM (so that it writes its profile with BENCH_NODE_ARGS).
  const crawler = await startServer(databaseUrl, 'crawl');
  let base: string;
  let corpusChunks: number;
  try {
    const api = new Api(crawler.url, secrets);
    const servedBefore = site.served();
    const crawled = await ingestCrawl(api, site.url, pages.length);
    base = crawled.base;
    ingestions.push(crawled.result);
    const view = await api.call<BaseView>('GET', `/v1/knowledge-bases/${base}`, undefined, 200);
    corpusChunks = view.chunk_count;
    const r = crawled.result;
    process.stdout.write(
      `${name}, crawl: ${r.pages} pages (${site.served() - servedBefore} served), ${r.chunks} chunks, ${r.characters} characters in ${r.seconds.toFixed(1)} s: ` +
        `${(r.pages / r.seconds).toFixed(1)} pages/s, ${(r.chunks / r.seconds).toFixed(0)} chunks/s; first page searchable after ${r.first_page_s!.toFixed(1)} s\n`,
    );
    process.stdout.write(
      `${name}: knowledge base ${view.status}, chunk_count ${view.chunk_count} (≥ ${CORPUS_TARGET_CHUNKS}: ${view.chunk_count >= CORPUS_TARGET_CHUNKS ? 'yes' : 'NO'})\n`,
    );
    if (r.pages !== pages.length) throw new Error(`the crawl indexed ${r.pages} pages of ${pages.length}`);
  } finally {
    await crawler.stop();
  }

  // Search, and the text sources, on a production server.
  const server = await startServer(databaseUrl, 'production');
  try {
    const api = new Api(server.url, secrets);
    const searches: SearchResult[] = [];
    const stages: Array<{ stage: string; before?: () => Promise<void> }> = [];
    if (name === 'SQLite') {
      stages.push({ stage: '' });
    } else {
      const { analysed, autovacuum } = await postgresStatistics(databaseUrl);
      process.stdout.write(
        `${name}: autovacuum ${autovacuum}; the chunks ${analysed ? 'were analysed by autovacuum' : 'have no planner statistics yet'}\n`,
      );
      stages.push(
        { stage: analysed ? 'analysed by autovacuum' : 'no statistics' },
        { stage: 'after ANALYZE', before: () => postgresAnalyse(databaseUrl) },
      );
    }
    for (const { stage, before } of stages) {
      await before?.();
      for (const connections of [...new Set([1, CONNECTIONS])]) {
        if (WARMUP > 0) await load(api, base, site.url, queries, connections, WARMUP);
        const result = { stage, ...(await load(api, base, site.url, queries, connections, DURATION)) };
        searches.push(result);
        process.stdout.write(
          `${name}${stage ? ` (${stage})` : ''}, search, ${connections} connection(s): ${result.searches_per_second}/s, p50 ${result.latency_ms.p50} ms, p99 ${result.latency_ms.p99} ms ` +
            `(keywords ${result.keywords_p99_ms}, questions ${result.questions_p99_ms}), max ${result.latency_ms.max} ms; ` +
            `source page in top ${TOP_K}: ${((100 * result.source_in_top_k) / result.searches).toFixed(1)} %, ${result.empty} empty, ${result.failures} failures\n`,
        );
      }
    }
    const text = await ingestText(api, pages);
    ingestions.push(text);
    process.stdout.write(
      `${name}, text sources: ${text.pages} pages, ${text.chunks} chunks in ${text.seconds.toFixed(1)} s: ${(text.pages / text.seconds).toFixed(1)} pages/s, ${(text.chunks / text.seconds).toFixed(0)} chunks/s\n`,
    );
    return { database: name, ingestions, corpus_chunks: corpusChunks, searches };
  } finally {
    await server.stop();
  }
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'content-service-bench-knowledge-'));
  cleanups.push(async () => rmSync(work, { recursive: true, force: true }));
  // On Ctrl-C the run fails too (its server is gone): its own clean-up then waits for this one, which drops the
  // database and removes the directory, before the process exits.
  let interrupted: Promise<void> | undefined;
  process.once('SIGINT', () => void (interrupted = cleanUp().finally(() => process.exit(130))));
  const load = loadavg()[0]!;
  try {
    const { pages, queries, vocabulary } = corpus(PAGES);
    const characters = pages.reduce((sum, page) => sum + page.characters, 0);
    const site = await startSite(pages);
    cleanups.push(() => site.close());
    if (HYBRID) {
      const fake = await startFakeOpenAi();
      embeddings = fake;
      cleanups.push(() => fake.close());
    }
    process.stdout.write(
      `${pages.length} pages, ${characters} characters of text (${Math.round(characters / pages.length)} a page), ${vocabulary} words of vocabulary; site at ${site.url}\n`,
    );

    const results: DatabaseResult[] = [];
    for (const database of DATABASES) {
      if (database === 'sqlite') {
        results.push(await benchDatabase('SQLite', `sqlite:${join(work, 'bench.db')}`, site, pages, queries));
      } else {
        const fresh = await freshPostgresDatabase('cs_bench_knowledge');
        if (!fresh) {
          process.stdout.write(`PostgreSQL at ${POSTGRES_URL} does not answer: skipped\n`);
          continue;
        }
        cleanups.push(() => fresh.drop());
        results.push(await benchDatabase('PostgreSQL', fresh.url, site, pages, queries));
      }
    }

    const ingestRows = [
      '| database | ingestion | pages | chunks | characters | seconds | pages/s | chunks/s | first page searchable s |',
      '|---|---|--:|--:|--:|--:|--:|--:|--:|',
    ];
    const searchRows = [
      `| database | planner statistics | corpus chunks | connections | searches/s | p50 ms | p99 ms | max ms | p99 keywords ms | p99 questions ms | source page in top ${TOP_K} | empty | failures |`,
      '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ];
    const verdicts: string[] = [];
    for (const result of results) {
      for (const i of result.ingestions) {
        ingestRows.push(
          `| ${result.database} | ${i.way} | ${i.pages} | ${i.chunks} | ${i.characters} | ${i.seconds.toFixed(1)} | ${(i.pages / i.seconds).toFixed(1)} | ${(i.chunks / i.seconds).toFixed(0)} | ${i.first_page_s?.toFixed(1) ?? '–'} |`,
        );
      }
      for (const s of result.searches) {
        searchRows.push(
          `| ${result.database} | ${s.stage || '–'} | ${result.corpus_chunks} | ${s.connections} | ${s.searches_per_second} | ${s.latency_ms.p50} | ${s.latency_ms.p99} | ${s.latency_ms.max} | ${s.keywords_p99_ms} | ${s.questions_p99_ms} | ` +
            `${((100 * s.source_in_top_k) / s.searches).toFixed(1)} % | ${s.empty} | ${s.failures} |`,
        );
        verdicts.push(
          `${result.database}${s.stage ? ` (${s.stage})` : ''}, ${s.connections} connection(s): search p99 ${s.latency_ms.p99} ms (target < ${P99_TARGET_MS} ms: ${s.latency_ms.p99 < P99_TARGET_MS ? 'met' : 'NOT met'}) ` +
            `on ${result.corpus_chunks} chunks (≥ ${CORPUS_TARGET_CHUNKS}: ${result.corpus_chunks >= CORPUS_TARGET_CHUNKS ? 'yes' : 'NO'})`,
        );
      }
    }
    const report = [
      `# bench:knowledge${HYBRID ? ' (hybrid: full text and vectors)' : ''}, ${new Date().toISOString()}`,
      '',
      `Node ${process.version}, ${cpus().length} cores, load average before ${load.toFixed(2)}; ${pages.length} pages of ~${Math.round(characters / pages.length)} characters, ` +
        `chunking ${CHUNKING.max_chunk_tokens} tokens with an overlap of ${CHUNKING.overlap_tokens}; searches: top_k ${TOP_K}, ${DURATION} s per case after ${WARMUP} s of warm-up, ` +
        `${QUERIES} queries (7 in 10 topic words, 3 in 10 questions) over ${KEYS} keys.`,
      '',
      'Ingestion, from adding the source(s) to all ready (polled every 100 ms): the crawl on a server with WEBHOOKS_ALLOW_LOOPBACK (NODE_ENV=development), the text sources on the production server.',
      '',
      ...ingestRows,
      '',
      'Search (POST /v1/knowledge-bases/{id}/search on the crawled knowledge base), production server, latency client-side:',
      '',
      ...searchRows,
      '',
      ...verdicts.map((v) => `- ${v}`),
      '',
    ].join('\n');
    process.stdout.write(`\n${report}`);
    mkdirSync(join(root, 'bench', 'results'), { recursive: true });
    const file = join(
      root,
      'bench',
      'results',
      `knowledge${HYBRID ? '-hybrid' : ''}-${new Date().toISOString().replace(/[:.]/g, '-')}.md`,
    );
    writeFileSync(file, report);
    process.stdout.write(`Written to ${file}\n`);
  } finally {
    await cleanUp();
    await interrupted;
  }
}

await main();

// The text of a knowledge-base source, from the bytes of a file (or of a fetched page) and its media type: PDF through
// unpdf (PDF.js, page by page), Word .docx through mammoth (to HTML, then Markdown), HTML through Readability on
// linkedom (the article without its navigation, scripts and footers) then turndown, Markdown as it is, CSV as one
// line per row ("column: value; column: value"), and plain text. The result is Markdown-ish text for chunking and
// search: headings and lists are kept, links keep only their text, images are dropped, and whitespace is normalised
// (NFC, line ends, trailing spaces, at most one blank line in a row).
//
// The errors are the contract's KnowledgeBaseSourceError codes a file can cause: `unsupported_content` (a media type
// we do not read), `unreadable_file` (damaged, encrypted, or not what its media type says) and `empty_content` (no
// text, such as a scanned PDF without a text layer).
import { createRequire } from 'node:module';
import type { Readability as ReadabilityClass } from '@mozilla/readability';
import type { parseHTML as ParseHtml } from 'linkedom';
import type Mammoth from 'mammoth';
import type TurndownService from 'turndown';
import { extractText as extractPdfText, getDocumentProxy, getMeta } from 'unpdf';

// The HTML and Word libraries (about 10 MB of heap) load when a source first needs them, not with every server.
const load = createRequire(import.meta.url);
let libraries:
  | {
      parseHTML: typeof ParseHtml;
      Readability: typeof ReadabilityClass;
      mammoth: typeof Mammoth;
      turndown: TurndownService;
    }
  | undefined;
function htmlLibraries() {
  return (libraries ??= {
    parseHTML: (load('linkedom') as { parseHTML: typeof ParseHtml }).parseHTML,
    Readability: (load('@mozilla/readability') as { Readability: typeof ReadabilityClass }).Readability,
    mammoth: load('mammoth') as typeof Mammoth,
    turndown: createTurndown(load('turndown') as typeof TurndownService),
  });
}

export type ExtractionErrorCode = 'unsupported_content' | 'unreadable_file' | 'empty_content';

export class ExtractionError extends Error {
  readonly code: ExtractionErrorCode;

  constructor(code: ExtractionErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ExtractionError';
    this.code = code;
  }
}

export interface ExtractedText {
  /** The document's own title (PDF metadata, the first `# ` heading, the page's title), or null. */
  title: string | null;
  /** The normalised text, never empty. */
  text: string;
}

export interface ExtractOptions {
  /** The file name, for the error messages. */
  name?: string;
  /** Where an HTML page came from: its relative links resolve against it. */
  url?: string;
}

const PDF = 'application/pdf';
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** The media types extractText reads (the contract's enum, and two aliases a crawled page may be served with). */
export const SUPPORTED_MEDIA_TYPES: readonly string[] = [
  PDF,
  DOCX,
  'text/plain',
  'text/markdown',
  'text/html',
  'text/csv',
  'application/xhtml+xml',
  'text/x-markdown',
];

/**
 * The title and text of a file. `mediaType` may carry parameters (`text/plain; charset=iso-8859-1`): a charset is
 * used for the text types when the bytes have no byte-order mark. Throws an ExtractionError.
 */
export async function extractText(
  bytes: Uint8Array,
  mediaType: string,
  options: ExtractOptions = {},
): Promise<ExtractedText> {
  const { essence, charset } = parseMediaType(mediaType);
  const label = options.name ? `"${options.name}"` : 'The file';
  let result: ExtractedText;
  switch (essence) {
    case PDF:
      result = await extractPdf(bytes, label);
      break;
    case DOCX:
      result = await extractDocx(bytes, label);
      break;
    case 'text/html':
    case 'application/xhtml+xml': {
      const html = decodeText(bytes, charset ?? sniffHtmlCharset(bytes), label);
      const { title, text } = htmlToMarkdown(html, options.url);
      result = { title, text };
      break;
    }
    case 'text/markdown':
    case 'text/x-markdown':
      result = markdownDocument(decodeText(bytes, charset, label));
      break;
    case 'text/csv':
      result = { title: null, text: csvToText(decodeText(bytes, charset, label)) };
      break;
    case 'text/plain':
      result = { title: null, text: decodeText(bytes, charset, label) };
      break;
    default:
      throw new ExtractionError(
        'unsupported_content',
        `Content of type ${essence || '(none)'} is not supported; add a PDF, Word (.docx), Markdown, HTML, CSV or plain-text file.`,
      );
  }
  const text = normaliseText(result.text);
  if (text === '') {
    const hint = essence === PDF ? ' (a scanned PDF has no text layer)' : '';
    throw new ExtractionError('empty_content', `No text could be extracted from ${lowerFirst(label)}${hint}.`);
  }
  const title = result.title === null ? null : cleanTitle(result.title);
  return { title, text };
}

/**
 * An HTML page as Markdown: the article Readability finds (navigation, scripts, styles, headers and footers
 * dropped; the whole body, without those, when it finds none), its title (Readability's, which is the page's
 * `<title>` unless that looks like "Page | Site"), and the links of the page's `<a>` elements (all of them, taken
 * before Readability removes anything): absolute http(s) URLs resolved against `<base href>` and `url`, without
 * their fragment, each once, in document order. Relative links are left out when there is no `url` to resolve them.
 */
export function htmlToMarkdown(page: string, url?: string): { title: string | null; text: string; links: string[] } {
  const { parseHTML, Readability } = htmlLibraries();
  const { document } = parseHTML(page);
  const links = pageLinks(document, url);
  const pageTitle = document.querySelector('title')?.textContent ?? '';

  let article: ReturnType<ReadabilityClass['parse']> = null;
  try {
    article = new Readability(document as unknown as Document).parse();
  } catch {
    article = null; // Readability gives up on some odd documents; the body without its noise is then the text
  }
  let text = article?.content && article.textContent?.trim() ? htmlFragmentToMarkdown(article.content) : '';
  if (text.trim() === '') {
    const { document: fresh } = parseHTML(page);
    for (const node of fresh.querySelectorAll(NOISE)) node.remove();
    const body = fresh.querySelector('body');
    text = htmlFragmentToMarkdown(body ? body.innerHTML : fresh.toString());
  }
  const title = cleanTitle(article?.title || pageTitle || '') || null;
  return { title, text: normaliseText(text), links };
}

/** Line ends, NFC, no control characters, no trailing spaces, at most one blank line in a row, trimmed. */
export function normaliseText(text: string): string {
  return (
    text
      .normalize('NFC')
      .replace(/\r\n?|[\u2028\u2029\u0085]/g, '\n')
      .replace(/\f/g, '\n\n')
      .replace(/[\u0000-\u0008\u000b\u000e-\u001f\u007f]/g, '')
      .replace(/[\u00a0\u202f]/g, ' ')
      // Each line's trailing white space, line by line: a pattern for it keeps a backtracking entry for each character
      // of a run, and a run of a few million overflows the regular-expression engine's stack.
      .split('\n')
      .map((line) => line.trimEnd())
      .join('\n')
      .replace(/\n{3,}/g, '\n\n')
      .replace(/^\n+/, '')
      .trimEnd()
  );
}

// ---------------------------------------------------------------------------------------------------------------
// PDF

async function extractPdf(bytes: Uint8Array, label: string): Promise<ExtractedText> {
  if (!startsWithin(bytes, '%PDF-', 1024)) {
    throw new ExtractionError('unreadable_file', `${label} is not a PDF (it does not start with a PDF header).`);
  }
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>> | undefined;
  try {
    // A copy: PDF.js may take over (detach) the buffer it is given. No console warnings.
    pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
    const { text: pages } = await extractPdfText(pdf, { mergePages: false });
    let title: string | null = null;
    try {
      const info = (await getMeta(pdf)).info as { Title?: unknown };
      if (typeof info.Title === 'string') title = info.Title;
    } catch {
      // the metadata is optional
    }
    return {
      title,
      text: pages
        .map((page) => normaliseText(page))
        .filter((page) => page !== '')
        .join('\n\n'),
    };
  } catch (error) {
    if (error instanceof ExtractionError) throw error;
    const encrypted = (error as { name?: unknown } | null)?.name === 'PasswordException';
    throw new ExtractionError(
      'unreadable_file',
      encrypted
        ? `${label} is an encrypted (password-protected) PDF.`
        : `${label} is not a readable PDF (it is damaged or incomplete).`,
      { cause: error },
    );
  } finally {
    await pdf?.loadingTask.destroy().catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Word (.docx)

const DOCX_STYLE_MAP = ["p[style-name='Title'] => h1:fresh", "p[style-name='Subtitle'] => h2:fresh"];

async function extractDocx(bytes: Uint8Array, label: string): Promise<ExtractedText> {
  if (startsWith(bytes, [0xd0, 0xcf, 0x11, 0xe0])) {
    throw new ExtractionError(
      'unreadable_file',
      `${label} is a legacy Word (.doc) file; save it as .docx and add it again.`,
    );
  }
  if (!startsWith(bytes, [0x50, 0x4b, 0x03, 0x04])) {
    throw new ExtractionError('unreadable_file', `${label} is not a Word (.docx) file.`);
  }
  let converted: string;
  try {
    const { mammoth } = htmlLibraries();
    const result = await mammoth.convertToHtml(
      { buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) },
      {
        styleMap: DOCX_STYLE_MAP,
        // Images are not text: an empty src instead of mammoth's base64 data URI (turndown drops images anyway).
        convertImage: mammoth.images.imgElement(async () => ({ src: '' })),
        externalFileAccess: false,
      },
    );
    converted = result.value;
  } catch (error) {
    throw new ExtractionError(
      'unreadable_file',
      `${label} is not a readable Word (.docx) file (it is damaged or encrypted).`,
      { cause: error },
    );
  }
  return markdownDocument(htmlFragmentToMarkdown(converted));
}

// ---------------------------------------------------------------------------------------------------------------
// HTML

/** What is never text in a page, removed when Readability finds no article. */
const NOISE =
  'script, style, noscript, template, iframe, object, embed, svg, canvas, nav, header, footer, aside, form, dialog';

function createTurndown(Turndown: typeof TurndownService): TurndownService {
  const service = new Turndown({
    headingStyle: 'atx',
    hr: '---',
    bulletListMarker: '-',
    codeBlockStyle: 'fenced',
    emDelimiter: '_',
    strongDelimiter: '**',
  });
  // The text is for search and for a model to read, not to be rendered: no backslash escapes.
  service.escape = (text: string) => text;
  const removed = new Set([
    'SCRIPT',
    'STYLE',
    'NOSCRIPT',
    'TEMPLATE',
    'IFRAME',
    'OBJECT',
    'EMBED',
    'SVG',
    'CANVAS',
    'BUTTON',
    'SELECT',
  ]);
  service.remove((node) => removed.has(node.nodeName.toUpperCase()));
  service.addRule('linkText', { filter: 'a', replacement: (content) => content });
  service.addRule('noImages', { filter: ['img', 'picture', 'video', 'audio'], replacement: () => '' });
  service.addRule('listItem', {
    filter: 'li',
    replacement: (content, node) => {
      const item = node as HTMLElement;
      const parent = item.parentNode as HTMLElement | null;
      let prefix = '- ';
      if (parent?.nodeName === 'OL') {
        const start = Number(parent.getAttribute('start') ?? '1');
        const index = Array.prototype.indexOf.call(parent.children, item);
        prefix = `${(Number.isFinite(start) ? start : 1) + index}. `;
      }
      const body = content
        .replace(/^\n+/, '')
        .replace(/(?<!\n)\n+$/, '\n')
        .replace(/\n/g, `\n${' '.repeat(prefix.length)}`);
      return prefix + body + (item.nextSibling && !body.endsWith('\n') ? '\n' : '');
    },
  });
  // Tables as one line a row, cells separated by " | ".
  service.addRule('tableCell', {
    filter: ['th', 'td'],
    replacement: (content) => `${content.replace(/\s+/g, ' ').trim()} | `,
  });
  service.addRule('tableRow', {
    filter: 'tr',
    replacement: (content) => {
      const row = content.replace(/(?<!\s)\s*\|\s*$/, '').trim();
      return row === '' ? '' : `\n${row}\n`;
    },
  });
  service.addRule('tableSection', { filter: ['thead', 'tbody', 'tfoot'], replacement: (content) => content });
  service.addRule('table', {
    filter: 'table',
    replacement: (content) => `\n\n${content.replace(/\n{2,}/g, '\n').trim()}\n\n`,
  });
  return service;
}

function htmlFragmentToMarkdown(fragment: string): string {
  return htmlLibraries().turndown.turndown(fragment);
}

function pageLinks(document: ReturnType<typeof ParseHtml>['document'], url: string | undefined): string[] {
  let base: URL | undefined;
  try {
    base = url ? new URL(url) : undefined;
  } catch {
    base = undefined;
  }
  const baseHref = document.querySelector('base[href]')?.getAttribute('href');
  if (baseHref) {
    try {
      base = new URL(baseHref.trim(), base);
    } catch {
      // a relative <base> without a page URL, or a malformed one: the page URL stays the base
    }
  }
  const seen = new Set<string>();
  for (const anchor of document.querySelectorAll('a[href]')) {
    const href = anchor.getAttribute('href')?.trim();
    if (!href) continue;
    let link: URL;
    try {
      link = new URL(href, base);
    } catch {
      continue; // relative without a base, or malformed
    }
    if (link.protocol !== 'http:' && link.protocol !== 'https:') continue;
    link.hash = '';
    seen.add(link.href);
  }
  return [...seen];
}

// ---------------------------------------------------------------------------------------------------------------
// Markdown

/** Front matter is metadata, not text: it is dropped, and its `title:` is the title. Else the first `# ` heading. */
function markdownDocument(markdown: string): ExtractedText {
  let text = markdown.replace(/^\uFEFF/, '');
  let title: string | null = null;
  const frontMatter = /^---[^\S\n]*\r?\n([\s\S]*?)\r?\n(?:---|\.\.\.)[^\S\n]*(?:\r?\n|$)/.exec(text);
  if (frontMatter) {
    text = text.slice(frontMatter[0].length);
    const line = /^title:[^\S\n]*(.+)$/m.exec(frontMatter[1] ?? '');
    if (line?.[1]) title = line[1].trim().replace(/^(["'])(.*)\1$/, '$2');
  }
  return { title: title || firstHeading(text), text };
}

const isSpace = (char: string | undefined) => char !== undefined && char !== '\n' && /\s/.test(char);
/** A character `.` matches: any but a line terminator. */
const isDot = (char: string | undefined) =>
  char !== undefined && char !== '\n' && char !== '\r' && char !== '\u2028' && char !== '\u2029';

/**
 * The text of a level-one ATX heading line (`# Title #`): what `/^ {0,3}#[^\S\n]+(.+?)(?:[^\S\n]+#+)?[^\S\n]*$/`
 * captures, in linear time (the pattern would try every split of the line's spaces between its parts, cubic in a
 * line of spaces). The spaces after `#` are taken whole first and given back one at a time; for each, the text is
 * the shortest run of non-line-terminators after them that leaves only spaces, or spaces, a closing run of `#` and
 * spaces, to the end of the line.
 */
export function atxHeading(line: string): string | undefined {
  let hash = 0;
  while (hash < 3 && line[hash] === ' ') hash++;
  if (line[hash] !== '#') return undefined;
  let spaces = 0;
  while (isSpace(line[hash + 1 + spaces])) spaces++;
  // Where the tail may start: in the spaces before a closing run of `#` ([beforeHashes, hashes - 1]), or in the
  // spaces that end the line ([trailing, length]).
  let trailing = line.length;
  while (trailing > 0 && isSpace(line[trailing - 1])) trailing--;
  let hashes = trailing;
  while (hashes > 0 && line[hashes - 1] === '#') hashes--;
  let beforeHashes = hashes;
  while (beforeHashes > 0 && isSpace(line[beforeHashes - 1])) beforeHashes--;
  const closed = hashes < trailing && beforeHashes < hashes;
  let dotsEnd = -1;
  for (let given = spaces; given >= 1; given--) {
    const start = hash + 1 + given;
    if (dotsEnd < 0) for (dotsEnd = start; isDot(line[dotsEnd]); ) dotsEnd++;
    else if (!isDot(line[start])) dotsEnd = start;
    const first = start + 1;
    let end: number | undefined;
    if (closed && Math.max(beforeHashes, first) <= Math.min(hashes - 1, dotsEnd)) end = Math.max(beforeHashes, first);
    else if (Math.max(trailing, first) <= dotsEnd) end = Math.max(trailing, first);
    if (end !== undefined) return line.slice(start, end);
  }
  return undefined;
}

/** The first level-one heading (ATX `# Title`, or a setext line underlined with `=`) outside code fences. */
function firstHeading(markdown: string): string | null {
  const lines = markdown.split(/\r?\n/);
  let fence: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker) {
      if (fence === null) fence = marker[0]!;
      else if (marker[0] === fence) fence = null;
      continue;
    }
    if (fence !== null) continue;
    const atx = atxHeading(line);
    if (atx) return atx;
    const next = lines[i + 1];
    if (next !== undefined && /^ {0,3}=+[^\S\n]*$/.test(next) && line.trim() !== '' && !/^ {0,3}[-*+>]/.test(line))
      return line.trim();
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------------------
// CSV

/**
 * A CSV as text a reader (and a search) can follow: with a header row, each record is one line of
 * "column: value; column: value" (empty values left out, so a row reads like a sentence and each line stands alone
 * when the text is chunked); a header alone is one line of its column names. The delimiter is the one of `,`, `;`
 * and tab that occurs most in the first line. Quoted fields (RFC 4180: `""` for a quote, line breaks inside quotes)
 * are read as one value, their line breaks turned into spaces.
 */
export function csvToText(csv: string): string {
  const records = parseCsv(csv.replace(/^\uFEFF/, '')).filter((record) => record.some((cell) => cell.trim() !== ''));
  const [header, ...rows] = records;
  if (!header) return '';
  const names = header.map((name, i) => oneLine(name) || `column ${i + 1}`);
  if (rows.length === 0) return names.join(', ');
  return rows
    .map((row) =>
      row
        .map((value, i) => [names[i] ?? `column ${i + 1}`, oneLine(value)] as const)
        .filter(([, value]) => value !== '')
        .map(([name, value]) => `${name}: ${value}`)
        .join('; '),
    )
    .filter((line) => line !== '')
    .join('\n');
}

function oneLine(value: string): string {
  return value.replace(/\s+/g, ' ').trim();
}

function parseCsv(csv: string): string[][] {
  const delimiter = sniffDelimiter(csv);
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < csv.length; i++) {
    const char = csv[i]!;
    if (quoted) {
      if (char === '"') {
        if (csv[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else field += char;
    } else if (char === '"' && field.trim() === '') {
      quoted = true;
      field = '';
    } else if (char === delimiter) {
      record.push(field);
      field = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && csv[i + 1] === '\n') i++;
      record.push(field);
      records.push(record);
      record = [];
      field = '';
    } else field += char;
  }
  if (field !== '' || record.length > 0) {
    record.push(field);
    records.push(record);
  }
  return records;
}

function sniffDelimiter(csv: string): string {
  const counts = new Map<string, number>([
    [',', 0],
    [';', 0],
    ['\t', 0],
  ]);
  let quoted = false;
  for (const char of csv) {
    if (char === '"') quoted = !quoted;
    else if (!quoted && (char === '\n' || char === '\r')) break;
    else if (!quoted && counts.has(char)) counts.set(char, counts.get(char)! + 1);
  }
  let best = ',';
  for (const [delimiter, count] of counts) if (count > counts.get(best)!) best = delimiter;
  return best;
}

// ---------------------------------------------------------------------------------------------------------------
// Bytes, media types, titles

function parseMediaType(mediaType: string): { essence: string; charset: string | undefined } {
  const [essence = '', ...parameters] = mediaType.split(';');
  let charset: string | undefined;
  for (const parameter of parameters) {
    const match = /^\s*charset\s*=\s*"?([^";\s]+)"?\s*$/i.exec(parameter);
    if (match) charset = match[1];
  }
  return { essence: essence.trim().toLowerCase(), charset };
}

/**
 * Text from bytes: a byte-order mark decides (UTF-8, UTF-16), else the declared charset if it is not UTF-8, else
 * UTF-8, and Windows-1252 (what browsers read "latin-1" as) when the bytes are not valid UTF-8. A NUL character or
 * many control characters mean a binary file sent as text: unreadable.
 */
function decodeText(bytes: Uint8Array, charset: string | undefined, label: string): string {
  let text: string;
  if (startsWith(bytes, [0xef, 0xbb, 0xbf])) text = new TextDecoder('utf-8').decode(bytes);
  else if (startsWith(bytes, [0xff, 0xfe])) text = new TextDecoder('utf-16le').decode(bytes);
  else if (startsWith(bytes, [0xfe, 0xff])) text = new TextDecoder('utf-16be').decode(bytes);
  else {
    const declared = charset ? decoderFor(charset) : undefined;
    if (declared && declared.encoding !== 'utf-8') text = declared.decode(bytes);
    else {
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
      } catch {
        text = new TextDecoder('windows-1252').decode(bytes);
      }
    }
  }
  text = text.replace(/^\uFEFF/, '');
  const controls = text.match(/[\u0000-\u0008\u000e-\u001a\u001c-\u001f]/g)?.length ?? 0;
  if (text.includes('\u0000') || controls > Math.max(8, text.length * 0.01)) {
    throw new ExtractionError('unreadable_file', `${label} is not text (it looks like a binary file).`);
  }
  return text;
}

function decoderFor(charset: string): TextDecoder | undefined {
  try {
    return new TextDecoder(charset);
  } catch {
    return undefined; // a label TextDecoder does not know: sniffed as UTF-8 or Windows-1252 instead
  }
}

/** The charset a page declares in a `<meta>` of its first 1024 bytes. */
function sniffHtmlCharset(bytes: Uint8Array): string | undefined {
  const head = new TextDecoder('windows-1252').decode(bytes.subarray(0, 1024));
  return /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(head)?.[1];
}

function startsWith(bytes: Uint8Array, prefix: number[]): boolean {
  return prefix.every((byte, i) => bytes[i] === byte);
}

function startsWithin(bytes: Uint8Array, ascii: string, limit: number): boolean {
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, limit + ascii.length));
  return head.includes(ascii);
}

function cleanTitle(title: string): string | null {
  const clean = title.normalize('NFC').replace(/\s+/g, ' ').trim();
  return clean === '' ? null : clean;
}

function lowerFirst(label: string): string {
  return label === 'The file' ? 'the file' : label;
}

// Masking for translation. What the model must not change inside a segment, replaced by placeholders ⟨1⟩, ⟨2⟩…: code spans, link
// destinations and reference labels, HTML tags and autolinks, bare URLs, a task box, and marker-like text.

/**
 * The protected spans of a segment, left to right, as `[start, end)`: what this pattern finds, with its alternatives
 * tried in order at each position,
 *
 *     (`+)(?!`)[\s\S]*?(?<!`)\1(?!`)                                         a code span
 *   | (?<=\])\((?:[^()\s]|\([^()\s]*\))*(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)   a link destination, with its title
 *   | (?<=\])\[[^\]\n]*\]                                                   a reference label
 *   | <[A-Za-z/!?][^<>\n]*>                                                  an HTML tag or an autolink
 *   | https?://[^\s<>()\[\]]+                                                a bare URL
 *   | ^\[[ xX]\](?=\s)                                                       a task box
 *   | ⟨\d+⟩|⟦\d+⟧                                                            marker-like text
 *
 * read in linear time: as one regular expression it would search to the end of the segment from every backtick run that
 * no run of the same length closed, and from every link title left unclosed. A code span here ends at the next run
 * of exactly its backticks (runs of each length are listed once); a title's closing quote is looked up once.
 */
function protectedSpans(text: string): [number, number][] {
  const spans: [number, number][] = [];
  const runsByLength = new Map<number, number[]>();
  for (const run of text.matchAll(/`+/g)) {
    const starts = runsByLength.get(run[0].length);
    if (starts) starts.push(run.index);
    else runsByLength.set(run[0].length, [run.index]);
  }
  /** The first run of exactly `length` backticks that starts after `from`. */
  const runAfter = (length: number, from: number): number | undefined => {
    const starts = runsByLength.get(length);
    if (!starts) return undefined;
    let low = 0;
    let high = starts.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (starts[middle]! <= from) low = middle + 1;
      else high = middle;
    }
    return starts[low];
  };
  const nextQuote = new Map<string, number>();
  const quoteAfter = (quote: string, from: number): number => {
    const known = nextQuote.get(quote);
    if (known !== undefined && (known === -1 || known >= from)) return known;
    const at = text.indexOf(quote, from);
    nextQuote.set(quote, at);
    return at;
  };
  const isSpace = (char: string | undefined) => char !== undefined && /\s/.test(char);
  const inDestination = (char: string | undefined) =>
    char !== undefined && char !== '(' && char !== ')' && !isSpace(char);
  const skipSpaces = (from: number) => {
    let at = from;
    while (isSpace(text[at])) at++;
    return at;
  };

  let runEnd = -1;
  const codeSpan = (at: number): number | undefined => {
    // The end of the run `at` is in, found once for the run: a start inside it after a failed one reads no further.
    if (runEnd <= at) for (runEnd = at; text[runEnd] === '`'; ) runEnd++;
    const closing = runAfter(runEnd - at, runEnd);
    return closing === undefined ? undefined : closing + (runEnd - at);
  };
  const destination = (at: number): number | undefined => {
    let end = at + 1;
    for (;;) {
      if (inDestination(text[end])) end++;
      else if (text[end] === '(') {
        let inner = end + 1;
        while (inDestination(text[inner])) inner++;
        if (text[inner] !== ')') break;
        end = inner + 1;
      } else break;
    }
    const titleStart = skipSpaces(end);
    const quote = text[titleStart];
    if (titleStart > end && (quote === '"' || quote === "'")) {
      const titleEnd = quoteAfter(quote, titleStart + 1);
      if (titleEnd >= 0) {
        const close = skipSpaces(titleEnd + 1);
        if (text[close] === ')') return close + 1;
      }
    }
    const close = skipSpaces(end);
    return text[close] === ')' ? close + 1 : undefined;
  };
  const label = (at: number): number | undefined => {
    let end = at + 1;
    while (end < text.length && text[end] !== ']' && text[end] !== '\n') end++;
    return text[end] === ']' ? end + 1 : undefined;
  };
  const tag = (at: number): number | undefined => {
    if (!/[A-Za-z/!?]/.test(text[at + 1] ?? '')) return undefined;
    let end = at + 2;
    while (end < text.length && text[end] !== '<' && text[end] !== '>' && text[end] !== '\n') end++;
    return text[end] === '>' ? end + 1 : undefined;
  };
  const sticky = (pattern: RegExp, at: number): number | undefined => {
    pattern.lastIndex = at;
    return pattern.exec(text) ? pattern.lastIndex : undefined;
  };

  for (let at = 0; at < text.length; at++) {
    const char = text[at];
    let end: number | undefined;
    if (char === '`') end = codeSpan(at);
    else if (char === '(' && text[at - 1] === ']') end = destination(at);
    else if (char === '[' && text[at - 1] === ']') end = label(at);
    else if (char === '<') end = tag(at);
    else if (char === 'h') end = sticky(BARE_URL, at);
    else if (char === '[' && at === 0) end = sticky(TASK_BOX, at);
    else if (char === '⟨' || char === '⟦') end = sticky(MARKER_LIKE, at);
    if (end === undefined) continue;
    spans.push([at, end]);
    at = end - 1;
  }
  return spans;
}

const BARE_URL = /https?:\/\/[^\s<>()[\]]+/y;
const TASK_BOX = /\[[ xX]\](?=\s)/y;
const MARKER_LIKE = /⟨\d+⟩|⟦\d+⟧/y;

export interface Masked {
  text: string;
  kept: string[];
}

export function mask(text: string): Masked {
  const kept: string[] = [];
  let out = '';
  let from = 0;
  for (const [start, end] of protectedSpans(text)) {
    out += `${text.slice(from, start)}⟨${kept.push(text.slice(start, end))}⟩`;
    from = end;
  }
  return { text: out + text.slice(from), kept };
}

/** The translation with its placeholders restored, or null when it lost, repeated or invented one (or is empty). */
export function unmask(translation: string, masked: Masked): string | null {
  const found = [...translation.matchAll(/⟨(\d+)⟩/g)].map((m) => Number(m[1])).sort((a, b) => a - b);
  if (found.length !== masked.kept.length || found.some((n, i) => n !== i + 1)) return null;
  const text = translation.replace(/⟨(\d+)⟩/g, (_, n: string) => masked.kept[Number(n) - 1]!);
  return text.trim() === '' ? null : text;
}

// A source's text cut into chunks of at most `maxChunkTokens` tokens (counted as the engine counts them, o200k_base),
// each ending at the best boundary below that size: a Markdown heading (so a section stays whole, its heading with
// it, when it fits), else a paragraph, a line, a sentence, a clause, a word, and only for a run with no space at all
// a character. The cutting is @langchain/textsplitters' RecursiveCharacterTextSplitter's (BoundarySplitter, below) with
// token lengths, and separators that keep a sentence's full stop (or a clause's comma) at the end of its chunk rather
// than at the start of the next.
//
// The overlap is ours, not the splitter's (whose overlap is made of whole pieces, so it is none at all when the
// paragraphs are longer than the overlap): the splitter cuts pieces of at most `maxChunkTokens - overlapTokens`
// tokens, and each chunk after the first starts with the end of the previous chunk, at most `overlapTokens` tokens
// of it, from a sentence start when that keeps at least half of them, else from a word start. A chunk that starts at
// a Markdown heading repeats nothing: a new section needs no context from the end of the one before.
//
// Deterministic: the same text and options give the same chunks.
import { tokens } from '../engine/index.ts';

/** Tokens as the engine counts them. */
const { countTokens, truncateTokens } = tokens;

export interface ChunkOptions {
  /** The largest chunk, in tokens (the contract allows 100 to 2000). */
  maxChunkTokens: number;
  /** How many tokens a chunk repeats from the end of the previous one, at most half of `maxChunkTokens`. */
  overlapTokens: number;
}

export interface Chunk {
  /** From 0, in the order of the text. */
  index: number;
  text: string;
  tokens: number;
}

/** The end of a sentence (before the space that follows it, or after CJK punctuation, which has none). */
const SENTENCE_END = /(?=\s)(?<=[.!?…]["'”’»)\]]*)|(?<=[。！？])/u;
/** The end of a clause, before the space that follows it. */
const CLAUSE_END = /(?<=[;:,])(?=\s)/u;

/**
 * From the strongest boundary to the weakest. The splitter uses the first one the text contains, and the next ones
 * for the pieces still too large; the heading and line separators are kept at the start of the piece they begin,
 * the sentence and clause markers only choose a level (the split itself is SENTENCE_END or CLAUSE_END).
 */
const SEPARATORS = [
  '\n# ',
  '\n## ',
  '\n### ',
  '\n#### ',
  '\n##### ',
  '\n###### ',
  '\n\n',
  '\n',
  '. ',
  '? ',
  '! ',
  '。',
  '！',
  '？',
  '; ',
  ', ',
  ' ',
  '',
];
const SENTENCE_MARKERS = new Set(['. ', '? ', '! ', '。', '！', '？']);
const CLAUSE_MARKERS = new Set(['; ', ', ']);

/**
 * `text` split on `separator`: before each of its occurrences (the separator starts the piece it begins), at a
 * sentence or a clause end for their markers, by code point for '' (a character outside the BMP is never cut in
 * two). Without empty pieces.
 */
function splitOnSeparator(text: string, separator: string): string[] {
  if (SENTENCE_MARKERS.has(separator)) return text.split(SENTENCE_END).filter((piece) => piece !== '');
  if (CLAUSE_MARKERS.has(separator)) return text.split(CLAUSE_END).filter((piece) => piece !== '');
  if (separator === '') return Array.from(text);
  const escaped = separator.replace(/[/\-\\^$*+?.()|[\]{}]/g, '\\$&');
  return text.split(new RegExp(`(?=${escaped})`)).filter((piece) => piece !== '');
}

/**
 * The splitter: RecursiveCharacterTextSplitter's algorithm (@langchain/textsplitters 1.0), with its separators kept
 * and no overlap, and pieces measured by `length`. Written here rather than imported: the package brings
 * @langchain/core and its tracing with it, some hundreds of modules for these few functions, that a server would load
 * at the first source it chunks. test/knowledge/chunk.test.ts compares it with the package.
 */
class BoundarySplitter {
  readonly #chunkSize: number;
  readonly #length: (piece: string) => number;

  constructor(chunkSize: number, length: (piece: string) => number) {
    this.#chunkSize = chunkSize;
    this.#length = length;
  }

  splitText(text: string): string[] {
    return this.#split(text, SEPARATORS);
  }

  /** The pieces of `text` at the first of `separators` it contains, those still too long split at the next ones. */
  #split(text: string, separators: readonly string[]): string[] {
    const chunks: string[] = [];
    let separator = separators.at(-1)!;
    let next: readonly string[] | undefined;
    for (let i = 0; i < separators.length; i += 1) {
      const candidate = separators[i]!;
      if (candidate === '') {
        separator = candidate;
        break;
      }
      if (text.includes(candidate)) {
        separator = candidate;
        next = separators.slice(i + 1);
        break;
      }
    }
    let fitting: string[] = [];
    for (const piece of splitOnSeparator(text, separator)) {
      if (this.#length(piece) < this.#chunkSize) {
        fitting.push(piece);
        continue;
      }
      if (fitting.length > 0) {
        chunks.push(...this.#merge(fitting));
        fitting = [];
      }
      if (next) chunks.push(...this.#split(piece, next));
      else chunks.push(piece);
    }
    if (fitting.length > 0) chunks.push(...this.#merge(fitting));
    return chunks;
  }

  /**
   * Consecutive pieces joined into chunks of at most the chunk size (trimmed; none empty). Each piece is under the
   * chunk size and at least a token, so a chunk is never over it, and none is repeated in the next (no overlap).
   */
  #merge(pieces: string[]): string[] {
    const chunks: string[] = [];
    let current: string[] = [];
    let total = 0;
    const close = () => {
      const chunk = current.join('').trim();
      if (chunk !== '') chunks.push(chunk);
    };
    for (const piece of pieces) {
      const length = this.#length(piece);
      if (total + length > this.#chunkSize && current.length > 0) {
        close();
        current = [];
        total = 0;
      }
      current.push(piece);
      total += length;
    }
    close();
    return chunks;
  }
}

/** The splitter's pieces of `text`, each under `chunkSize` tokens where a boundary allows (what chunkText starts from). */
export function boundarySplits(text: string, chunkSize: number): string[] {
  return splitter(chunkSize).splitText(text);
}

function splitter(chunkSize: number): BoundarySplitter {
  // The splitter counts the same pieces more than once (when it adds them up, when it drops them from a chunk).
  const counted = new Map<string, number>();
  return new BoundarySplitter(chunkSize, (piece: string): number => {
    let tokens = counted.get(piece);
    if (tokens === undefined) {
      tokens = countTokens(piece);
      counted.set(piece, tokens);
    }
    return tokens;
  });
}

/** The chunks of `text`, without empty ones. Throws a RangeError for options outside their ranges. */
export async function chunkText(text: string, options: ChunkOptions): Promise<Chunk[]> {
  const { maxChunkTokens: max, overlapTokens: overlap } = options;
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxChunkTokens must be a positive integer, not ${max}`);
  if (!Number.isInteger(overlap) || overlap < 0 || overlap * 2 > max) {
    throw new RangeError(
      `overlapTokens must be an integer from 0 to half of maxChunkTokens (${Math.floor(max / 2)}), not ${overlap}`,
    );
  }
  if (text.trim() === '') return [];

  const pieces = await fitToBudget(boundarySplits(text, Math.max(1, max - overlap)), max - overlap);
  const chunks: string[] = [];
  let cursor = 0;
  let previous: { start: number; end: number } | null = null;
  for (const piece of pieces) {
    const at = text.indexOf(piece, cursor);
    if (at < 0) {
      // Not found as is (the splitter returns trimmed slices of the text, so this should not happen): the piece alone.
      chunks.push(piece);
      previous = null;
      continue;
    }
    const end = at + piece.length;
    cursor = end;
    // A heading the splitter left alone (its section's first paragraph did not fit with it) joins what follows.
    if (previous !== null && isHeadingOnly(chunks.at(-1)!) && countTokens(text.slice(previous.start, end)) <= max) {
      chunks[chunks.length - 1] = text.slice(previous.start, end);
      previous = { start: previous.start, end };
      continue;
    }
    let start = at;
    if (previous !== null && overlap > 0 && !/^#{1,6}\s/.test(piece)) {
      start = overlapStart(text, previous, end, overlap, max) ?? at;
    }
    chunks.push(text.slice(start, end));
    previous = { start, end };
  }
  return chunks
    .filter((chunk) => chunk.trim() !== '')
    .map((chunk, index) => ({ index, text: chunk, tokens: countTokens(chunk) }));
}

function isHeadingOnly(chunk: string): boolean {
  return chunk.split('\n').every((line) => line.trim() === '' || /^#{1,6}\s/.test(line));
}

/**
 * The pieces, each at most `budget` tokens. The splitter adds up the tokens of the parts it joins, and a join can
 * count a token more than its parts (rarely): such a piece is cut again, with a smaller size, and as a last resort
 * at a token.
 */
async function fitToBudget(pieces: string[], budget: number): Promise<string[]> {
  const out: string[] = [];
  for (const piece of pieces) {
    if (countTokens(piece) <= budget) {
      out.push(piece);
      continue;
    }
    let size = budget;
    let parts: string[] = [piece];
    while (parts.some((part) => countTokens(part) > budget) && size > 1) {
      size = Math.max(1, Math.floor(size * 0.9));
      parts = boundarySplits(piece, size);
    }
    for (let part of parts) {
      while (countTokens(part) > budget) {
        const head = truncateTokens(part, budget).text;
        if (head.trim() !== '') out.push(head.trim());
        part = part.slice(head.length);
      }
      if (part.trim() !== '') out.push(part.trim());
    }
  }
  return out;
}

/**
 * Where the chunk that ends at `end` starts, in the previous chunk ([previous.start, previous.end)): the earliest
 * sentence start (after a sentence end or a line break) from which the end of the previous chunk is at most
 * `overlap` tokens, if that is at least half of them, else the earliest such word start; and the whole chunk at most
 * `max` tokens. Null when nothing fits (a previous chunk that is one long word).
 */
function overlapStart(
  text: string,
  previous: { start: number; end: number },
  end: number,
  overlap: number,
  max: number,
): number | null {
  // Only the end of the previous chunk can be repeated: a token is rarely more than a few characters, so the last
  // 16 characters a token of overlap hold every candidate in practice (the counts below decide, not this bound).
  const from = Math.max(previous.start, previous.end - overlap * 16 - 64);
  const region = text.slice(from, previous.end);
  const tail = (start: number) => countTokens(text.slice(start, previous.end));
  const sentences: number[] = from === previous.start ? [from] : [];
  const words: number[] = from === previous.start ? [from] : [];
  for (const match of region.matchAll(/(?:[.!?…]["'”’»)\]]*\s+|\n(?<!\n[^\S\n]*\n)\s*)(?=\S)/gu))
    sentences.push(from + match.index + match[0].length);
  for (const match of region.matchAll(/(?<=[。！？])(?=\S)/gu)) sentences.push(from + match.index);
  for (const match of region.matchAll(/(?<!\s)\s+(?=\S)/gu)) words.push(from + match.index + match[0].length);
  sentences.sort((a, b) => a - b);

  const bySentence = earliestWithin(sentences, tail, overlap);
  const start =
    bySentence !== null && tail(bySentence) * 2 >= overlap ? bySentence : earliestWithin(words, tail, overlap);
  if (start === null) return null;
  // The whole chunk (the repeated end, what lies between, the new piece) within max: else less is repeated.
  const candidates = [start, ...words.filter((word) => word > start)];
  for (const candidate of candidates) {
    if (countTokens(text.slice(candidate, end)) <= max) return candidate;
  }
  return null;
}

/** The first of the ascending `starts` whose tail is at most `limit` tokens (tails shrink as starts grow). */
function earliestWithin(starts: number[], tail: (start: number) => number, limit: number): number | null {
  let low = 0;
  let high = starts.length; // the answer is in [low, high]; high = none
  while (low < high) {
    const middle = (low + high) >> 1;
    if (tail(starts[middle]!) <= limit) high = middle;
    else low = middle + 1;
  }
  // A tail's tokens are not strictly monotonic in its start (a token can span the cut): check, and move on if needed.
  for (let i = low; i < starts.length; i++) if (tail(starts[i]!) <= limit) return starts[i]!;
  return null;
}

// Normalisation for banned phrases, and the regex view (see the header of match.ts).
import { skeleton } from '../skeleton.ts';

/** How many segments each conversion keeps converted (a text may hold any number of distinct ones). */
const MAX_CACHED_SEGMENTS = 65_536;

const SEPARATOR = /^[\s\-\u2010-\u2015]$/u;
const ASCII_SEPARATOR = /^[\s-]$/;
// Invisible characters (soft hyphen, zero-width space, …) would otherwise hide a phrase from the matcher.
const IGNORABLE = /^\p{Default_Ignorable_Code_Point}$/u;
// A combining mark (or a Hangul vowel/final jamo) belongs to the character before it: NFKC may compose them.
const JOINS_PREVIOUS = /^[\p{M}\u1160-\u11FF]$/u;
const WORD = /^[\p{L}\p{N}\p{M}_]$/u;
const SPACE = /^\p{Zs}$/u;
export const ASCII_ONLY = /^[\x00-\x7F]*$/;
/** On normalised (so lower-case) text. */
export const isWord = (ch: string) =>
  ch < '\x80' ? (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch === '_' : WORD.test(ch);

export interface Normalized {
  cps: string[];
  /** For each normalised code point, the original code point it came from (the start of its segment). */
  map: number[];
  /** For each normalised code point, the end of its original segment: a match ending there ends here. */
  ends: number[];
}

export const joinsPrevious = (ch: string) => ch >= '\u0300' && JOINS_PREVIOUS.test(ch);

/**
 * Full case folding where it is cheap: toLowerCase (locale-independent, unlike toLocaleLowerCase), with `ß` (and
 * `ẞ`) as `ss`, `İ` as `i` (toLowerCase would add U+0307), and final sigma as sigma.
 */
const fold = (s: string) =>
  s
    .replace(/\u0130/g, 'i')
    .toLowerCase()
    .replace(/ß/g, 'ss')
    .replace(/ς/g, 'σ');

/**
 * Normalises segment by segment (a code point and the combining marks after it): `convert` gives the code points a
 * segment's text stands for (none for an invisible one). A space that follows a space is merged with `collapse`.
 */
function normalizeSegments(
  cps: readonly string[],
  ascii: (ch: string) => string,
  convert: (segment: string) => Iterable<string>,
  collapse: boolean,
): Normalized {
  const out: Normalized = { cps: [], map: [], ends: [] };
  const emit = (ch: string, i: number, j: number) => {
    if (collapse && ch === ' ' && out.cps.at(-1) === ' ') out.ends[out.ends.length - 1] = j;
    else {
      out.cps.push(ch);
      out.map.push(i);
      out.ends.push(j);
    }
  };
  for (let i = 0; i < cps.length; ) {
    let j = i + 1;
    while (j < cps.length && joinsPrevious(cps[j]!)) j++;
    const first = cps[i]!;
    // ASCII is its own NFKC form and has no invisible characters: skip the costly calls for the common case.
    if (j === i + 1 && first < '\x80') emit(ascii(first), i, j);
    else for (const ch of convert(j === i + 1 ? first : cps.slice(i, j).join(''))) emit(ch, i, j);
    i = j;
  }
  return out;
}

/** `convert` with its results kept: a text repeats its characters, and converting one takes a few normalisations. */
function cached<T>(convert: (segment: string) => T): (segment: string) => T {
  const results = new Map<string, T>();
  return (segment) => {
    let result = results.get(segment);
    if (result === undefined) {
      result = convert(segment);
      if (results.size < MAX_CACHED_SEGMENTS) results.set(segment, result);
    }
    return result;
  };
}

const phraseAscii = (ch: string) => (ASCII_SEPARATOR.test(ch) ? ' ' : ch.toLowerCase());
const phraseConvert = cached((segment) => {
  const out: string[] = [];
  for (const ch of fold(segment.normalize('NFKC'))) if (!IGNORABLE.test(ch)) out.push(SEPARATOR.test(ch) ? ' ' : ch);
  return out;
});
export const normalizeCps = (cps: readonly string[]) => normalizeSegments(cps, phraseAscii, phraseConvert, true);

export const regexConvert = cached((segment) => {
  const out: string[] = [];
  for (const ch of segment.normalize('NFKC')) if (!IGNORABLE.test(ch)) out.push(SPACE.test(ch) ? ' ' : ch);
  return out;
});
const identity = (ch: string) => ch;

/**
 * The skeleton taken before case folding and again after it, then folded: many capital look-alikes lower-case to
 * letters that have no prototype (Cyrillic `В` to `в`, `Н` to `н`), while some lower-case ones have a prototype that
 * their capital lacks.
 */
const phraseSkeletonConvert = cached((segment) =>
  Array.from(fold(skeleton(phraseConvert(skeleton(segment.normalize('NFKC'))).join(''))), (ch) =>
    SEPARATOR.test(ch) ? ' ' : ch,
  ),
);
export const skeletonCps = (cps: readonly string[]) => normalizeSegments(cps, phraseAscii, phraseSkeletonConvert, true);

/** The skeleton of what regexConvert gives, case kept. */
export const regexSkeletonConvert = cached((segment) => Array.from(skeleton(regexConvert(segment).join(''))));

/** Whether a segment's skeleton differs from what it is made from, in either copy. */
const hasOwnSkeleton = cached(
  (segment) =>
    regexSkeletonConvert(segment).join('') !== regexConvert(segment).join('') ||
    phraseSkeletonConvert(segment).join('') !== phraseConvert(segment).join(''),
);

/** Whether a segment of the text has a skeleton of its own; if none has, each skeleton is the copy it is made from. */
export function hasLookAlikes(cps: readonly string[]): boolean {
  for (let i = 0; i < cps.length; ) {
    let j = i + 1;
    while (j < cps.length && joinsPrevious(cps[j]!)) j++;
    if ((j > i + 1 || cps[i]! >= '\x80') && hasOwnSkeleton(j === i + 1 ? cps[i]! : cps.slice(i, j).join('')))
      return true;
    i = j;
  }
  return false;
}

/** The regex view of a text (see the header of match.ts), indexed for RE2. */
export interface View extends Normalized {
  text: string;
  cpToU16: Int32Array;
  u16ToCp: Int32Array;
  /** For each original code point (and the end), the first code point of the view that maps to it or later. */
  at: Int32Array;
}

export function regexView(original: readonly string[], convert: (segment: string) => Iterable<string>): View {
  const n = normalizeSegments(original, identity, convert, false);
  // Indexed from the array, not by splitting the joined text: two lone surrogates may meet once what was between
  // them is dropped.
  const cpToU16 = new Int32Array(n.cps.length + 1);
  let u = 0;
  for (let i = 0; i < n.cps.length; u += n.cps[i++]!.length) cpToU16[i] = u;
  cpToU16[n.cps.length] = u;
  const u16ToCp = new Int32Array(u + 1);
  for (let i = 0; i <= n.cps.length; i++) u16ToCp[cpToU16[i]!] = i;
  const at = new Int32Array(original.length + 1);
  for (let i = 0, k = 0; i <= original.length; i++) {
    while (k < n.map.length && n.map[k]! < i) k++;
    at[i] = k;
  }
  return { ...n, text: n.cps.join(''), cpToU16, u16ToCp, at };
}

/**
 * The text as banned phrases are matched: NFKC, case folded, invisible characters dropped, and every run of
 * whitespace and dashes as one space. `map[i]` is the index (in code points) of the original code point that
 * normalised code point `i` came from.
 */
export function normalizeForMatching(text: string): { normalized: string; map: number[] } {
  const { cps, map } = normalizeCps(Array.from(text));
  return { normalized: cps.join(''), map };
}

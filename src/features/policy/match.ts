// Output policy matching: pure and deterministic. A policy is a list of rules (a voice's banned phrases, a workspace's
// compliance rules); `apply` checks a whole text, and `StreamGuard` checks a stream as it arrives, releasing text
// only when no match can still start or grow in it. Offsets count code points of the original text, never UTF-16 units.
//
// How matches are found, so that a stream and the whole text agree:
// - Banned phrases are found on a normalised copy of the text (NFKC, case folded, invisible characters dropped,
//   separator runs as one space) by a trie walk from every position. The result at a position does not depend on
//   where the scan began.
// - Regexes (the rule's own, and those that find personal data) run on RE2 (re2js: linear time, no backtracking) over
//   another normalised copy, the "regex view": NFKC, invisible characters dropped (zero-width spaces and joiners,
//   U+2060, U+FEFF, the soft hyphen, …), Unicode spaces as a plain space, case kept (RE2's flag ignores case unless
//   the rule is case sensitive). So `ＡＣＭＥ－１２３４`, `AC<U+200B>ME-1234` and a card number with no-break spaces
//   match as their plain spellings do. A match covers the original characters, invisible ones inside it included.
//   Each search is leftmost-first and resumes where its last candidate ended. A stream keeps, per detector, where
//   that search must resume, so it goes through exactly the candidates that a scan of the whole text goes through.
// - Look-alike characters (skeleton.ts: Cyrillic `о`, dotless `ı`, an en dash for `-`, …) are folded in a second
//   copy of each: banned phrases are also matched skeleton to skeleton (the phrase's on the text's), and each regex
//   also runs on the skeleton of the regex view, as a detector of its own. A match on either copy counts. ASCII is
//   not folded: in a text without look-alikes the skeletons are the copies themselves, and nothing is done twice.
// - Both copies normalise each character with the combining marks after it (a "segment") on its own, so a segment
//   normalises the same in a stream's window as in the whole text; only the last one may still grow.
// - A detector decides a match from at most `holdback` code points of its view after the match's start: its
//   longest match, plus the characters after it that its check reads. Dropped invisible characters do not count, so
//   the guard counts the holdback on the regex view and on its skeleton (up to the last segment, which may still
//   grow; a skeleton may be shorter than the view where a look-alike and its marks compose), and a match that
//   starts `holdback` such code points before the end of what has arrived is settled however many invisible
//   characters it holds. An RE2 pattern of unbounded length (`a+`, `\s*`) gets 256, and in a stream a longer match of
//   it may be missed. A banned phrase is exact whatever its length, because the guard also holds text from the start
//   of any phrase still in progress at the end of the buffer (`game<100 spaces>changer`).
// - A block rule wins: any of its matches blocks, even one that overlaps a redaction.
import { RE2JS } from 're2js';
import { skeleton } from './skeleton.ts';

export type PersonalDataType = 'email' | 'phone' | 'payment_card';

export interface PolicyRule {
  id: string;
  kind: 'banned_phrase' | 'regex' | 'personal_data';
  phrases?: string[];
  pattern?: string;
  caseSensitive?: boolean;
  types?: PersonalDataType[];
  action: 'block' | 'redact';
  replacement?: string;
  label: string;
}

export interface PolicyMatch {
  ruleId: string;
  kind: PolicyRule['kind'];
  action: 'block' | 'redact';
  start: number;
  end: number;
  matchedText: string;
  what: string;
  /** For a banned_phrase match: the phrase as configured (the voice check lists it). */
  phrase?: string;
}

/** A rule that cannot compile. The message names the rule and says why; `reason` is the why alone (for a 422). */
export class PolicyRuleError extends Error {
  override readonly name = 'PolicyRuleError';
  readonly ruleId: string | undefined;
  readonly reason: string;
  constructor(message: string, details?: { ruleId: string; reason: string }) {
    super(message);
    this.ruleId = details?.ruleId;
    this.reason = details?.reason ?? message;
  }
}

export interface Policy {
  readonly rules: readonly PolicyRule[];
  scan(text: string): PolicyMatch[];
  apply(text: string): { text: string; blocked: PolicyMatch | null; redactions: PolicyMatch[] };
  /**
   * How many code points a stream holds back, counted on the regex view and on its skeleton (see the header):
   * invisible characters do not count, so no margin for them is needed, and a match with any number of them inside is
   * settled in time.
   */
  readonly holdback: number;
}

/** The holdback for a regex whose matches have no length bound. */
const UNBOUNDED_REGEX_HOLDBACK = 256;
/**
 * How many released code points a stream keeps as left context: word boundaries and NFKC read what comes before,
 * and a phone candidate that straddles the release point is searched again from its start (see #step): that needs
 * the longest phone candidate (35) and the 2 characters its check reads before it. The context holds at least this
 * many code points of the regex view too (invisible characters in it do not count), but at most MAX_CONTEXT code
 * points of the original: a phone candidate with hundreds of invisible characters inside may be missed in a stream.
 */
const CONTEXT = 64;
const MAX_CONTEXT = 1024;
/** How many segments each conversion keeps converted (a text may hold any number of distinct ones). */
const MAX_CACHED_SEGMENTS = 65_536;

// ---------------------------------------------------------------------------------------------------------------
// Normalisation for banned phrases, and the regex view

const SEPARATOR = /^[\s\-\u2010-\u2015]$/u;
const ASCII_SEPARATOR = /^[\s-]$/;
// Invisible characters (soft hyphen, zero-width space, …) would otherwise hide a phrase from the matcher.
const IGNORABLE = /^\p{Default_Ignorable_Code_Point}$/u;
// A combining mark (or a Hangul vowel/final jamo) belongs to the character before it: NFKC may compose them.
const JOINS_PREVIOUS = /^[\p{M}\u1160-\u11FF]$/u;
const WORD = /^[\p{L}\p{N}\p{M}_]$/u;
const SPACE = /^\p{Zs}$/u;
const ASCII_ONLY = /^[\x00-\x7F]*$/;
/** On normalised (so lower-case) text. */
const isWord = (ch: string) => (ch < '\x80' ? (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch === '_' : WORD.test(ch));

interface Normalized {
  cps: string[];
  /** For each normalised code point, the original code point it came from (the start of its segment). */
  map: number[];
  /** For each normalised code point, the end of its original segment: a match ending there ends here. */
  ends: number[];
}

const joinsPrevious = (ch: string) => ch >= '\u0300' && JOINS_PREVIOUS.test(ch);

/**
 * Full case folding where it is cheap: toLowerCase (locale-independent, unlike toLocaleLowerCase), with `ß` (and
 * `ẞ`) as `ss`, `İ` as `i` (toLowerCase would add U+0307), and final sigma as sigma.
 */
const fold = (s: string) => s.replace(/\u0130/g, 'i').toLowerCase().replace(/ß/g, 'ss').replace(/ς/g, 'σ');

/**
 * Normalises segment by segment (a code point and the combining marks after it): `convert` gives the code points a
 * segment's text stands for (none for an invisible one). A space that follows a space is merged with `collapse`.
 */
function normalizeSegments(cps: readonly string[], ascii: (ch: string) => string, convert: (segment: string) => Iterable<string>, collapse: boolean): Normalized {
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
const normalizeCps = (cps: readonly string[]) => normalizeSegments(cps, phraseAscii, phraseConvert, true);

const regexConvert = cached((segment) => {
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
  Array.from(fold(skeleton(phraseConvert(skeleton(segment.normalize('NFKC'))).join(''))), (ch) => (SEPARATOR.test(ch) ? ' ' : ch)),
);
const skeletonCps = (cps: readonly string[]) => normalizeSegments(cps, phraseAscii, phraseSkeletonConvert, true);

/** The skeleton of what regexConvert gives, case kept. */
const regexSkeletonConvert = cached((segment) => Array.from(skeleton(regexConvert(segment).join(''))));

/** Whether a segment's skeleton differs from what it is made from, in either copy. */
const hasOwnSkeleton = cached((segment) => regexSkeletonConvert(segment).join('') !== regexConvert(segment).join('') || phraseSkeletonConvert(segment).join('') !== phraseConvert(segment).join(''));

/** Whether a segment of the text has a skeleton of its own; if none has, each skeleton is the copy it is made from. */
function hasLookAlikes(cps: readonly string[]): boolean {
  for (let i = 0; i < cps.length; ) {
    let j = i + 1;
    while (j < cps.length && joinsPrevious(cps[j]!)) j++;
    if ((j > i + 1 || cps[i]! >= '\x80') && hasOwnSkeleton(j === i + 1 ? cps[i]! : cps.slice(i, j).join(''))) return true;
    i = j;
  }
  return false;
}

/** The regex view of a text (see the header), indexed for RE2. */
interface View extends Normalized {
  text: string;
  cpToU16: Int32Array;
  u16ToCp: Int32Array;
  /** For each original code point (and the end), the first code point of the view that maps to it or later. */
  at: Int32Array;
}

function regexView(original: readonly string[], convert: (segment: string) => Iterable<string>): View {
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

// ---------------------------------------------------------------------------------------------------------------
// Detectors

interface TrieNode {
  next: Map<string, TrieNode>;
  phrase?: string; // as configured, for messages
  lastIsWord?: boolean;
}

type Span = [start: number, end: number];
/** A regex's candidate: its start and the start of the match found in it (-1: none) in the original, and its span on the view. */
type Candidate = [start: number, matchStart: number, viewStart: number, viewEnd: number];
/** What of a regex's candidate (on the regex view) is a match (null: none). A refused candidate still moves the search on. */
type Accept = (cps: readonly string[], start: number, end: number) => Span | null;
type Detector =
  /** `skeletonDiffers`: some phrase is not its own skeleton, so the skeleton trie may match ASCII text that the trie does not. */
  | { type: 'phrases'; rule: PolicyRule; trie: TrieNode; skeletonTrie: TrieNode; skeletonDiffers: boolean }
  | { type: 'regex'; rule: PolicyRule; re: RE2JS; what: string; accept?: Accept; view: 'text' | 'skeleton' };

/** Each regex runs on the regex view and on its skeleton. */
const REGEX_VIEWS = ['text', 'skeleton'] as const;

const isDigit = (ch: string | undefined) => ch !== undefined && ch >= '0' && ch <= '9';

function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    const d = (digits.charCodeAt(digits.length - 1 - i) - 48) * (i % 2 === 1 ? 2 : 1);
    sum += d > 9 ? d - 9 : d;
  }
  return sum % 10 === 0;
}

/** Whether cps[s, e) is a phone number on its own. */
function isPhone(cps: readonly string[], s: number, e: number): boolean {
  const t = cps.slice(s, e).join('');
  const digits = t.replace(/\D/g, '').length;
  if (digits < 7 || digits > 15 || /[ .\-]{2}/.test(t)) return false;
  // Not part of a word, a price, an amount or a longer number.
  if (/^[\p{L}\p{N}_\p{Sc}+\-.,/#@]$/u.test(cps[s - 1] ?? '')) return false;
  if (/^[\p{L}\p{N}_\p{Sc}%/]$/u.test(cps[e] ?? '') || (/^[.,\-]$/.test(cps[e] ?? '') && isDigit(cps[e + 1]))) return false;
  if (t.startsWith('+') || t.includes('(')) return true;
  // A national number: plain runs are order numbers and ids; two short groups are ranges ('2019-2026'); long groups
  // come last ('030 1234567'); one-digit groups are versions and ISBNs; then dates, IPv4 addresses and decimals.
  const groups = t.split(/[ .\-]/);
  if (groups.length < 2 || (groups.length === 2 && digits < 9)) return false;
  if (groups.slice(0, -1).some((g) => g.length > 5) || groups.slice(1).some((g) => g.length < 2)) return false;
  return !/^(?:\d{4}([.\-])\d\d\1\d\d|\d\d([.\-])\d\d\2\d{4}|\d{1,3}(?:\.\d{1,3}){3}|\d+\.\d+)$/.test(t);
}

const PERSONAL_DATA: Record<PersonalDataType, { pattern: string; what: string; accept: Accept }> = {
  email: {
    // RFC 5321 sizes: a local part of at most 64, labels of at most 63; up to four labels and a TLD.
    pattern: '[a-z0-9._%+\\-]{1,64}@(?:[a-z0-9\\-]{1,63}\\.){1,4}[a-z]{2,24}',
    what: 'an email address',
    accept: (cps, s, e) => (/^[\w.%+\-@]$/.test(cps[s - 1] ?? '') || /^[\w@]$/.test(cps[e] ?? '') ? null : [s, e]),
  },
  phone: {
    // An optional +country code, an optional (area code), then digit groups with single separators.
    pattern: '(?:\\+\\d{1,3}[ .\\-]?)?(?:\\(\\d{1,5}\\)[ .\\-]?)?\\d[\\d .\\-]{4,20}\\d',
    what: 'a phone number',
    accept: (cps, s, e) => {
      // The search is greedy ('555-123-4567 2 times' gives '555-123-4567 2'). Where spaces join groups that other
      // separators also join, a space may end one number and start the next: try the spans between spaces, leftmost
      // then longest. Groups joined only by spaces ('4111 1111 1111 1112') are one number.
      const spaces: number[] = [];
      const mixed = cps.slice(s, e).some((ch) => ch === '-' || ch === '.' || ch === '(');
      for (let i = s; i < e && mixed; i++) if (cps[i] === ' ') spaces.push(i);
      for (const a of [s, ...spaces.map((i) => i + 1)]) for (const b of [e, ...spaces.toReversed()]) if (b > a && isPhone(cps, a, b)) return [a, b];
      return null;
    },
  },
  payment_card: {
    pattern: '\\d(?:[ \\-]?\\d){12,18}',
    what: 'a payment card number',
    // The whole run of digits (single separators included) must be the number, not part of a longer one.
    accept: (cps, s, e) => {
      const joins = (a: string | undefined, b: string | undefined) => isDigit(a) || (/^[ \-]$/.test(a ?? '') && isDigit(b));
      return joins(cps[s - 1], cps[s - 2]) || joins(cps[e], cps[e + 1]) || !luhn(cps.slice(s, e).join('').replace(/\D/g, '')) ? null : [s, e];
    },
  },
};
/** Code points after a personal-data candidate that its check reads. */
const PERSONAL_DATA_LOOKAHEAD = 2;

/**
 * What RE2's compiled program says about a pattern: whether it can match the empty string (assertions such as `\b`
 * count as satisfiable), and the most code points a match can span (Infinity with a loop that consumes input). This
 * reads re2js's program (ops as in Go's regexp/syntax), and is null if the program does not have the expected shape.
 */
function analyse(re: RE2JS): { empty: boolean; maxLen: number } | null {
  const prog = (re.re2Input as { prog?: { inst?: { op: number; out: number; arg: number }[]; start?: number } }).prog;
  const inst = prog?.inst;
  if (!Array.isArray(inst) || typeof prog?.start !== 'number') return null;
  const MATCH = 6;
  const edges = (pc: number): [to: number, consumes: number][] => {
    const i = inst[pc];
    switch (i?.op) {
      case 1: case 2: return [[i.out, 0], [i.arg, 0]]; // prettier-ignore
      case 3: case 4: case 7: return [[i.out, 0]]; // prettier-ignore
      case 5: case MATCH: return []; // prettier-ignore
      case 8: case 9: case 10: case 11: return [[i.out, 1]]; // prettier-ignore
      default: throw new Error(`unexpected instruction at ${pc}`);
    }
  };
  try {
    // Tarjan's strongly connected components come out successors first, so the longest path to a match is computed
    // in that order. A component with a consuming edge inside it that can still reach a match is unbounded.
    const index = new Int32Array(inst.length).fill(-1);
    const low = new Int32Array(inst.length);
    const comp = new Int32Array(inst.length).fill(-1);
    const best: number[] = [];
    const stack: number[] = [];
    let counter = 0;
    const visit = (v: number): void => {
      index[v] = low[v] = counter++;
      stack.push(v);
      for (const [w] of edges(v)) {
        if (index[w] === -1) {
          visit(w);
          low[v] = Math.min(low[v]!, low[w]!);
        } else if (comp[w] === -1) {
          low[v] = Math.min(low[v]!, index[w]!); // on the stack: the same component
        }
      }
      if (low[v] !== index[v]) return;
      const c = best.length;
      const members: number[] = [];
      for (let w = -1; w !== v; members.push(w)) {
        w = stack.pop()!;
        comp[w] = c;
      }
      let length = -Infinity;
      let loops = false;
      for (const u of members) {
        if (inst[u]!.op === MATCH) length = Math.max(length, 0);
        for (const [w, consumes] of edges(u)) {
          if (comp[w] === c) loops ||= consumes > 0;
          else length = Math.max(length, consumes + best[comp[w]!]!);
        }
      }
      best.push(loops && length > -Infinity ? Infinity : length);
    };
    visit(prog.start);
    const seen = new Set<number>();
    const emptyFrom = (pc: number): boolean => !seen.has(pc) && (seen.add(pc), inst[pc]!.op === MATCH || edges(pc).some(([w, consumes]) => !consumes && emptyFrom(w)));
    return { empty: emptyFrom(prog.start), maxLen: best[comp[prog.start]!]! };
  } catch {
    return null; // an unexpected program, or one too deep to walk
  }
}

function compileRegex(pattern: string, flags: number, fail: (why: string) => never): { re: RE2JS; maxLen: number } {
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern, flags);
  } catch (error) {
    fail(`the pattern /${pattern}/ is not valid RE2 syntax: ${(error as Error).message}`);
  }
  // Without the program's shape: look for an empty match at the end of a few texts, where only an empty one fits.
  const facts = analyse(re) ?? { empty: ['', 'a', ' ', '\n', '0'].some((s) => re.matcher(s).find(s.length)), maxLen: Infinity };
  if (facts.empty) fail(`the pattern /${pattern}/ can match the empty string`);
  return { re, maxLen: facts.maxLen };
}

// ---------------------------------------------------------------------------------------------------------------
// Scanning

/** A text by code points, with its regex view and that view's skeleton (made when first needed). */
interface Indexed {
  text: string;
  cps: string[];
  /** Whether some character has a skeleton of its own (never in ASCII text): else each skeleton is its copy. */
  lookAlikes: boolean;
  view?: View;
  skeleton?: View;
}

function indexText(text: string): Indexed {
  const cps = Array.from(text);
  return { text, cps, lookAlikes: !ASCII_ONLY.test(text) && hasLookAlikes(cps) };
}
const viewOf = (w: Indexed): View => (w.view ??= regexView(w.cps, regexConvert));
const skeletonViewOf = (w: Indexed): View => (w.skeleton ??= w.lookAlikes ? regexView(w.cps, regexSkeletonConvert) : viewOf(w));
const viewFor = (detector: Detector, w: Indexed): View => (detector.type === 'regex' && detector.view === 'skeleton' ? skeletonViewOf(w) : viewOf(w));

/** A match in the coordinates of the scanned text, found by detector `d`. */
interface Hit {
  d: number;
  start: number;
  end: number;
  what: string;
  phrase?: string;
}

/** Overlapping matches removed from sorted ones: the earlier (then the longer) stays. */
function dedupe(hits: readonly Hit[]): Hit[] {
  const kept: Hit[] = [];
  for (const hit of hits) if (hit.start >= (kept.at(-1)?.end ?? 0)) kept.push(hit);
  return kept;
}

class CompiledPolicy implements Policy {
  readonly rules: readonly PolicyRule[];
  readonly holdback: number;
  readonly detectors: Detector[] = [];

  constructor(rules: PolicyRule[]) {
    this.rules = Object.freeze(rules.map((rule) => ({ ...rule })));
    let holdback = 0;
    for (const rule of this.rules) {
      const fail = (why: string): never => {
        throw new PolicyRuleError(`rule ${rule.id}: ${why}`, { ruleId: rule.id, reason: why });
      };
      if (rule.action !== 'block' && rule.action !== 'redact') fail(`unknown action "${String(rule.action)}"`);
      if (rule.kind === 'banned_phrase') {
        if (!rule.phrases?.length) fail('a banned_phrase rule needs at least one phrase');
        const trie: TrieNode = { next: new Map() };
        const skeletonTrie: TrieNode = { next: new Map() };
        let skeletonDiffers = false;
        let longest = 0;
        for (const phrase of rule.phrases!) {
          const cps = trimmed(normalizeCps(Array.from(phrase)).cps);
          if (cps.length === 0) fail(`the phrase "${phrase}" is empty once normalised`);
          longest = Math.max(longest, cps.length);
          insert(trie, cps, phrase);
          const folded = trimmed(skeletonCps(Array.from(phrase)).cps);
          insert(skeletonTrie, folded, phrase);
          skeletonDiffers ||= folded.join('') !== cps.join('');
        }
        this.detectors.push({ type: 'phrases', rule, trie, skeletonTrie, skeletonDiffers });
        // Room for separator runs between the letters. The guard does not rely on it (it holds any phrase still in
        // progress), but it keeps a phrase from being released in pieces of a few letters each.
        holdback = Math.max(holdback, 2 * longest + 8);
      } else if (rule.kind === 'regex') {
        if (typeof rule.pattern !== 'string' || rule.pattern === '') fail('a regex rule needs a pattern');
        const { re, maxLen } = compileRegex(rule.pattern!, rule.caseSensitive ? 0 : RE2JS.CASE_INSENSITIVE, fail);
        for (const view of REGEX_VIEWS) this.detectors.push({ type: 'regex', rule, re, what: `a match of the regex /${rule.pattern}/`, view });
        // One more code point: an assertion at the end of a match (`\b`, `$`) reads the character after it.
        holdback = Math.max(holdback, Number.isFinite(maxLen) ? maxLen + 1 : UNBOUNDED_REGEX_HOLDBACK);
      } else if (rule.kind === 'personal_data') {
        if (!rule.types?.length) fail('a personal_data rule needs at least one type');
        for (const type of new Set(rule.types)) {
          const spec = Object.hasOwn(PERSONAL_DATA, type) ? PERSONAL_DATA[type] : fail(`unknown personal data type "${String(type)}"`);
          const { re, maxLen } = compileRegex(spec.pattern, RE2JS.CASE_INSENSITIVE, fail);
          for (const view of REGEX_VIEWS) this.detectors.push({ type: 'regex', rule, re, what: spec.what, accept: spec.accept, view });
          holdback = Math.max(holdback, maxLen + PERSONAL_DATA_LOOKAHEAD);
        }
      } else {
        fail(`unknown kind "${String(rule.kind)}"`);
      }
    }
    this.holdback = holdback;
  }

  /**
   * Every match in `w` that starts at `from` or later, sorted (start, longer first, block first, rule order). Regex
   * detector `d` starts its search at `resume[d]` (a code point of its view); `candidates[d]` are the candidates its
   * search went through. With `final` false the end of `w` is not the end of the text: `pending` is where the first
   * phrase that reaches it starts.
   */
  scanIndexed(w: Indexed, from: number, resume: readonly number[] | null, final: boolean): { hits: Hit[]; candidates: Candidate[][]; pending: number } {
    const hits: Hit[] = [];
    const candidates: Candidate[][] = this.detectors.map(() => []);
    let pending = Infinity;
    // One normalisation, and one skeleton of it, for all phrase rules.
    let text: { n: Normalized; words: boolean[] } | undefined;
    let folded: { n: Normalized; words: boolean[] } | undefined;
    const withWords = (n: Normalized) => ({ n, words: n.cps.map(isWord) });
    // A regex runs on each view it has. Without look-alikes both are one, and a search from where the other one's
    // started goes through the same candidates and finds the same matches: it is not run again.
    const searched = new Map<RE2JS, { view: View; start: number; candidates: Candidate[] }>();
    this.detectors.forEach((detector, d) => {
      if (detector.type === 'phrases') {
        const found = (start: number, end: number, phrase: string) => hits.push({ d, start, end, what: `the phrase "${phrase}"`, phrase });
        text ??= withWords(normalizeCps(w.cps));
        pending = Math.min(pending, findPhrases(detector.trie, text.n, text.words, from, final, found));
        if (w.lookAlikes) folded ??= withWords(skeletonCps(w.cps));
        else if (!detector.skeletonDiffers) return; // the skeleton trie would find what the trie found
        const on = folded ?? text;
        pending = Math.min(pending, findPhrases(detector.skeletonTrie, on.n, on.words, from, final, found));
        return;
      }
      const v = viewFor(detector, w);
      const start = Math.min(resume?.[d] ?? v.at[from]!, v.cps.length);
      const same = searched.get(detector.re);
      if (same?.view === v && same.start === start) {
        candidates[d] = same.candidates;
        return;
      }
      searched.set(detector.re, { view: v, start, candidates: candidates[d]! });
      // test() runs on RE2's DFA and costs a fraction of a search that reports positions; most texts hold no match.
      if (!detector.re.test(v.text)) return;
      const m = detector.re.matcher(v.text);
      if (!m.find(v.cpToU16[start])) return;
      do {
        const candidate: Span = [v.u16ToCp[m.start()]!, v.u16ToCp[m.end()]!];
        if (candidate[1] === candidate[0]) continue; // refused at compile time; never a zero-width redaction
        const span = detector.accept ? detector.accept(v.cps, ...candidate) : candidate;
        // In the original: from the start of the first segment to the end of the last (invisible ones between included).
        const start = span ? v.map[span[0]]! : -1;
        candidates[d]!.push([v.map[candidate[0]]!, start, ...candidate]);
        // A match before `from` was decided (released or dropped) when it was settled.
        if (span && start >= from) hits.push({ d, start, end: v.ends[span[1] - 1]!, what: detector.what });
      } while (m.find());
    });
    const order = (h: Hit) => (this.detectors[h.d]!.rule.action === 'block' ? 0 : 1);
    hits.sort((a, b) => a.start - b.start || b.end - a.end || order(a) - order(b) || a.d - b.d);
    return { hits, candidates, pending };
  }

  toMatch(hit: Hit, w: Indexed, offset: number): PolicyMatch {
    const { rule } = this.detectors[hit.d]!;
    const matchedText = w.cps.slice(hit.start, hit.end).join('');
    const match: PolicyMatch = { ruleId: rule.id, kind: rule.kind, action: rule.action, start: hit.start + offset, end: hit.end + offset, matchedText, what: hit.what };
    if (hit.phrase !== undefined) match.phrase = hit.phrase;
    return match;
  }

  firstBlock(hits: readonly Hit[]): Hit | undefined {
    return hits.find((h) => this.detectors[h.d]!.rule.action === 'block');
  }

  /** The code points of `w` in [from, to) with each of `kept` (all inside) replaced. */
  redact(w: Indexed, from: number, to: number, kept: readonly Hit[]): string {
    let out = '';
    let at = from;
    for (const hit of kept) {
      out += w.cps.slice(at, hit.start).join('') + (this.detectors[hit.d]!.rule.replacement ?? '[redacted]');
      at = hit.end;
    }
    return out + w.cps.slice(at, to).join('');
  }

  scan(text: string): PolicyMatch[] {
    const w = indexText(text);
    return dedupe(this.scanIndexed(w, 0, null, true).hits).map((hit) => this.toMatch(hit, w, 0));
  }

  apply(text: string): { text: string; blocked: PolicyMatch | null; redactions: PolicyMatch[] } {
    const w = indexText(text);
    const { hits } = this.scanIndexed(w, 0, null, true);
    const block = this.firstBlock(hits);
    if (block) return { text, blocked: this.toMatch(block, w, 0), redactions: [] };
    const kept = dedupe(hits);
    return { text: this.redact(w, 0, w.cps.length, kept), blocked: null, redactions: kept.map((hit) => this.toMatch(hit, w, 0)) };
  }
}

/**
 * At each normalised position at or after `from`, the longest phrase that starts there on word boundaries. Returns
 * the earliest start of a phrase that reaches the end of a text that is not final (Infinity if none).
 */
function findPhrases(trie: TrieNode, n: Normalized, words: boolean[], from: number, final: boolean, found: (start: number, end: number, phrase: string) => void): number {
  let pending = Infinity;
  const length = n.cps.length;
  for (let j = 0; j < length; j++) {
    let node = trie.next.get(n.cps[j]!);
    if (!node || n.map[j]! < from || (words[j] && j > 0 && words[j - 1])) continue;
    let best: { end: number; phrase: string } | undefined;
    for (let k = j + 1; ; k++) {
      if (node.phrase !== undefined) {
        if (!node.lastIsWord || (k < length ? !words[k] : final)) best = { end: k, phrase: node.phrase };
        else if (k === length) pending = Math.min(pending, n.map[j]!); // the next character decides
      }
      if (k === length) {
        if (!final && node.next.size > 0) pending = Math.min(pending, n.map[j]!); // a longer phrase may follow
        break;
      }
      const child = node.next.get(n.cps[k]!);
      if (!child) break;
      node = child;
    }
    if (best) found(n.map[j]!, n.ends[best.end - 1]!, best.phrase);
  }
  return pending;
}

function trimmed(cps: string[]): string[] {
  while (cps[0] === ' ') cps.shift();
  while (cps.at(-1) === ' ') cps.pop();
  return cps;
}

function insert(trie: TrieNode, cps: readonly string[], phrase: string): void {
  if (cps.length === 0) return;
  let node = trie;
  for (const ch of cps) node = node.next.get(ch) ?? node.next.set(ch, { next: new Map() }).get(ch)!;
  node.phrase ??= phrase;
  node.lastIsWord = isWord(cps.at(-1)!);
}

export function compilePolicy(rules: PolicyRule[]): Policy {
  return new CompiledPolicy(rules);
}

// ---------------------------------------------------------------------------------------------------------------
// Streaming

/**
 * Checks a stream of text deltas against a policy. `push` returns the text now safe to send (redacted). A block
 * returns no text and the blocking match, and the guard then refuses further text. Nothing of a blocking match is
 * ever released, and the releases put together are `policy.apply(whole text).text` (within the bounds in the header).
 */
export class StreamGuard {
  readonly #policy: CompiledPolicy;
  #context = ''; // the last released code points (at most CONTEXT)
  #contextLength = 0;
  #buffer = '';
  #released = 0; // code points released so far: the offset of the buffer in the whole text
  // Per regex detector, where its search resumes: a whole-text offset of the original, and how many code points of
  // the view into the segment there (a search may stop inside what one character expands to: `ﬁ`).
  readonly #resume: [at: number, into: number][];
  #blocked: PolicyMatch | null = null;
  #ended = false;

  constructor(policy: Policy) {
    if (!(policy instanceof CompiledPolicy)) throw new TypeError('StreamGuard needs a policy made by compilePolicy');
    this.#policy = policy;
    this.#resume = policy.detectors.map(() => [0, 0]);
  }

  push(delta: string): { release: string; blocked: PolicyMatch | null } {
    if (this.#ended) throw new Error('StreamGuard: push after end()');
    if (this.#blocked) return { release: '', blocked: this.#blocked };
    this.#buffer += delta;
    return this.#step(false);
  }

  end(): { release: string; blocked: PolicyMatch | null } {
    if (this.#blocked || this.#ended) return { release: '', blocked: this.#blocked };
    this.#ended = true;
    return this.#step(true);
  }

  #step(final: boolean): { release: string; blocked: PolicyMatch | null } {
    const policy = this.#policy;
    const w = indexText(this.#context + this.#buffer);
    const views = policy.detectors.map((detector) => viewFor(detector, w)); // each detector's
    const counted = new Set([viewOf(w), ...views]); // the views that the holdback and the context count on
    const from = this.#contextLength;
    const offset = this.#released - from; // window offset + offset = whole-text offset
    // A resume point before the window: no candidate starts between it and `from` (it would have been seen).
    const resume = this.#resume.map(([at, into], d) => (at < offset ? views[d]!.at[from]! : views[d]!.at[at - offset]! + into));
    const { hits, candidates, pending } = policy.scanIndexed(w, from, resume, final);
    let cut = w.cps.length;
    if (!final && policy.holdback > 0) {
      // The holdback counts code points of each view, up to the last segment (a combining mark may still join it).
      let last = w.cps.length - 1;
      while (last > 0 && joinsPrevious(w.cps[last]!)) last--;
      for (const v of counted) {
        const stable = v.at[Math.max(last, 0)]!;
        // A match that starts at view position p reads [p, p + holdback): settled if that is all stable. Text before
        // the first view code point from `from` on is invisible and goes out (nothing can start in it).
        const first = Math.max(stable - policy.holdback + 1, v.at[from]!);
        cut = Math.min(cut, first < stable ? v.map[first]! : Math.max(last, 0));
      }
      cut = Math.min(cut, pending);
    }
    if (!final && /[\uD800-\uDBFF]$/.test(w.text)) cut = Math.min(cut, w.cps.length - 1); // nor half a surrogate pair
    cut = Math.max(cut, from);
    // A match that starts before the cut is settled: everything that decides it has arrived.
    const settled = hits.filter((h) => h.start < cut);
    const block = policy.firstBlock(settled);
    if (block) return { release: '', blocked: (this.#blocked = policy.toMatch(block, w, offset)) };
    const kept = dedupe(settled);
    const crossing = kept.find((h) => h.end > cut);
    if (crossing) cut = crossing.start; // a match goes out whole (redacted) or not yet
    const release = policy.redact(w, from, cut, kept.filter((h) => h.end <= cut)); // prettier-ignore
    // Each search resumes after its candidates that start before the cut, but at the start of one whose match (a
    // phone number inside a longer candidate) starts after the cut: that match is not settled, so it is found again.
    const position = (v: View, n: number): [number, number] =>
      n < v.cps.length ? [v.map[n]! + offset, n - v.at[v.map[n]!]!] : [(v.cps.length ? v.ends[v.cps.length - 1]! : 0) + offset, 0];
    candidates.forEach((list, d) => {
      for (const [start, matchStart, viewStart, viewEnd] of list) {
        if (start >= cut) break;
        this.#resume[d] = position(views[d]!, matchStart >= cut ? viewStart : viewEnd);
        if (matchStart >= cut) break;
      }
    });
    this.#released += cut - from;
    // CONTEXT code points of the original and of each view, within MAX_CONTEXT.
    let contextStart = cut - CONTEXT;
    for (const v of counted) {
      const viewCut = v.at[cut]!;
      contextStart = Math.min(contextStart, viewCut >= CONTEXT ? v.map[viewCut - CONTEXT]! : 0);
    }
    contextStart = Math.max(0, cut - MAX_CONTEXT, contextStart);
    this.#contextLength = cut - contextStart;
    this.#context = w.cps.slice(contextStart, cut).join('');
    this.#buffer = w.cps.slice(cut).join('');
    return { release, blocked: null };
  }
}

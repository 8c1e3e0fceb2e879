// Detectors: the banned phrases' trie, the personal data types, and the RE2 regexes with their length bounds.
import { RE2JS } from 're2js';
import type { PersonalDataType, PolicyRule } from './types.ts';

export interface TrieNode {
  next: Map<string, TrieNode>;
  phrase?: string; // as configured, for messages
  lastIsWord?: boolean;
}

export type Span = [start: number, end: number];
/** A regex's candidate: its start and the start of the match found in it (-1: none) in the original, and its span on the view. */
export type Candidate = [start: number, matchStart: number, viewStart: number, viewEnd: number];
/** What of a regex's candidate (on the regex view) is a match (null: none). A refused candidate still moves the search on. */
type Accept = (cps: readonly string[], start: number, end: number) => Span | null;
export type Detector =
  /** `skeletonDiffers`: some phrase is not its own skeleton, so the skeleton trie may match ASCII text that the trie does not. */
  | { type: 'phrases'; rule: PolicyRule; trie: TrieNode; skeletonTrie: TrieNode; skeletonDiffers: boolean }
  | { type: 'regex'; rule: PolicyRule; re: RE2JS; what: string; accept?: Accept; view: 'text' | 'skeleton' };

/** Each regex runs on the regex view and on its skeleton. */
export const REGEX_VIEWS = ['text', 'skeleton'] as const;

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
  if (digits < 7 || digits > 15 || /[ .-]{2}/.test(t)) return false;
  // Not part of a word, a price, an amount or a longer number.
  if (/^[\p{L}\p{N}_\p{Sc}+\-.,/#@]$/u.test(cps[s - 1] ?? '')) return false;
  if (/^[\p{L}\p{N}_\p{Sc}%/]$/u.test(cps[e] ?? '') || (/^[.,-]$/.test(cps[e] ?? '') && isDigit(cps[e + 1])))
    return false;
  if (t.startsWith('+') || t.includes('(')) return true;
  // A national number: plain runs are order numbers and ids; two short groups are ranges ('2019-2026'); long groups
  // come last ('030 1234567'); one-digit groups are versions and ISBNs; then dates, IPv4 addresses and decimals.
  const groups = t.split(/[ .-]/);
  if (groups.length < 2 || (groups.length === 2 && digits < 9)) return false;
  if (groups.slice(0, -1).some((g) => g.length > 5) || groups.slice(1).some((g) => g.length < 2)) return false;
  return !/^(?:\d{4}([.-])\d\d\1\d\d|\d\d([.-])\d\d\2\d{4}|\d{1,3}(?:\.\d{1,3}){3}|\d+\.\d+)$/.test(t);
}

export const PERSONAL_DATA: Record<PersonalDataType, { pattern: string; what: string; accept: Accept }> = {
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
      for (const a of [s, ...spaces.map((i) => i + 1)])
        for (const b of [e, ...spaces.toReversed()]) if (b > a && isPhone(cps, a, b)) return [a, b];
      return null;
    },
  },
  payment_card: {
    pattern: '\\d(?:[ \\-]?\\d){12,18}',
    what: 'a payment card number',
    // The whole run of digits (single separators included) must be the number, not part of a longer one.
    accept: (cps, s, e) => {
      const joins = (a: string | undefined, b: string | undefined) =>
        isDigit(a) || (/^[ -]$/.test(a ?? '') && isDigit(b));
      return joins(cps[s - 1], cps[s - 2]) ||
        joins(cps[e], cps[e + 1]) ||
        !luhn(cps.slice(s, e).join('').replace(/\D/g, ''))
        ? null
        : [s, e];
    },
  },
};
/** Code points after a personal-data candidate that its check reads. */
export const PERSONAL_DATA_LOOKAHEAD = 2;

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
      case 1:
      case 2:
        return [
          [i.out, 0],
          [i.arg, 0],
        ]; // prettier-ignore
      case 3:
      case 4:
      case 7:
        return [[i.out, 0]]; // prettier-ignore
      case 5:
      case MATCH:
        return []; // prettier-ignore
      case 8:
      case 9:
      case 10:
      case 11:
        return [[i.out, 1]]; // prettier-ignore
      default:
        throw new Error(`unexpected instruction at ${pc}`);
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
    const emptyFrom = (pc: number): boolean =>
      !seen.has(pc) &&
      (seen.add(pc), inst[pc]!.op === MATCH || edges(pc).some(([w, consumes]) => !consumes && emptyFrom(w)));
    return { empty: emptyFrom(prog.start), maxLen: best[comp[prog.start]!]! };
  } catch {
    return null; // an unexpected program, or one too deep to walk
  }
}

export function compileRegex(
  pattern: string,
  flags: number,
  fail: (why: string) => never,
): { re: RE2JS; maxLen: number } {
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern, flags);
  } catch (error) {
    fail(`the pattern /${pattern}/ is not valid RE2 syntax: ${(error as Error).message}`);
  }
  // Without the program's shape: look for an empty match at the end of a few texts, where only an empty one fits.
  const facts = analyse(re) ?? {
    empty: ['', 'a', ' ', '\n', '0'].some((s) => re.matcher(s).find(s.length)),
    maxLen: Infinity,
  };
  if (facts.empty) fail(`the pattern /${pattern}/ can match the empty string`);
  return { re, maxLen: facts.maxLen };
}

// Scanning a whole text with a compiled policy.
import { RE2JS } from 're2js';
import {
  type Candidate,
  compileRegex,
  type Detector,
  PERSONAL_DATA,
  PERSONAL_DATA_LOOKAHEAD,
  REGEX_VIEWS,
  type Span,
  type TrieNode,
} from './detectors.ts';
import {
  ASCII_ONLY,
  hasLookAlikes,
  isWord,
  type Normalized,
  normalizeCps,
  regexConvert,
  regexSkeletonConvert,
  regexView,
  skeletonCps,
  type View,
} from './normalize.ts';
import { type Policy, type PolicyMatch, type PolicyRule, PolicyRuleError } from './types.ts';

/** The holdback for a regex whose matches have no length bound. */
const UNBOUNDED_REGEX_HOLDBACK = 256;

/** A text by code points, with its regex view and that view's skeleton (made when first needed). */
interface Indexed {
  text: string;
  cps: string[];
  /** Whether some character has a skeleton of its own (never in ASCII text): else each skeleton is its copy. */
  lookAlikes: boolean;
  view?: View;
  skeleton?: View;
}

export function indexText(text: string): Indexed {
  const cps = Array.from(text);
  return { text, cps, lookAlikes: !ASCII_ONLY.test(text) && hasLookAlikes(cps) };
}
export const viewOf = (w: Indexed): View => (w.view ??= regexView(w.cps, regexConvert));
const skeletonViewOf = (w: Indexed): View =>
  (w.skeleton ??= w.lookAlikes ? regexView(w.cps, regexSkeletonConvert) : viewOf(w));
export const viewFor = (detector: Detector, w: Indexed): View =>
  detector.type === 'regex' && detector.view === 'skeleton' ? skeletonViewOf(w) : viewOf(w);

/** A match in the coordinates of the scanned text, found by detector `d`. */
interface Hit {
  d: number;
  start: number;
  end: number;
  what: string;
  phrase?: string;
}

/** Overlapping matches removed from sorted ones: the earlier (then the longer) stays. */
export function dedupe(hits: readonly Hit[]): Hit[] {
  const kept: Hit[] = [];
  for (const hit of hits) if (hit.start >= (kept.at(-1)?.end ?? 0)) kept.push(hit);
  return kept;
}

export class CompiledPolicy implements Policy {
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
        for (const view of REGEX_VIEWS)
          this.detectors.push({ type: 'regex', rule, re, what: `a match of the regex /${rule.pattern}/`, view });
        // One more code point: an assertion at the end of a match (`\b`, `$`) reads the character after it.
        holdback = Math.max(holdback, Number.isFinite(maxLen) ? maxLen + 1 : UNBOUNDED_REGEX_HOLDBACK);
      } else if (rule.kind === 'personal_data') {
        if (!rule.types?.length) fail('a personal_data rule needs at least one type');
        for (const type of new Set(rule.types)) {
          const spec = Object.hasOwn(PERSONAL_DATA, type)
            ? PERSONAL_DATA[type]
            : fail(`unknown personal data type "${String(type)}"`);
          const { re, maxLen } = compileRegex(spec.pattern, RE2JS.CASE_INSENSITIVE, fail);
          for (const view of REGEX_VIEWS)
            this.detectors.push({ type: 'regex', rule, re, what: spec.what, accept: spec.accept, view });
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
  scanIndexed(
    w: Indexed,
    from: number,
    resume: readonly number[] | null,
    final: boolean,
  ): { hits: Hit[]; candidates: Candidate[][]; pending: number } {
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
        const found = (start: number, end: number, phrase: string) =>
          hits.push({ d, start, end, what: `the phrase "${phrase}"`, phrase });
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
    const match: PolicyMatch = {
      ruleId: rule.id,
      kind: rule.kind,
      action: rule.action,
      start: hit.start + offset,
      end: hit.end + offset,
      matchedText,
      what: hit.what,
    };
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
    return {
      text: this.redact(w, 0, w.cps.length, kept),
      blocked: null,
      redactions: kept.map((hit) => this.toMatch(hit, w, 0)),
    };
  }
}

/**
 * At each normalised position at or after `from`, the longest phrase that starts there on word boundaries. Returns
 * the earliest start of a phrase that reaches the end of a text that is not final (Infinity if none).
 */
function findPhrases(
  trie: TrieNode,
  n: Normalized,
  words: boolean[],
  from: number,
  final: boolean,
  found: (start: number, end: number, phrase: string) => void,
): number {
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

// Streaming: a guard that releases a stream's text only when no match can still start or grow in it.
import { CompiledPolicy, dedupe, indexText, viewFor, viewOf } from './compiled-policy.ts';
import { joinsPrevious, type View } from './normalize.ts';
import type { Policy, PolicyMatch } from './types.ts';

/**
 * How many released code points a stream keeps as left context: word boundaries and NFKC read what comes before,
 * and a phone candidate that straddles the release point is searched again from its start (see #step): that needs
 * the longest phone candidate (35) and the 2 characters its check reads before it. The context holds at least this
 * many code points of the regex view too (invisible characters in it do not count), but at most MAX_CONTEXT code
 * points of the original: a phone candidate with hundreds of invisible characters inside may be missed in a stream.
 */
const CONTEXT = 64;
const MAX_CONTEXT = 1024;

/**
 * Checks a stream of text deltas against a policy. `push` returns the text now safe to send (redacted). A block
 * returns no text and the blocking match, and the guard then refuses further text. Nothing of a blocking match is
 * ever released, and the releases put together are `policy.apply(whole text).text` (within the bounds in the header of match.ts).
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
    const resume = this.#resume.map(([at, into], d) =>
      at < offset ? views[d]!.at[from]! : views[d]!.at[at - offset]! + into,
    );
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
    const release = policy.redact(
      w,
      from,
      cut,
      kept.filter((h) => h.end <= cut),
    ); // prettier-ignore
    // Each search resumes after its candidates that start before the cut, but at the start of one whose match (a
    // phone number inside a longer candidate) starts after the cut: that match is not settled, so it is found again.
    const position = (v: View, n: number): [number, number] =>
      n < v.cps.length
        ? [v.map[n]! + offset, n - v.at[v.map[n]!]!]
        : [(v.cps.length ? v.ends[v.cps.length - 1]! : 0) + offset, 0];
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

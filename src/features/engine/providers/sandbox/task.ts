// The sandbox models' document tasks: what `sandbox-writer` writes when the call says what to write, in
// `providerOptions.sandbox.task` (a feature sets it beside its prompt; real providers ignore it). The rules are
// deterministic and work on the task's text only, never on the prompt; they are documented in sandbox.ts's header and
// in docs/engine.md ("Document tasks"), with an example each.
//
// The text is Markdown, read with markdown-it: headings, paragraphs and list items are its blocks (code, tables and
// HTML are not prose and are left out), their inline markup dropped. Sentences are cut by style.ts's rules.
// Sentences are ranked by TextRank (Mihalcea and Tarau, 2004) over the key words they share.

import type { JSONValue } from '@ai-sdk/provider';
import MarkdownIt, { type Token } from 'markdown-it';
import { clarify, measure, rewriteToward, type Sliders, sentenceSpans, slidersFrom } from '../../style/index.ts';
import { forms, keyTerms, keyWords, meets } from './words.ts';

export const TONES = [
  'neutral',
  'formal',
  'casual',
  'friendly',
  'confident',
  'persuasive',
  'empathetic',
  'playful',
] as const;
export type Tone = (typeof TONES)[number];

export interface CiteSource {
  n: number;
  title: string;
  excerpt: string;
}

/** What sandbox-writer writes, and from what. `text` is always the Markdown to work on. */
export type SandboxTask =
  | { kind: 'summarize'; text: string; length?: 'short' | 'medium' | 'long'; format?: 'paragraph' | 'bullets' }
  | { kind: 'outline'; text: string; depth?: number; title?: string; instruction?: string }
  | { kind: 'expand'; text: string; context?: string; words?: number }
  | { kind: 'rewrite'; text: string; tone?: Tone }
  | { kind: 'cite'; text: string; sources: CiteSource[] };

/**
 * The task as a provider option (`providerOptions.sandbox.task`): the same object, its unset fields left out. Copied
 * field by field, not through JSON: the document's text is then shared, not written out and read back (two copies of
 * a long document for each command).
 */
export function taskOption(task: SandboxTask): Record<string, JSONValue> {
  const { sources, ...fields } = task as SandboxTask & { sources?: CiteSource[] };
  const set: Record<string, JSONValue> = Object.fromEntries(
    Object.entries(fields).filter(([, value]) => value !== undefined),
  );
  if (sources) set.sources = sources.map((source) => ({ n: source.n, title: source.title, excerpt: source.excerpt }));
  return set;
}

const isString = (value: unknown): value is string => typeof value === 'string';
const oneOf = <T extends string>(value: unknown, allowed: readonly T[]): value is T | undefined =>
  value === undefined || allowed.includes(value as T);

/** The task of a call's sandbox options, or null when there is none or it is not one of the shapes above. */
export function taskOf(sandbox: Record<string, unknown> | undefined): SandboxTask | null {
  const task = sandbox?.task as Record<string, unknown> | undefined;
  if (typeof task !== 'object' || task === null || !isString(task.text)) return null;
  const number = (value: unknown) => value === undefined || (Number.isInteger(value) && (value as number) > 0);
  switch (task.kind) {
    case 'summarize':
      return oneOf(task.length, ['short', 'medium', 'long']) && oneOf(task.format, ['paragraph', 'bullets'])
        ? (task as SandboxTask)
        : null;
    case 'outline':
      return number(task.depth) &&
        (task.title === undefined || isString(task.title)) &&
        (task.instruction === undefined || isString(task.instruction))
        ? (task as SandboxTask)
        : null;
    case 'expand':
      return number(task.words) && (task.context === undefined || isString(task.context))
        ? (task as SandboxTask)
        : null;
    case 'rewrite':
      return oneOf(task.tone, TONES) ? (task as SandboxTask) : null;
    case 'cite': {
      const sources = task.sources;
      const valid =
        Array.isArray(sources) &&
        sources.every(
          (s) =>
            typeof s === 'object' && s !== null && Number.isInteger(s.n) && isString(s.title) && isString(s.excerpt),
        );
      return valid ? (task as SandboxTask) : null;
    }
    default:
      return null;
  }
}

/** What sandbox-writer answers to a task. `sliders`: the voice's (they change a rewrite only). */
export function taskText(task: SandboxTask, sliders: Sliders | null): string {
  switch (task.kind) {
    case 'summarize':
      return summarize(task.text, task.length ?? 'medium', task.format ?? 'paragraph');
    case 'outline':
      return outline(task.text, task.depth ?? 2, task.title ?? '', task.instruction ?? '');
    case 'expand':
      return expand(task.text, task.context ?? task.text, task.words);
    case 'rewrite':
      return rewrite(task.text, task.tone, sliders);
    case 'cite':
      return cite(task.text, task.sources);
  }
}

// ————— Reading the Markdown —————

const markdown = new MarkdownIt({ html: false });

interface Block {
  kind: 'heading' | 'paragraph' | 'item';
  /** A heading's level (1 for `#`). */
  level: number;
  /** The top-level block it belongs to: a whole list is one group. */
  group: number;
  text: string;
}

interface Sentence {
  text: string;
  /** Its position in the text, from 0. */
  position: number;
  block: number;
  /** Its distinct key words, as their forms. */
  words: Set<string>[];
}

/** Inline Markdown as written, its lines joined by a space. */
const inlineText = (inline: Token) => inline.content.replace(/(?<!\s)\s*\n\s*/g, ' ').trim();

/** The words of inline Markdown, without link destinations and URLs (their words are not the text's). */
const wordsOf = (text: string) =>
  distinctWords(withoutAutolinks(withoutLinkDestinations(text)).replace(/https?:\/\/\S+/g, ' '));

/**
 * What `text.replace(/\]\([^)]*\)/g, ']')` gives, in linear time (the pattern would search to the end of the text from
 * every `](` when no `)` follows): a `](` up to the next `)` becomes `]`; with no `)` after one, none after a later.
 */
export function withoutLinkDestinations(text: string): string {
  let out = '';
  let kept = 0;
  for (let at = text.indexOf(']('); at >= 0; at = text.indexOf('](', kept)) {
    const close = text.indexOf(')', at + 2);
    if (close < 0) break;
    out += `${text.slice(kept, at)}]`;
    kept = close + 1;
  }
  return out + text.slice(kept);
}

const AUTOLINK_SCHEME = /<[a-z][a-z0-9+.-]*:/iy;

/**
 * What `text.replace(/<[a-z][a-z0-9+.-]*:[^>\s]*>/gi, ' ')` gives, in linear time (the pattern would read to the same
 * space from every `<scheme:` before it): an autolink becomes a space. Every start before the character that stops
 * one's address stops there too, so the search goes on from that character.
 */
export function withoutAutolinks(text: string): string {
  let out = '';
  let kept = 0;
  for (let at = text.indexOf('<'); at >= 0; at = text.indexOf('<', at + 1)) {
    AUTOLINK_SCHEME.lastIndex = at;
    const scheme = AUTOLINK_SCHEME.exec(text);
    if (!scheme) continue;
    let end = at + scheme[0].length;
    while (end < text.length && text[end] !== '>' && !/\s/.test(text[end]!)) end++;
    if (text[end] === '>') {
      out += `${text.slice(kept, at)} `;
      kept = end + 1;
    }
    at = end - 1;
  }
  return out + text.slice(kept);
}

function blocksOf(text: string): Block[] {
  const tokens = markdown.parse(text, {});
  const blocks: Block[] = [];
  let group = -1;
  tokens.forEach((token, index) => {
    if (token.level === 0 && token.nesting === 1) group++;
    const inline = tokens[index + 1];
    if (inline?.type !== 'inline') return;
    if (token.type === 'heading_open')
      blocks.push({ kind: 'heading', level: Number(token.tag.slice(1)), group, text: inlineText(inline) });
    else if (token.type === 'paragraph_open')
      blocks.push({ kind: token.level === 0 ? 'paragraph' : 'item', level: 0, group, text: inlineText(inline) });
  });
  return blocks.filter((block) => block.text !== '');
}

/** The distinct key words of a text, a word and its plural (or -ed, -ing form) being one. */
function distinctWords(text: string): Set<string>[] {
  const out: Set<string>[] = [];
  for (const word of keyWords(text).map(forms)) if (!out.some((seen) => meets(seen, word))) out.push(word);
  return out;
}

const shared = (a: Set<string>[], b: Set<string>[]) => a.filter((word) => b.some((other) => meets(word, other))).length;

/** The sentences of the prose blocks (paragraphs and list items; headings are not sentences). */
function sentencesOf(blocks: Block[]): Sentence[] {
  const out: Sentence[] = [];
  blocks.forEach((block, index) => {
    if (block.kind === 'heading') return;
    for (const span of sentenceSpans(block.text))
      out.push({ text: span.text, position: out.length, block: index, words: wordsOf(span.text) });
  });
  return out;
}

const DAMPING = 0.85;
const MAX_ITERATIONS = 100;

/**
 * TextRank: sentences are the vertices of a graph whose edges weigh how many key words two sentences share, divided by
 * ln(1 + |words of one|) + ln(1 + |words of the other|); each sentence's score is 0.15 × its lead weight + 0.85 × the
 * sum of its neighbours' scores, each shared in proportion to the weight of its edges, iterated from 1 until no score
 * moves by more than 1e-9 (at most 100 rounds). The lead weight of the sentence at position i (from 0) is 1/√(1 + i),
 * scaled so that the weights average 1: the random jump of PageRank lands on early sentences more often (a biased
 * TextRank), because a text states its point early.
 */
export function textRank(sentences: { words: Set<string>[] }[]): number[] {
  const n = sentences.length;
  const weights = sentences.map((a, i) =>
    sentences.map((b, j) =>
      i === j || a.words.length === 0 || b.words.length === 0
        ? 0
        : shared(a.words, b.words) / (Math.log(1 + a.words.length) + Math.log(1 + b.words.length)),
    ),
  );
  const totals = weights.map((row) => row.reduce((sum, w) => sum + w, 0));
  // The jump weighs early sentences more (1/√(1 + position), scaled to average 1): a text states its point early.
  const lead = sentences.map((_, i) => 1 / (1 + i));
  const mean = lead.reduce((sum, w) => sum + w, 0) / Math.max(1, n);
  let scores = new Array<number>(n).fill(1);
  for (let round = 0; round < MAX_ITERATIONS; round++) {
    const next = scores.map(
      (_, i) =>
        (1 - DAMPING) * (lead[i]! / mean) +
        DAMPING * weights.reduce((sum, row, j) => sum + (totals[j]! > 0 ? (row[i]! / totals[j]!) * scores[j]! : 0), 0),
    );
    const moved = Math.max(0, ...next.map((score, i) => Math.abs(score - scores[i]!)));
    scores = next;
    if (moved < 1e-9) break;
  }
  return scores;
}

/** The TextRank score of each sentence (by position). The headings are vertices of the graph too, in their place, so
 *  that the sentences that share their words rank higher; a heading is never chosen. */
function scoresOf(blocks: Block[], sentences: Sentence[]): number[] {
  const nodes = blocks.flatMap((block, index) =>
    block.kind === 'heading'
      ? [{ words: wordsOf(block.text), sentence: -1 }]
      : sentences.filter((s) => s.block === index).map((s) => ({ words: s.words, sentence: s.position })),
  );
  const scores = textRank(nodes);
  const out = new Array<number>(sentences.length).fill(0);
  nodes.forEach((node, i) => {
    if (node.sentence >= 0) out[node.sentence] = scores[i]!;
  });
  return out;
}

/** Sentences best first: by TextRank score, then position. */
function ranked(blocks: Block[], sentences: Sentence[]): Sentence[] {
  const scores = scoresOf(blocks, sentences);
  return [...sentences].sort((a, b) => scores[b.position]! - scores[a.position]! || a.position - b.position);
}

const wordCount = (text: string) => text.split(/\s+/).filter(Boolean).length;
const withStop = (sentence: string) => (/[.!?…:]["'”’)\]]*$/.test(sentence) ? sentence : `${sentence}.`);
const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

// ————— summarize —————

/** The most sentences and words of a summary, by length. */
export const SUMMARY_BUDGETS = {
  short: { sentences: 2, words: 50, share: 0.25 },
  medium: { sentences: 5, words: 120, share: 0.5 },
  long: { sentences: 10, words: 250, share: 0.75 },
} as const;

/**
 * An extractive summary: the text's best-ranked sentences, taken in rank order while they fit the length's budget
 * (a sentence that would go over the words is skipped for the next one; and no more than a share of the text's
 * sentences, rounded up: a quarter, half or three quarters), then written in the text's order. When not even the best sentence fits, it is the summary alone.
 * `paragraph`: one paragraph (`long`: paragraphs of three sentences); `bullets`: one `- ` item per sentence.
 */
function summarize(text: string, length: keyof typeof SUMMARY_BUDGETS, format: 'paragraph' | 'bullets'): string {
  const blocks = blocksOf(text);
  const sentences = sentencesOf(blocks);
  if (sentences.length === 0) return text.trim();
  const budget = SUMMARY_BUDGETS[length];
  const most = Math.min(budget.sentences, Math.max(1, Math.ceil(sentences.length * budget.share)));
  const chosen: Sentence[] = [];
  let words = 0;
  const order = ranked(blocks, sentences);
  for (const sentence of order) {
    if (chosen.length >= most) break;
    const count = wordCount(sentence.text);
    if (words + count > budget.words) continue;
    chosen.push(sentence);
    words += count;
  }
  if (chosen.length === 0) chosen.push(order[0]!);
  const lines = chosen.sort((a, b) => a.position - b.position).map((sentence) => withStop(sentence.text));
  if (format === 'bullets') return lines.map((line) => `- ${line}`).join('\n');
  if (length !== 'long') return lines.join(' ');
  const paragraphs: string[] = [];
  for (let i = 0; i < lines.length; i += 3) paragraphs.push(lines.slice(i, i + 3).join(' '));
  return paragraphs.join('\n\n');
}

// ————— outline —————

/** At most this many sections when a text without headings is outlined by its paragraphs. */
const MAX_PARAGRAPH_SECTIONS = 8;

/** The key terms of a text as it writes them (their first occurrence's case), at most `count`. */
function termsAsWritten(text: string, count: number): string[] {
  return keyTerms(text)
    .slice(0, count)
    .map(
      (term) =>
        new RegExp(`(?<![\\p{L}\\p{N}])${term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\p{L}\\p{N}])`, 'iu').exec(
          text,
        )?.[0] ?? term,
    );
}

/** A section of the outline: its heading (null for the text before the first one), its level and its sentences. */
interface Section {
  heading: string | null;
  rank: number;
  sentences: Sentence[];
}

/**
 * The text's own headings, the shallowest level the outline's `##`, each deeper level one `#` more, down to `depth`
 * levels; under each, its key sentence (its best-ranked one, the text of deeper headings left out counting as its
 * own) as a `- ` item. Text before the first heading: its key sentence, first. A text without headings: a section per
 * top-level paragraph or list (consecutive ones grouped evenly when there are more than 8), titled by `sectionTitle`.
 * An empty text: a plan from the title and instruction.
 */
function outline(text: string, depth: number, title: string, instruction: string): string {
  const blocks = blocksOf(text);
  const sentences = sentencesOf(blocks);
  if (blocks.length === 0) return plan(title, instruction);
  const scores = scoresOf(blocks, sentences);
  const key = (section: Sentence[]) =>
    [...section].sort((a, b) => scores[b.position]! - scores[a.position]! || a.position - b.position)[0];
  const levels = [...new Set(blocks.filter((b) => b.kind === 'heading').map((b) => b.level))].sort((a, b) => a - b);
  const sections: Section[] = [];
  if (levels.length > 0) {
    let current: Section = { heading: null, rank: 0, sentences: [] };
    blocks.forEach((block, index) => {
      const rank = levels.indexOf(block.level) + 1;
      if (block.kind === 'heading' && rank <= depth) {
        sections.push(current);
        current = { heading: block.text, rank, sentences: [] };
      } else {
        current.sentences.push(...sentences.filter((s) => s.block === index));
      }
    });
    sections.push(current);
  } else {
    const groups = [...new Set(blocks.map((b) => b.group))];
    const count = Math.min(groups.length, MAX_PARAGRAPH_SECTIONS);
    const merged = Array.from({ length: count }, () => [] as Sentence[]);
    blocks.forEach((block, index) => {
      merged[Math.floor((groups.indexOf(block.group) * count) / groups.length)]!.push(
        ...sentences.filter((s) => s.block === index),
      );
    });
    for (const section of merged) sections.push({ heading: sectionTitle(section), rank: 1, sentences: section });
  }
  const parts: string[] = [];
  for (const section of sections) {
    if (section.heading !== null) parts.push(`${'#'.repeat(section.rank + 1)} ${section.heading}`);
    const best = key(section.sentences);
    if (best) parts.push(`- ${withStop(best.text)}`);
  }
  return parts.join('\n\n');
}

/** A section's title: its most frequent pair of key-term kind words side by side in a sentence ("free shipping"), as
 *  first written, the first among equals; else its first key term; else its first four words. Capitalised. */
function sectionTitle(section: Sentence[]): string {
  const pairs = new Map<string, { count: number; shown: string }>();
  for (const sentence of section) {
    const tokens = sentence.text.match(/\p{L}[\p{L}\p{N}'-]*|[^\s\p{L}]+/gu) ?? [];
    tokens.slice(1).forEach((token, i) => {
      const previous = tokens[i]!;
      if (
        keyWords(previous).length === 0 ||
        keyWords(token).length === 0 ||
        keyWords(`${previous} ${token}`).length < 2
      )
        return;
      const key = `${previous} ${token}`.toLowerCase();
      const seen = pairs.get(key);
      pairs.set(key, { count: (seen?.count ?? 0) + 1, shown: seen?.shown ?? `${previous} ${token}` });
    });
  }
  const best = [...pairs.values()].sort((a, b) => b.count - a.count)[0];
  const words = section.map((s) => s.text).join(' ');
  return capitalised(
    best?.shown ??
      termsAsWritten(words, 1)[0] ??
      words
        .split(/\s+/)
        .slice(0, 4)
        .join(' ')
        .replace(/(?<![.,;:!?])[.,;:!?]+$/, ''),
  );
}

/** Words that say what to write rather than what about; an empty document's plan leaves them out of its headings. */
const WRITING_WORDS = new Set(
  'plan plans write draft outline post posts article articles guide guides blog page pages document section sections words word paragraph paragraphs cover covers covering explain introduce announce describe focus create include'.split(
    ' ',
  ),
);

/** An empty document's plan: `## Introduction`, a `##` section per key-term kind word of the title, then of the
 *  instruction (as written, once each, at most five, leaving out words about writing such as "plan", "post" or
 *  "guide"), `## Conclusion`; with none, the title (else the instruction) is the one heading. */
function plan(title: string, instruction: string): string {
  const source = `${title}\n${instruction}`;
  const seen: Set<string>[] = [];
  const terms: string[] = [];
  for (const word of [...keyWords(title), ...keyWords(instruction)]) {
    const wordForms = forms(word);
    if (WRITING_WORDS.has(word) || seen.some((s) => meets(s, wordForms)) || terms.length === 5) continue;
    seen.push(wordForms);
    terms.push(new RegExp(`(?<![\\p{L}\\p{N}])${word}(?![\\p{L}\\p{N}])`, 'iu').exec(source)?.[0] ?? word);
  }
  if (terms.length === 0) return `## ${(title.trim() || instruction.trim()).replace(/\s+/g, ' ')}`;
  return ['## Introduction', ...terms.map((term) => `## ${capitalised(term)}`), '## Conclusion'].join('\n\n');
}

// ————— expand —————

/**
 * The selection, then sentences of the rest of the document (`context`, less the selection's own sentences): those
 * that share key words with the selection, most shared first (then position), else the document's best-ranked ones,
 * taken while the whole stays within `words` (default twice the selection's words, at least 50; at least one sentence
 * is added), each made plain by the rewrite's clarity rules, in the document's order. They continue the selection's
 * last paragraph (a space apart) when it ends in one, else they are a paragraph of their own.
 */
function expand(text: string, context: string, words: number | undefined): string {
  const selection = text.trim();
  const own = new Set(sentencesOf(blocksOf(selection)).map((s) => s.text));
  const contextBlocks = blocksOf(context);
  const all = sentencesOf(contextBlocks);
  const candidates = all.filter((s) => !own.has(s.text) && !selection.includes(s.text));
  if (candidates.length === 0) return selection;
  const selected = wordsOf(selection);
  const related = candidates.map((s) => ({ s, shared: shared(s.words, selected) })).filter((c) => c.shared > 0);
  const order =
    related.length > 0
      ? related.sort((a, b) => b.shared - a.shared || a.s.position - b.s.position).map((c) => c.s)
      : ranked(contextBlocks, all).filter((s) => candidates.includes(s));
  const budget = words ?? Math.max(50, 2 * wordCount(selection));
  let total = wordCount(selection);
  const added: Sentence[] = [];
  for (const sentence of order) {
    const count = wordCount(sentence.text);
    if (added.length > 0 && total + count > budget) continue;
    added.push(sentence);
    total += count;
  }
  const addition = added
    .sort((a, b) => a.position - b.position)
    .map((s) => clarify(withStop(s.text)))
    .join(' ');
  const blocks = blocksOf(selection);
  const endsInParagraph =
    blocks.at(-1)?.kind === 'paragraph' &&
    !text.slice(text.trimEnd().length).includes('\n') &&
    /[.!?]["'”’)\]]*$/.test(selection);
  return endsInParagraph ? `${selection} ${addition}` : `${selection}\n\n${addition}`;
}

// ————— rewrite —————

/** What each tone moves: the sliders it sets (style.ts's scale, 0 to 100) over the text's own or the voice's. */
const TONE_SLIDERS: Record<Tone, Partial<Sliders>> = {
  neutral: {},
  formal: { formality: 90, humor: 0, enthusiasm: 10 },
  casual: { formality: 10 },
  friendly: { formality: 25, enthusiasm: 40 },
  confident: { assertiveness: 95 },
  persuasive: { enthusiasm: 75, assertiveness: 85 },
  empathetic: { formality: 35, assertiveness: 45 },
  playful: { humor: 70, enthusiasm: 70, formality: 20 },
};

/** A line's Markdown prefix (indentation, `>`, a list marker) and its text. */
const LINE_PREFIX = /^([ \t]*(?:>[ \t]?)*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?)?)([\s\S]*)$/;

/** Applies `change` to the text of each prose line, keeping headings, code, tables, HTML and the Markdown prefixes. */
function eachProseLine(text: string, change: (line: string) => string): string {
  let fence: string | null = null;
  return text
    .split('\n')
    .map((line) => {
      const opening = /^[ \t]*(`{3,}|~{3,})/.exec(line)?.[1];
      if (fence !== null) {
        if (opening && opening[0] === fence[0] && opening.length >= fence.length) fence = null;
        return line;
      }
      if (opening) {
        fence = opening;
        return line;
      }
      if (
        /^[ \t]*(?:#{1,6}(?:[ \t]|$)|\||<|[-*_=][ \t]*[-*_=][ \t]*[-*_=])/.test(line) ||
        /^(?: {4}|\t)/.test(line) ||
        line.trim() === ''
      )
        return line;
      const [, prefix, body] = LINE_PREFIX.exec(line)!;
      return prefix! + change(body!);
    })
    .join('\n');
}

/** The first "<word> and <word>" of two words that are not common ones, in the other order ("new and existing" →
 *  "existing and new"), a capital first letter staying first. */
function swapPair(line: string): string {
  return line.replace(
    /(?<![\p{L}\p{N}'’-])(\p{L}{3,}) and (\p{L}{3,})(?![\p{L}\p{N}'’-])/u,
    (all, a: string, b: string) => {
      if (keyWords(a).length + keyWords(b).length === 0 && !/^\p{Lu}/u.test(a)) return all;
      const first = /^\p{Lu}\p{Ll}*$/u.test(a) && /^\p{Ll}+$/u.test(b) ? capitalised(b) : b;
      const second = first !== b ? a.toLowerCase() : a;
      return `${first} and ${second}`;
    },
  );
}

/**
 * Each prose line rewritten: toward the tone's sliders (and the voice's, when the call has them) by style.ts's
 * `rewriteToward`, then by the clarity rules of `clarify` (written out, with no plain-word swaps, when the target is
 * formal: formality 70 or more). A text the rules leave as it was gets the first two words joined by "and" swapped.
 */
function rewrite(text: string, tone: Tone | undefined, sliders: Sliders | null): string {
  const toned = tone ? TONE_SLIDERS[tone] : {};
  const styled = sliders !== null || Object.keys(toned).length > 0;
  const change = (line: string) => {
    const target = { ...(sliders ?? slidersFrom(measure(line))), ...toned } as Sliders;
    const moved = styled ? rewriteToward(line, target) : line;
    return clarify(moved, target.formality >= 70);
  };
  const out = eachProseLine(text.trim(), change);
  if (out !== text.trim()) return out;
  let swapped = false;
  return eachProseLine(out, (line) => {
    if (swapped) return line;
    const next = swapPair(line);
    swapped = next !== line;
    return next;
  });
}

// ————— cite —————

const SENTENCE_STOP = new Set(['.', '!', '?', '…']);
const CLOSING_MARK = new Set(['"', "'", '”', '’', ')', ']']);

/**
 * Where a sentence's closing punctuation starts (its stops, then its closing quotes and brackets), where a citation
 * marker goes: what `/^(.*?)([.!?…]*["'”’)\]]*)$/su` splits at, found from the end in linear time (the pattern
 * would try every split from the start, quadratic in a sentence of stops followed by anything else).
 */
export function closingStart(sentence: string): number {
  let at = sentence.length;
  while (at > 0 && CLOSING_MARK.has(sentence[at - 1]!)) at--;
  while (at > 0 && SENTENCE_STOP.has(sentence[at - 1]!)) at--;
  return at;
}
/**
 * The text with a marker ` [n]` before the final punctuation of each prose sentence that shares at least two key words
 * with a source's title and excerpt (all of them when it has fewer; never none): the source sharing the most, the
 * lowest number among equals. Other sentences, and everything else, stay as they are.
 */
function cite(text: string, sources: CiteSource[]): string {
  const known = sources.map((source) => ({ n: source.n, words: distinctWords(`${source.title} ${source.excerpt}`) }));
  return eachProseLine(text.trim(), (line) => {
    let out = '';
    let at = 0;
    for (const span of sentenceSpans(line)) {
      const words = distinctWords(span.text);
      const best = known
        .map((source) => ({ n: source.n, size: source.words.length, score: shared(words, source.words) }))
        .filter((c) => c.score > 0 && c.score >= Math.min(2, c.size))
        .sort((a, b) => b.score - a.score || a.n - b.n)[0];
      const stop = closingStart(span.text);
      const marked =
        best && !span.text.includes(`[${best.n}]`)
          ? `${span.text.slice(0, stop)} [${best.n}]${span.text.slice(stop)}`
          : span.text;
      out += line.slice(at, span.start) + marked;
      at = span.end;
    }
    return out + line.slice(at);
  });
}

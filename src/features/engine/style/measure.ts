// What a text measures: sentence lengths, reading grade, pronouns, contractions, hedges, humour, vocabulary, habits.
import { BULLET_LINE, countWords, EMOJI, NOT_EMOJI, type Span, sentenceSpans, TOKEN, tokensOf } from './sentences.ts';
import {
  CONFIDENT,
  EXCITEMENT_WORDS,
  FIRST_PLURAL,
  FIRST_SINGULAR,
  FORMAL_MARKERS,
  HEDGE_PHRASES,
  HEDGE_WORDS,
  HUMOR_EMOJI,
  HUMOR_PHRASES,
  HUMOR_WORDS,
  IMPERATIVE_VERBS,
  LANGUAGE_STOPWORDS,
  S_CONTRACTIBLE,
  SECOND_PERSON,
  SLANG,
  STOPWORDS,
  TECHNICAL,
  WARM_WORDS,
} from './words.ts';

/** Everything measured in a text. Rates are per 100 lexical words (letter/digit runs) or per sentence. */
export interface Measurements {
  /** Runs of non-whitespace, as counted for the 200..600-word sample bounds. */
  word_count: number;
  sentence_count: number;
  mean_sentence_words: number;
  /** Population standard deviation of the sentence lengths: sentence variety. */
  sentence_words_stdev: number;
  /** Flesch–Kincaid grade level, with a vowel-group syllable heuristic; 0 at least. */
  reading_grade: number;
  /** Share of words of 3 syllables or more. */
  long_word_ratio: number;
  /** Distinct words / words (lower-cased). Length-sensitive, fine within the 200..600-word sample bounds. */
  type_token_ratio: number;
  contractions_per_100_words: number;
  first_person_singular_per_100: number;
  first_person_plural_per_100: number;
  second_person_per_100: number;
  /** Share of sentences ending in "!" (and "?" below). */
  exclamations_per_sentence: number;
  questions_per_sentence: number;
  emoji_per_100_words: number;
  semicolons_and_dashes_per_sentence: number;
  /** Parenthesised asides per sentence. */
  parentheticals_per_sentence: number;
  hedges_per_100_words: number;
  /** Share of sentences starting with a base verb (or "Please"/"Don't" + verb). */
  imperatives_ratio: number;
  /** See HUMOR_* in words.ts: laughter words, joke/pun words, playful interjections, laughing emoji, whole-sentence asides. */
  humor_markers_per_100: number;
  /** Warm, personal words (thank, grateful, love, welcome, together…). */
  warm_words_per_100: number;
  /** Excited words (amazing, love, wow, can't wait…). */
  excitement_words_per_100: number;
  /** Ceremonious connectives and vocabulary (therefore, accordingly, herein, shall…). */
  formal_markers_per_100: number;
  /** Slang and chatty words (hey, yep, gonna, stuff…). */
  slang_per_100: number;
  /** Technical terms and code-like tokens (snake_case, camelCase, file.ext, backticked code). */
  technical_terms_per_100: number;
  /** Words of certainty (will, must, always, never, guarantee…). */
  confident_markers_per_100: number;
  /** Share of non-empty lines that are bullet or numbered list items. */
  list_item_ratio: number;
  /** Share of sentences that repeat an earlier sentence exactly. */
  repeated_sentence_ratio: number;
  /** Recurring 2–3-word phrases without stopwords, seen at least twice, most frequent first, up to 5. */
  signature_phrases: string[];
  /** Two-letter language detected by stopword frequency (en, de, fr, es, it, nl, pt), or null when unsure. */
  language: string | null;
}

/** Vowel groups, minus a silent final e; at least one. Good enough for Flesch–Kincaid on everyday English. */
function syllables(word: string): number {
  const w = word.toLowerCase().replace(/[^a-z]/g, '');
  if (w.length <= 3) return 1;
  const trimmed = w.replace(/(?:[^laeiouy]es|[^laeiouy]ed|[^laeiouy]e)$/, (s) => s[0]!).replace(/^y/, '');
  return Math.max(1, (trimmed.match(/[aeiouy]+/g) ?? []).length);
}

const round = (value: number, digits = 3) => Number(value.toFixed(digits));

function isContraction(token: string): boolean {
  if (/n't$/.test(token) || /'(?:re|ve|ll|d|m)$/.test(token)) return true;
  const s = /^(\p{L}+)'s$/u.exec(token);
  return s !== null && S_CONTRACTIBLE.has(s[1]!);
}

export function isImperative(sentence: string): boolean {
  if (/\?\s*$/.test(sentence)) return false;
  const [first = '', second = ''] = tokensOf(sentence.replace(BULLET_LINE, '').replace(/^["'“‘(]+/, '')).slice(0, 2);
  if (first === 'please' || (first === 'do' && second === 'not')) return true;
  return IMPERATIVE_VERBS.has(first);
}

function detectLanguage(tokens: string[]): string | null {
  if (tokens.length < 20) return null;
  const scores = Object.entries(LANGUAGE_STOPWORDS)
    .map(([lang, list]) => [lang, tokens.filter((t) => list.has(t)).length / tokens.length] as const)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const [best, second] = [scores[0]!, scores[1]!];
  // Sure only when stopwords are common (prose, not a keyword list) and one language clearly leads.
  return best[1] >= 0.15 && best[1] >= second[1] * 1.25 ? best[0] : null;
}

function signaturePhrases(sentences: Span[]): string[] {
  // Counted in lower case, shown as written inside a sentence ("Harbour Lights"), where a capital is not just the sentence's.
  const counts = new Map<string, { count: number; first: number; n: number; shown: string }>();
  let position = 0;
  for (const sentence of sentences) {
    const raw = (sentence.text.match(TOKEN) ?? []).map((t) => t.replace(/’/g, "'"));
    const tokens = raw.map((t) => t.toLowerCase());
    for (let i = 0; i < tokens.length; i++, position++) {
      for (const n of [2, 3]) {
        const gram = tokens.slice(i, i + n);
        if (gram.length < n || gram.some((t) => STOPWORDS.has(t) || t.length < 2 || /['\d]/.test(t))) continue;
        const key = gram.join(' ');
        const seen = counts.get(key) ?? { count: 0, first: position, n, shown: key };
        counts.set(key, {
          ...seen,
          count: seen.count + 1,
          shown: i > 0 && seen.shown === key ? raw.slice(i, i + n).join(' ') : seen.shown,
        });
      }
    }
  }
  const ranked = [...counts.values()]
    .filter((v) => v.count >= 2)
    .sort((a, b) => b.count - a.count || b.n - a.n || a.first - b.first);
  const chosen: string[] = [];
  for (const { shown } of ranked) {
    // "small batches" and "roast small batches" (or "fresh coffee beans" and "coffee beans roasted") are one signature.
    const parts = shown.toLowerCase().split(' ');
    const pairs = parts.slice(1).map((word, i) => ` ${parts[i]} ${word} `);
    if (chosen.some((c) => pairs.some((pair) => ` ${c.toLowerCase()} `.includes(pair)))) continue;
    if (chosen.push(shown) === 5) break;
  }
  return chosen;
}

export function measure(text: string): Measurements {
  const sentences = sentenceSpans(text);
  const tokens = tokensOf(text);
  const n = tokens.length;
  const s = sentences.length;
  const per100 = (count: number) => (n ? round((count * 100) / n) : 0);
  const perSentence = (count: number) => (s ? round(count / s) : 0);
  const countIn = (set: Set<string>) => tokens.filter((t) => set.has(t)).length;
  const lengths = sentences.map((sentence) => tokensOf(sentence.text).length);
  const mean = s ? lengths.reduce((a, b) => a + b, 0) / s : 0;
  const variance = s ? lengths.reduce((a, b) => a + (b - mean) ** 2, 0) / s : 0;
  const syllableCounts = tokens.map(syllables);
  const totalSyllables = syllableCounts.reduce((a, b) => a + b, 0);
  const grade = n ? 0.39 * (n / Math.max(1, s)) + 11.8 * (totalSyllables / n) - 15.59 : 0;
  const ends = sentences.map((sentence) =>
    sentence.text.replace(
      // biome-ignore lint/suspicious/noMisleadingCharacterClass: U+FE0F and U+200D are listed on their own and the class repeats, so a whole emoji sequence is consumed in order (the u flag is set).
      /(?<![\s\p{Extended_Pictographic}\u{FE0F}\u{200D}\p{Emoji_Modifier}"'”’)\]])[\s\p{Extended_Pictographic}\u{FE0F}\u{200D}\p{Emoji_Modifier}"'”’)\]]+$/u,
      '',
    ),
  );
  const emoji = (text.match(EMOJI) ?? []).filter((e) => !NOT_EMOJI.has(e)).length;
  const codeLike = text
    .split(/\s+/)
    .filter((w) => /`[^`]+`|_\w|[a-z][A-Z]|(?<![a-z])[a-z]{2,}\.[a-z]{2,}|\w\/\w/.test(w)).length;
  const humor =
    tokens.filter((t) => HUMOR_WORDS.has(t) || /^(?:ha){2,}h?$|^(?:he){2,}$/.test(t)).length +
    (text.match(HUMOR_PHRASES) ?? []).length +
    (text.match(HUMOR_EMOJI) ?? []).length;
  const lines = text.split('\n').filter((line) => line.trim());
  const normalised = sentences.map((sentence) => tokensOf(sentence.text).join(' '));
  return {
    word_count: countWords(text),
    sentence_count: s,
    mean_sentence_words: round(mean, 2),
    sentence_words_stdev: round(Math.sqrt(variance), 2),
    reading_grade: round(Math.max(0, grade), 2),
    long_word_ratio: n ? round(syllableCounts.filter((c) => c >= 3).length / n) : 0,
    type_token_ratio: n ? round(new Set(tokens).size / n) : 0,
    contractions_per_100_words: per100(tokens.filter(isContraction).length),
    first_person_singular_per_100: per100(countIn(FIRST_SINGULAR)),
    first_person_plural_per_100: per100(countIn(FIRST_PLURAL)),
    second_person_per_100: per100(countIn(SECOND_PERSON)),
    exclamations_per_sentence: perSentence(ends.filter((e) => e.endsWith('!')).length),
    questions_per_sentence: perSentence(ends.filter((e) => /\?!?$/.test(e)).length),
    emoji_per_100_words: per100(emoji),
    semicolons_and_dashes_per_sentence: perSentence(
      (text.match(/;|—|–|(?<=\S)[ \t]+-{1,2}[ \t]+(?=\S)/g) ?? []).length,
    ),
    parentheticals_per_sentence: perSentence((text.match(/\([^()]*\)/g) ?? []).length),
    hedges_per_100_words: per100(countIn(HEDGE_WORDS) + (text.match(HEDGE_PHRASES) ?? []).length),
    imperatives_ratio: perSentence(sentences.filter((sentence) => isImperative(sentence.text)).length),
    humor_markers_per_100: per100(humor),
    warm_words_per_100: per100(countIn(WARM_WORDS)),
    excitement_words_per_100: per100(countIn(EXCITEMENT_WORDS) + (text.match(/\bcan['’]t wait\b/gi) ?? []).length),
    formal_markers_per_100: per100(countIn(FORMAL_MARKERS)),
    slang_per_100: per100(countIn(SLANG)),
    technical_terms_per_100: per100(countIn(TECHNICAL) + codeLike),
    confident_markers_per_100: per100(countIn(CONFIDENT)),
    list_item_ratio: lines.length ? round(lines.filter((line) => BULLET_LINE.test(line)).length / lines.length) : 0,
    repeated_sentence_ratio: perSentence(normalised.filter((t, i) => t && normalised.indexOf(t) < i).length),
    signature_phrases: signaturePhrases(sentences),
    language: detectLanguage(tokens),
  };
}

// Tokens and sentences, as every measurement, rewrite and check cuts a text.

export const TOKEN = /[\p{L}\p{N}]+(?:['’][\p{L}\p{N}]+)*/gu;
export const EMOJI = /\p{Extended_Pictographic}/gu;
export const NOT_EMOJI = new Set(['©', '®', '™']);
export const BULLET_LINE = /^[ \t]*(?:[-*•▪‣◦]|\d{1,3}[.)])[ \t]+/;
/** A sentence ends at . ! ? … (plus closing quotes and trailing emoji) before whitespace, at a blank line, or before a list item. */
const BOUNDARY =
  // biome-ignore lint/suspicious/noMisleadingCharacterClass: U+FE0F and U+200D are listed on their own and the class repeats, so a whole emoji sequence is consumed in order (the u flag is set).
  /(?<![.!?…])[.!?…]+["'”’)\]]*(?:[ \t]*[\p{Extended_Pictographic}\u{FE0F}\u{200D}\p{Emoji_Modifier}])*(?=\s|$)|\n[ \t]*\n\s*|\n(?=[ \t]*(?:[-*•▪‣◦]|\d{1,3}[.)])[ \t])/gu;
const ABBREVIATION = /(?:^|[\s(])(?:e\.g|i\.e|etc|vs|mr|mrs|ms|dr|prof|st|approx|cf|inc|ltd)$/i;

/** A sentence with UTF-16 offsets into its text. */
export interface Span {
  start: number;
  end: number;
  text: string;
}

export function tokensOf(text: string): string[] {
  return (text.match(TOKEN) ?? []).map((t) => t.toLowerCase().replace(/’/g, "'"));
}

/** The sentences of a text, with their offsets (abbreviations such as "e.g." and "Dr." do not end one). */
export function sentenceSpans(text: string): Span[] {
  const spans: Span[] = [];
  const push = (from: number, to: number) => {
    while (from < to && /\s/.test(text[from]!)) from++;
    while (to > from && /\s/.test(text[to - 1]!)) to--;
    if (to > from) spans.push({ start: from, end: to, text: text.slice(from, to) });
  };
  let from = 0;
  for (const m of text.matchAll(BOUNDARY)) {
    const punctuation = !m[0].startsWith('\n');
    // "e.g. this" and "Dr. Smith" do not end a sentence.
    if (m[0] === '.' && ABBREVIATION.test(text.slice(from, m.index))) continue;
    push(from, punctuation ? m.index + m[0].length : m.index);
    from = m.index + m[0].length;
  }
  push(from, text.length);
  return spans;
}

export function countWords(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

export const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

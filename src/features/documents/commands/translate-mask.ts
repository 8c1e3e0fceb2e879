// Masking for translation. What the model must not change inside a segment, replaced by placeholders ⟨1⟩, ⟨2⟩…: code spans, link
// destinations and reference labels, HTML tags and autolinks, bare URLs, a task box, and marker-like text.
const PROTECTED = new RegExp(
  [
    '(`+)(?!`)[\\s\\S]*?(?<!`)\\1(?!`)',
    '(?<=\\])\\((?:[^()\\s]|\\([^()\\s]*\\))*(?:\\s+(?:"[^"]*"|\'[^\']*\'))?\\s*\\)',
    '(?<=\\])\\[[^\\]\\n]*\\]',
    '<[A-Za-z/!?][^<>\\n]*>',
    'https?://[^\\s<>()\\[\\]]+',
    '^\\[[ xX]\\](?=\\s)',
    '⟨\\d+⟩|⟦\\d+⟧',
  ].join('|'),
  'g',
);

export interface Masked {
  text: string;
  kept: string[];
}

export function mask(text: string): Masked {
  const kept: string[] = [];
  return { text: text.replace(PROTECTED, (match) => `⟨${kept.push(match)}⟩`), kept };
}

/** The translation with its placeholders restored, or null when it lost, repeated or invented one (or is empty). */
export function unmask(translation: string, masked: Masked): string | null {
  const found = [...translation.matchAll(/⟨(\d+)⟩/g)].map((m) => Number(m[1])).sort((a, b) => a - b);
  if (found.length !== masked.kept.length || found.some((n, i) => n !== i + 1)) return null;
  const text = translation.replace(/⟨(\d+)⟩/g, (_, n: string) => masked.kept[Number(n) - 1]!);
  return text.trim() === '' ? null : text;
}

// A document's word and character counts, read character by character: the same numbers as splitting the text into
// its words and its characters, which the counts are checked against here.
import { describe, expect, test } from 'vitest';
import { countWords } from '../../src/features/documents/markdown.ts';
import { characterCount } from '../../src/platform/characters.ts';

const splitWords = (text: string) => text.split(/\s+/).filter((token) => /[\p{L}\p{N}]/u.test(token)).length;
const spreadCharacters = (text: string) => [...text].length;

const SAMPLES = [
  '',
  ' ',
  'word',
  '  two  words  ',
  '# Heading\n\n- item one\n- item two\n\n| a | b |\n|---|---|\n| 1 | 2 |',
  '## - | --- **',
  'tab\tseparated\vvertical\fform\rreturn\nline',
  'no\u00a0break\u2003em\u3000ideographic\u2028line\ufeffbom',
  '漢字とかな 交じり文',
  'Ünïcödé café naïve',
  'emoji 😀 alone, 😀word, digits ٣٤٥ and ⅷ',
  'surrogates \ud83d\ude00 lone high \ud83d end, lone low \ude00 end, at the end \ud83d',
  '\ud83d',
  'x\u0301 combining, a\u200bzero-width',
  '...---!!! ??? 123 a1 1a',
];

/** Text of random characters from a mix of ASCII, Latin-1, CJK, astral, lone surrogates and every kind of space. */
function randomText(seed: number, length: number): string {
  const alphabet = [
    ...'aZ09 \t\n-#|*.,',
    '\u00a0',
    'é',
    '漢',
    '😀',
    '\ud83d',
    '\ude00',
    '\u2003',
    '\u3000',
    '٣',
    '\u0301',
    '\ufeff',
  ];
  let state = seed;
  let text = '';
  for (let i = 0; i < length; i++) {
    state = (state * 1103515245 + 12345) % 2147483648;
    text += alphabet[state % alphabet.length];
  }
  return text;
}

describe("a document's counts", () => {
  test.each(SAMPLES.map((text) => [JSON.stringify(text), text]))('%s: as many words and characters', (_, text) => {
    expect(countWords(text)).toBe(splitWords(text));
    expect(characterCount(text)).toBe(spreadCharacters(text));
  });

  test('random texts of every kind of character: as many words and characters', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const text = randomText(seed, seed % 50 === 0 ? 5000 : 1 + (seed % 97));
      expect([countWords(text), characterCount(text)], text).toEqual([splitWords(text), spreadCharacters(text)]);
    }
  });
});

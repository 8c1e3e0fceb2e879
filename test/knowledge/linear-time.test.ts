// Knowledge sources are read in time linear in them: each case feeds what made a pattern of the extraction, the
// chunking or the upload check backtrack super-linearly, at the size a source may have (a file's base64 of 6,990,508
// characters; its text, up to 5,000,000), and checks the result. A super-linear pattern takes minutes or hours on such
// an input, so a case that hangs is one come back. `npm run lint:redos` finds the patterns (scripts/lint-redos.ts).
import { describe, expect, test } from 'vitest';
import { chunkText } from '../../src/features/knowledge/chunk.ts';
import { atxHeading, normaliseText } from '../../src/features/knowledge/extract.ts';
import { isBase64Of } from '../../src/features/knowledge/knowledge-bases.ts';

const TEXT = 5_000_000;
const BASE64 = 6_990_508;

describe('knowledge sources at their largest', () => {
  test('normalising: white space before a line break, and a run of it in the middle', () => {
    const text = `a${' \t'.repeat(TEXT / 4)}b \n${'\t'.repeat(TEXT / 2)}c`;
    expect(normaliseText(text)).toBe(`a${' \t'.repeat(TEXT / 4)}b\n${'\t'.repeat(TEXT / 2)}c`);
    expect(normaliseText(`\n\na${' '.repeat(TEXT)}b  `)).toBe(`a${' '.repeat(TEXT)}b`);
  });

  test("a Markdown file's title: a heading line of spaces, with and without a text", () => {
    expect(atxHeading(`#\r${' '.repeat(TEXT / 2)}\u0000${' '.repeat(TEXT / 2)}\r\u0000`)).toBeUndefined();
    expect(atxHeading(`# a${' '.repeat(TEXT)}x\r`)).toBe(`a${' '.repeat(TEXT)}x`);
    expect(atxHeading(`# Title${' '.repeat(TEXT)}##${' '.repeat(TEXT)}`)).toBe('Title');
  });

  test('chunking at sentence ends: a run of closing quotes', async () => {
    // A super-linear pattern costs the square of the run's length, minutes for a run of 1,000,000; the whole
    // 5,000,000 of a file is the same linear work five times over.
    const chunks = await chunkText(`Intro. ${'"'.repeat(1_000_000)} end`, { maxChunkTokens: 400, overlapTokens: 0 });
    expect(
      chunks
        .map((chunk) => chunk.text)
        .join('')
        .replace(/\s/g, ''),
    ).toBe(`Intro.${'"'.repeat(1_000_000)}end`);
  });

  test("an uploaded file's base64: padding all through it", () => {
    const content = `${'='.repeat(BASE64 - 1)}A`;
    expect(isBase64Of(content, Buffer.from(content, 'base64'))).toBe(false);
    const padded = `${Buffer.from('a'.repeat((BASE64 / 4) * 3 - 2)).toString('base64')}`;
    expect(padded.length).toBe(BASE64);
    expect(isBase64Of(padded, Buffer.from(padded, 'base64'))).toBe(true);
  });
});

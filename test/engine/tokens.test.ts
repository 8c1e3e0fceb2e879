// Token counting costs a bounded amount of work per character: the encoder is handed slices of at most
// MAX_SLICE_CHARS characters (byte-pair encoding costs the square of a piece's length), text of words counts exactly
// as the encoding does, and a check against a limit stops at the limit.
import fc from 'fast-check';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, test } from 'vitest';
import { sandboxEmbedding } from '../../src/features/engine/providers/sandbox/embedding.ts';
import { sandboxEmbeddingModel } from '../../src/features/engine/providers/sandbox/embedding-model.ts';
import { countTokensEach, OFF_LOOP_CHARS } from '../../src/features/engine/text-pool.ts';
import { countTokens, MAX_SLICE_CHARS, tokenSlices, truncateTokens } from '../../src/features/engine/tokens.ts';

const exact = (text: string) => encode(text, { disallowedSpecial: new Set() }).length;

describe('token slices', () => {
  test.each([
    ['one long CJK word', '漢'.repeat(25_000)],
    ['one long Latin word', 'a'.repeat(40_000)],
    ['a long run of spaces', ' '.repeat(10_000)],
    ['emoji (surrogate pairs) with no space', '😀'.repeat(5_000)],
    ['words', 'the quick brown fox '.repeat(2_000)],
  ])('%s: no slice is longer than the bound, none splits a surrogate pair, and they join to the text', (_, text) => {
    const slices = [...tokenSlices(text)];
    expect(slices.join('')).toBe(text);
    for (const slice of slices) {
      expect(slice.length).toBeGreaterThan(0);
      expect(slice.length).toBeLessThanOrEqual(MAX_SLICE_CHARS);
      expect(slice.isWellFormed()).toBe(true);
    }
  });

  test('text of words counts exactly as the encoding does', () => {
    const word = fc.stringMatching(/^[a-zA-Z0-9漢字.,!?'-]{1,40}$/);
    const separator = fc.constantFrom(' ', '  ', '\n', '\n\n', ' \n ', '\t');
    fc.assert(
      fc.property(fc.array(fc.tuple(word, separator), { maxLength: 200 }), (parts) => {
        const text = parts.map(([w, s]) => w + s).join('');
        expect(countTokens(text)).toBe(exact(text));
      }),
      { numRuns: 100 },
    );
  });

  test('a word over the bound counts as its slices do, close to the exact count', () => {
    const word = '漢'.repeat(25_000);
    const sliced = MAX_SLICE_CHARS * Math.floor(25_000 / MAX_SLICE_CHARS);
    expect(countTokens(word)).toBe(
      exact('漢'.repeat(MAX_SLICE_CHARS)) * (sliced / MAX_SLICE_CHARS) + exact('漢'.repeat(25_000 - sliced)),
    );
    expect(countTokens('a'.repeat(40_000))).toBe(5_000);
    expect(Math.abs(countTokens('a'.repeat(3_000)) - exact('a'.repeat(3_000)))).toBeLessThanOrEqual(
      3_000 / MAX_SLICE_CHARS + 1,
    );
  });

  test('with a limit, counting stops past it: a huge text costs the limit, not its length', () => {
    const huge = 'word '.repeat(1_000_000);
    const counted = countTokens(huge, 1_000);
    expect(counted).toBeGreaterThan(1_000);
    // One slice's tokens at most past the limit: the rest of the text was not encoded.
    expect(counted).toBeLessThanOrEqual(1_000 + MAX_SLICE_CHARS);
    expect(countTokens('hello world', 1_000)).toBe(exact('hello world'));
  });

  test('truncation keeps the first tokens of any text, across slices', () => {
    const text = 'the quick brown fox '.repeat(100);
    const cut = truncateTokens(text, 50);
    expect(cut.truncated).toBe(true);
    expect(countTokens(cut.text)).toBe(50);
    expect(text.startsWith(cut.text)).toBe(true);
    expect(truncateTokens('hello world', 50)).toEqual({ text: 'hello world', truncated: false });
    const long = truncateTokens('漢'.repeat(10_000), 300);
    expect(long).toEqual({ text: '漢'.repeat(300), truncated: true });
  });

  test('a cut inside any slice keeps whole characters, and exactly the first tokens of text of words', () => {
    // Words of letters, accents, CJK and an emoji (a token may hold part of a character): every cut from 0 to the
    // whole text, across several slices.
    const text = Array.from({ length: 120 }, (_, i) => ['naïve', '漢字', 'grüße', '🙂x', 'the'][i % 5]).join(' ');
    const total = countTokens(text);
    expect(tokenSlices(text).next().value?.length).toBeLessThan(text.length);
    for (let max = 0; max <= total; max++) {
      const cut = truncateTokens(text, max);
      expect(text.startsWith(cut.text)).toBe(true);
      expect(cut.text).not.toMatch(/\uFFFD/);
      expect(countTokens(cut.text)).toBeLessThanOrEqual(max);
      expect(cut.truncated).toBe(max < total);
    }
  });
});

describe('the text pool: long texts counted and embedded in worker threads', () => {
  const long = ['漢'.repeat(40_000), 'word '.repeat(10_000), 'a'.repeat(30_000)];

  test('counts off the event loop are the counts in place', async () => {
    expect(long.reduce((sum, text) => sum + text.length, 0)).toBeGreaterThanOrEqual(OFF_LOOP_CHARS);
    expect(await countTokensEach(long)).toEqual(long.map((text) => countTokens(text)));
    const total = long.reduce((sum, text) => sum + countTokens(text), 0);
    // With a limit, counting stops at the text that passes it: its count is over what was left, the rest uncounted.
    const stopped = await countTokensEach(long, 1_000);
    expect(stopped).toHaveLength(1);
    expect(stopped[0]).toBeGreaterThan(1_000);
    expect(stopped[0]).toBeLessThan(total);
    const words = 'word '.repeat(300);
    const inPlace = await countTokensEach([words, words, words], 500);
    expect(inPlace).toHaveLength(2);
    expect(inPlace[0]).toBe(countTokens(words));
    expect(inPlace[0]! + inPlace[1]!).toBeGreaterThan(500);
    expect(await countTokensEach(['hello world'])).toEqual([countTokens('hello world')]);
  });

  test("the sandbox's embeddings of long texts are the ones computed in place", async () => {
    const model = sandboxEmbeddingModel('sandbox-embedding');
    const result = await model.doEmbed({ values: long, dimensions: 64 });
    expect(result.embeddings).toEqual(long.map((text) => sandboxEmbedding(text, 64)));
    expect(result.usage?.tokens).toBe(long.reduce((sum, text) => sum + countTokens(text), 0));
  });
});

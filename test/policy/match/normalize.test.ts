// The copies of a text the matcher reads (src/features/policy/match/normalize.ts).
import { describe, expect, test } from 'vitest';
import { normalizeForMatching } from '../../../src/features/policy/match.ts';
import { cpLength } from './rules.ts';

describe('normalizeForMatching', () => {
  test('NFKC, lower case, separator runs as one space, and a map back to original code points', () => {
    expect(normalizeForMatching('ﬁne')).toEqual({ normalized: 'fine', map: [0, 0, 1, 2] });
    expect(normalizeForMatching('ＧＡＭＥ')).toEqual({ normalized: 'game', map: [0, 1, 2, 3] });
    expect(normalizeForMatching('a - –\n b')).toEqual({ normalized: 'a b', map: [0, 1, 7] });
    // An emoji is one code point (two UTF-16 units): offsets after it shift by one, not two.
    expect(normalizeForMatching('😀A')).toEqual({ normalized: '😀a', map: [0, 1] });
    // Invisible characters are dropped; a combining mark composes with its base and maps to it.
    expect(normalizeForMatching('ba\u00ADd cafe\u0301')).toEqual({
      normalized: 'bad café',
      map: [0, 1, 3, 4, 5, 6, 7, 8],
    });
  });

  test('Turkish dotted and dotless I do not crash, and each normalised code point maps into the original', () => {
    const text = 'İSTANBUL ıi İ';
    const { normalized, map } = normalizeForMatching(text);
    // Case folding: İ is i (no combining dot left over); dotless ı stays itself.
    expect(normalized).toBe('istanbul ıi i');
    expect(map).toHaveLength(Array.from(normalized).length);
    for (const i of map) expect(i).toBeLessThan(cpLength(text));
  });

  test('full case folding: ß and ẞ are ss, and both code points map to the one they came from', () => {
    expect(normalizeForMatching('Straße')).toEqual({ normalized: 'strasse', map: [0, 1, 2, 3, 4, 4, 5] });
    expect(normalizeForMatching('STRAẞE').normalized).toBe('strasse');
    expect(normalizeForMatching('ΣΟΦΟΣ σοφος').normalized).toBe('σοφοσ σοφοσ');
  });
});

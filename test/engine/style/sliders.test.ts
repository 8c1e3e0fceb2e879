// The sliders of a text's measurements (src/features/engine/style/sliders.ts): in range for any text, ordered as
// the samples' styles are.
import { describe, expect, test } from 'vitest';
import { measure, SLIDER_NAMES, slidersFrom } from '../../../src/features/engine/style/index.ts';
import { measured, NAMES, sample, sliders, texts } from './samples.ts';

describe('sliders', () => {
  test('are integers from 0 to 100 for every sample and odd inputs', () => {
    for (const text of [
      ...Object.values(texts),
      sample('german'),
      sample('list'),
      '',
      '!!!',
      '😄😄😄',
      'a',
      'Word '.repeat(500),
    ]) {
      const s = slidersFrom(measure(text));
      expect(Object.keys(s)).toEqual([...SLIDER_NAMES]);
      for (const name of SLIDER_NAMES) {
        expect(Number.isInteger(s[name])).toBe(true);
        expect(s[name]).toBeGreaterThanOrEqual(0);
        expect(s[name]).toBeLessThanOrEqual(100);
      }
    }
  });

  test('differ between the samples in the expected directions', () => {
    const {
      'formal-bank': formal,
      'casual-coffee': casual,
      'technical-docs': technical,
      'warm-charity': warm,
      'hedged-consultancy': hedged,
    } = sliders;
    expect(formal.formality).toBeGreaterThan(casual.formality + 25);
    expect(casual.enthusiasm).toBeGreaterThan(formal.enthusiasm);
    expect(casual.humor).toBeGreaterThan(Math.max(formal.humor, technical.humor, warm.humor, hedged.humor));
    expect(casual.conciseness).toBeGreaterThan(Math.max(formal.conciseness, technical.conciseness, hedged.conciseness));
    expect(warm.warmth).toBeGreaterThan(Math.max(formal.warmth, casual.warmth, technical.warmth, hedged.warmth));
    for (const name of NAMES) {
      if (name !== 'technical-docs') expect(technical.complexity).toBeGreaterThan(sliders[name].complexity);
      if (name !== 'hedged-consultancy') expect(hedged.assertiveness).toBeLessThan(sliders[name].assertiveness);
    }
    expect(technical.assertiveness).toBeGreaterThan(75);
  });

  test('are monotonic: more contractions never make a text more formal, more hedges never more assertive', () => {
    const base = measured['formal-bank'];
    const more = (field: keyof typeof base, by: number) =>
      slidersFrom({ ...base, [field]: (base[field] as number) + by });
    expect(more('contractions_per_100_words', 3).formality).toBeLessThan(slidersFrom(base).formality);
    expect(more('hedges_per_100_words', 3).assertiveness).toBeLessThan(slidersFrom(base).assertiveness);
    expect(more('exclamations_per_sentence', 0.3).enthusiasm).toBeGreaterThan(slidersFrom(base).enthusiasm);
    expect(more('second_person_per_100', 3).warmth).toBeGreaterThan(slidersFrom(base).warmth);
  });
});

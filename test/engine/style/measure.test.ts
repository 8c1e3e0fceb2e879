// Measuring a text (src/features/engine/style/measure.ts): counts of a small text, and measurements that move in
// the expected direction between the samples.
import { describe, expect, test } from 'vitest';
import { countWords, measure } from '../../../src/features/engine/style/index.ts';
import { measured, NAMES, sample, texts } from './samples.ts';

describe('samples', () => {
  test.each(NAMES)('%s is 250 to 400 words of English prose', (name) => {
    expect(countWords(texts[name])).toBeGreaterThanOrEqual(250);
    expect(countWords(texts[name])).toBeLessThanOrEqual(400);
    expect(measured[name].language).toBe('en');
  });
});

describe('countWords', () => {
  test('counts runs of non-whitespace', () => {
    expect(countWords('')).toBe(0);
    expect(countWords('  \n\t ')).toBe(0);
    expect(countWords('one')).toBe(1);
    expect(countWords(" Don't   stop—now!\nReally 😄 ")).toBe(4);
  });
});

describe('measure', () => {
  test('counts sentences, words, contractions and pronouns of a small text', () => {
    // 14 words, 15 lexical words ("e.g." is two), 4 sentences ("e.g." ends none).
    const m = measure("We roast on Tuesdays. You'll love it! Don't you? Maybe e.g. twice a week.");
    expect(m.word_count).toBe(14);
    expect(m.sentence_count).toBe(4);
    expect(m.mean_sentence_words).toBe(3.75);
    expect(m.contractions_per_100_words).toBeCloseTo((2 * 100) / 15, 2);
    expect(m.exclamations_per_sentence).toBe(0.25);
    expect(m.questions_per_sentence).toBe(0.25);
    expect(m.second_person_per_100).toBeCloseTo((2 * 100) / 15, 2);
    expect(m.first_person_plural_per_100).toBeCloseTo(100 / 15, 2);
    expect(m.hedges_per_100_words).toBeCloseTo(100 / 15, 2);
    expect(m.imperatives_ratio).toBe(0);
  });

  test('measures the samples in the expected directions', () => {
    const {
      'formal-bank': formal,
      'casual-coffee': casual,
      'technical-docs': technical,
      'warm-charity': warm,
      'hedged-consultancy': hedged,
    } = measured;
    expect(casual.contractions_per_100_words).toBeGreaterThan(formal.contractions_per_100_words + 3);
    expect(formal.contractions_per_100_words).toBe(0);
    expect(casual.second_person_per_100).toBeGreaterThan(formal.second_person_per_100 + 3);
    expect(casual.mean_sentence_words).toBeLessThan(formal.mean_sentence_words / 2);
    expect(casual.exclamations_per_sentence).toBeGreaterThan(formal.exclamations_per_sentence);
    expect(casual.humor_markers_per_100).toBeGreaterThan(0);
    expect(technical.reading_grade).toBeGreaterThan(casual.reading_grade + 8);
    expect(technical.imperatives_ratio).toBeGreaterThan(0.3);
    expect(technical.technical_terms_per_100).toBe(Math.max(...NAMES.map((n) => measured[n].technical_terms_per_100)));
    expect(hedged.hedges_per_100_words).toBe(Math.max(...NAMES.map((n) => measured[n].hedges_per_100_words)));
    expect(warm.warm_words_per_100).toBe(Math.max(...NAMES.map((n) => measured[n].warm_words_per_100)));
    expect(warm.first_person_plural_per_100).toBeGreaterThan(3);
    expect(casual.signature_phrases).toContain('small batches');
    expect(technical.signature_phrases).toContain('event identifier');
    expect(warm.signature_phrases).toContain('Harbour Lights'); // shown as written inside a sentence
  });

  test('detects the language, and is unsure on too little text', () => {
    expect(measure(sample('german')).language).toBe('de');
    expect(measure('Le chat est sur la table et le chien dort dans la maison.').language).toBe(null); // under 20 words
    expect(
      measure(
        'Le chat est sur la table et le chien dort dans la maison avec les enfants de la famille, mais il ne veut pas manger le pain que nous avons acheté pour lui.',
      ).language,
    ).toBe('fr');
  });

  test('handles empty text', () => {
    const m = measure('');
    expect(m.word_count).toBe(0);
    expect(m.sentence_count).toBe(0);
    expect(m.signature_phrases).toEqual([]);
    expect(m.language).toBe(null);
  });
});

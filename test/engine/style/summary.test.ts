// The traits and summary of a voice (src/features/engine/style/summary.ts), from the samples' measurements.
import { describe, expect, test } from 'vitest';
import { summaryFrom, traitsFrom } from '../../../src/features/engine/style/index.ts';
import { measured, NAMES, type Name, sliders } from './samples.ts';

describe('traits and summary', () => {
  test.each(NAMES)('%s: at most 12 traits of at most 60 characters, and a summary of 1 to 4 sentences', (name) => {
    const traits = traitsFrom(measured[name], sliders[name]);
    expect(traits.length).toBeGreaterThan(0);
    expect(traits.length).toBeLessThanOrEqual(12);
    for (const trait of traits) expect(trait.length).toBeLessThanOrEqual(60);
    expect(new Set(traits).size).toBe(traits.length);
    const summary = summaryFrom(measured[name], sliders[name]);
    expect(summary.length).toBeGreaterThan(20);
    expect(summary.length).toBeLessThanOrEqual(1000);
    expect(summary.split(/(?<=\.)\s+(?=[A-Z])/).length).toBeLessThanOrEqual(4);
  });

  test('describe what is characteristic of each sample', () => {
    const traitsOf = (name: Name) => traitsFrom(measured[name], sliders[name]);
    expect(traitsOf('casual-coffee')).toEqual(
      expect.arrayContaining([
        'second person',
        'short sentences',
        'uses contractions',
        'signature phrase "small batches"',
      ]),
    );
    expect(traitsOf('technical-docs')).toEqual(
      expect.arrayContaining(['technical vocabulary', 'imperative instructions', 'long sentences']),
    );
    expect(traitsOf('hedged-consultancy')).toContain('hedged');
    expect(traitsOf('formal-bank')).toEqual(expect.arrayContaining(['third person', 'no contractions']));
    expect(traitsOf('warm-charity')).toEqual(
      expect.arrayContaining(['warm, appreciative words', 'speaks as "we"', 'second person']),
    );
    // The summary is derived from the text, not canned.
    const summaries = NAMES.map((name) => summaryFrom(measured[name], sliders[name]));
    expect(new Set(summaries).size).toBe(NAMES.length);
    expect(summaryFrom(measured['casual-coffee'], sliders['casual-coffee'])).toContain('Casual');
    expect(summaryFrom(measured['formal-bank'], sliders['formal-bank'])).toContain('Formal');
    expect(summaryFrom(measured['warm-charity'], sliders['warm-charity'])).toContain('"you" and about itself as "we"');
  });
});

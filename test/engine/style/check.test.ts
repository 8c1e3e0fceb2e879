// Checking a text against a voice (src/features/engine/style/check.ts): scores, ratings and suggestions with
// code-point offsets. Also measures how well check scores tell the five voices apart (the matrix is printed).
import { describe, expect, test } from 'vitest';
import {
  checkText,
  countWords,
  measure,
  SLIDER_NAMES,
  type Sliders,
  slidersFrom,
} from '../../../src/features/engine/style/index.ts';
import { NAMES, type Name, sliders, texts } from './samples.ts';

const check = (text: string, target: Sliders, bannedMatches = 0, maxSuggestions = 10) =>
  checkText(text, target, { bannedMatches, maxSuggestions });

describe('checkText', () => {
  test.each(NAMES)('scores %s on_voice against its own sliders', (name) => {
    const result = check(texts[name], sliders[name]);
    expect(result.score).toBeGreaterThanOrEqual(80);
    expect(result.rating).toBe('on_voice');
    expect(result.word_count).toBe(countWords(texts[name]));
    for (const slider of SLIDER_NAMES)
      expect(result.sliders[slider]).toEqual({
        target: sliders[name][slider],
        measured: sliders[name][slider],
        deviation: 0,
      });
  });

  test('scores lower against a very different voice, with signed deviations', () => {
    const result = check(texts['casual-coffee'], sliders['formal-bank']);
    expect(result.score).toBeLessThan(60);
    expect(result.rating).toBe('off_voice');
    expect(result.sliders.formality.deviation).toBe(
      sliders['casual-coffee'].formality - sliders['formal-bank'].formality,
    );
    expect(result.sliders.formality.deviation).toBeLessThan(-25);
  });

  test('rates close between 60 and 79', () => {
    const target = {
      ...sliders['warm-charity'],
      warmth: sliders['warm-charity'].warmth - 50,
      conciseness: sliders['warm-charity'].conciseness - 40,
    };
    const result = check(texts['warm-charity'], target);
    expect(result.score).toBe(100 - Math.round((2 * 90) / 7));
    expect(result.rating).toBe('close');
  });

  test('loses 15 points per banned phrase found, down to 0', () => {
    const own = check(texts['warm-charity'], sliders['warm-charity']).score;
    expect(check(texts['warm-charity'], sliders['warm-charity'], 1).score).toBe(own - 15);
    expect(check(texts['warm-charity'], sliders['warm-charity'], 2).score).toBe(own - 30);
    expect(check(texts['warm-charity'], sliders['warm-charity'], 20)).toMatchObject({ score: 0, rating: 'off_voice' });
  });

  test('scores empty or blank text 0, off_voice, with no suggestions', () => {
    for (const text of ['', '   \n\t']) {
      const result = check(text, sliders['formal-bank']);
      expect(result).toMatchObject({ score: 0, rating: 'off_voice', word_count: 0, suggestions: [] });
      expect(Object.keys(result.sliders)).toEqual([...SLIDER_NAMES]);
    }
  });

  test('suggests rewrites of the most off-voice sentences, at code-point offsets, in order, without overlaps', () => {
    const text = `${texts['casual-coffee']}\n\n${texts['hedged-consultancy']}`;
    for (const target of [sliders['formal-bank'], sliders['technical-docs'], sliders['casual-coffee']]) {
      const { suggestions } = check(text, target, 0, 50);
      expect(suggestions.length).toBeGreaterThan(0);
      let end = 0;
      for (const s of suggestions) {
        expect(Array.from(text).slice(s.start, s.end).join('')).toBe(s.original);
        expect(s.start).toBeGreaterThanOrEqual(end);
        end = s.end;
        expect(s.replacement).not.toBe(null);
        expect(s.replacement).not.toBe(s.original);
        expect(SLIDER_NAMES).toContain(s.slider);
        expect(s.reason).toMatch(
          new RegExp(`^(More|Less) \\w+ than the voice \\(${s.slider} \\d+, target \\d+\\)\\.$`),
        );
        expect(s.reason.length).toBeLessThanOrEqual(500);
      }
    }
  });

  test('respects maxSuggestions and keeps the most deviating sentences', () => {
    const text = texts['casual-coffee'];
    const all = check(text, sliders['formal-bank'], 0, 50).suggestions;
    expect(all.length).toBeGreaterThan(3);
    for (const max of [0, 1, 3]) {
      const some = check(text, sliders['formal-bank'], 0, max).suggestions;
      expect(some.length).toBe(Math.min(max, all.length));
      for (const s of some) expect(all).toContainEqual(s);
    }
    expect(check(text, sliders['formal-bank'], 0, 0).score).toBe(check(text, sliders['formal-bank'], 0, 50).score);
  });

  test('counts offsets in code points when the text has emoji', () => {
    const text =
      '😄🎉 Hey!!! This is sooo cool, you’re gonna love it 😍! We are pleased to announce the commencement of operations. 👩‍👩‍👧 Thanks, folks — lol!';
    const { suggestions } = check(text, sliders['formal-bank'], 0, 10);
    expect(suggestions.length).toBeGreaterThan(0);
    for (const s of suggestions) {
      expect(Array.from(text).slice(s.start, s.end).join('')).toBe(s.original);
      expect(s.end).toBeLessThanOrEqual(Array.from(text).length);
    }
    // The UTF-16 offset of a sentence after emoji differs from its code-point offset.
    const last = suggestions.at(-1)!;
    expect(text.indexOf(last.original)).toBeGreaterThan(last.start);
  });

  test('works on a single sentence', () => {
    const result = check("Hey, you're gonna love this!!!", sliders['formal-bank'], 0, 5);
    expect(result.word_count).toBe(5);
    expect(result.rating).toBe('off_voice');
    expect(result.suggestions).toHaveLength(1);
    expect(result.suggestions[0]).toMatchObject({ start: 0, end: 30, original: "Hey, you're gonna love this!!!" });
    expect(['formality', 'humor', 'enthusiasm']).toContain(result.suggestions[0]!.slider);
    // More formal, calmer, and less personal (the bank's voice does not address the reader).
    expect(result.suggestions[0]!.replacement).toBe('Hello, customers are going to love this.');
  });

  test('is deterministic', () => {
    const text = `${texts['casual-coffee']} ${texts['technical-docs']}`;
    expect(check(text, sliders['warm-charity'], 1, 10)).toEqual(check(text, sliders['warm-charity'], 1, 10));
    expect(measure(text)).toEqual(measure(text));
  });

  /** Scores of each row text against each column voice, printed, and asserted highest on the diagonal. */
  function discrimination(title: string, textOf: (name: Name) => string, voiceOf: (name: Name) => Sliders) {
    const matrix = NAMES.map((text) => NAMES.map((voice) => check(textOf(text), voiceOf(voice), 0, 0).score));
    const width = Math.max(...NAMES.map((n) => n.length));
    console.log(
      [
        title,
        `${''.padEnd(width)}  ${NAMES.map((n) => n.slice(0, 9).padStart(9)).join(' ')}`,
        ...NAMES.map(
          (name, i) => `${name.padEnd(width)}  ${matrix[i]!.map((score) => String(score).padStart(9)).join(' ')}`,
        ),
      ].join('\n'),
    );
    NAMES.forEach((_, a) => {
      NAMES.forEach((__, b) => {
        if (a !== b) expect(matrix[a]![a]!, `${NAMES[a]} vs voice ${NAMES[b]}`).toBeGreaterThan(matrix[a]![b]!);
      });
    });
  }

  test('tells the five voices apart: every sample scores higher against its own voice than against any other', () => {
    discrimination(
      'check score of sample (row) against the voice trained on sample (column)',
      (name) => texts[name],
      (name) => sliders[name],
    );
  });

  test('tells the five voices apart on held-out text: first half of a sample against voices trained on second halves', () => {
    // Against its own sliders a sample trivially scores 100; halves show how the check does on unseen text of a voice.
    const half = (name: Name, which: 0 | 1) => {
      const paragraphs = texts[name].trim().split(/\n\s*\n/);
      const middle = Math.ceil(paragraphs.length / 2);
      return (which === 0 ? paragraphs.slice(0, middle) : paragraphs.slice(middle)).join('\n\n');
    };
    discrimination(
      'check score of the first half of sample (row) against the voice trained on the second half of sample (column)',
      (name) => half(name, 0),
      (name) => slidersFrom(measure(half(name, 1))),
    );
  });
});

// The brand-voice style module (src/features/engine/style.ts) against five English samples written in clearly
// different styles (test/voices/samples): measurements and sliders move in the expected direction between them, the
// training verdict accepts them and rejects a German sample and a list, rewrites move text toward target sliders,
// and checkText scores, rates and suggests with code-point offsets. Also measures how well check scores tell the
// five voices apart (the matrix is printed).
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import {
  checkText,
  countWords,
  measure,
  rewriteToward,
  SLIDER_NAMES,
  type Sliders,
  slidersFrom,
  summaryFrom,
  traitsFrom,
  trainingVerdict,
} from '../../src/features/engine/style.ts';

const sample = (name: string) => readFileSync(new URL(`./samples/${name}.txt`, import.meta.url), 'utf8');
const NAMES = ['formal-bank', 'casual-coffee', 'technical-docs', 'warm-charity', 'hedged-consultancy'] as const;
type Name = (typeof NAMES)[number];
const texts = Object.fromEntries(NAMES.map((name) => [name, sample(name)])) as Record<Name, string>;
const measured = Object.fromEntries(NAMES.map((name) => [name, measure(texts[name])])) as Record<Name, ReturnType<typeof measure>>;
const sliders = Object.fromEntries(NAMES.map((name) => [name, slidersFrom(measured[name])])) as Record<Name, Sliders>;
const distance = (a: Sliders, b: Sliders) => SLIDER_NAMES.reduce((sum, name) => sum + Math.abs(a[name] - b[name]), 0);
const check = (text: string, target: Sliders, bannedMatches = 0, maxSuggestions = 10) => checkText(text, target, { bannedMatches, maxSuggestions });

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
    const { 'formal-bank': formal, 'casual-coffee': casual, 'technical-docs': technical, 'warm-charity': warm, 'hedged-consultancy': hedged } = measured;
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
    expect(measure('Le chat est sur la table et le chien dort dans la maison avec les enfants de la famille, mais il ne veut pas manger le pain que nous avons acheté pour lui.').language).toBe('fr');
  });

  test('handles empty text', () => {
    const m = measure('');
    expect(m.word_count).toBe(0);
    expect(m.sentence_count).toBe(0);
    expect(m.signature_phrases).toEqual([]);
    expect(m.language).toBe(null);
  });
});

describe('sliders', () => {
  test('are integers from 0 to 100 for every sample and odd inputs', () => {
    for (const text of [...Object.values(texts), sample('german'), sample('list'), '', '!!!', '😄😄😄', 'a', 'Word '.repeat(500)]) {
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
    const { 'formal-bank': formal, 'casual-coffee': casual, 'technical-docs': technical, 'warm-charity': warm, 'hedged-consultancy': hedged } = sliders;
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
    const more = (field: keyof typeof base, by: number) => slidersFrom({ ...base, [field]: (base[field] as number) + by });
    expect(more('contractions_per_100_words', 3).formality).toBeLessThan(slidersFrom(base).formality);
    expect(more('hedges_per_100_words', 3).assertiveness).toBeLessThan(slidersFrom(base).assertiveness);
    expect(more('exclamations_per_sentence', 0.3).enthusiasm).toBeGreaterThan(slidersFrom(base).enthusiasm);
    expect(more('second_person_per_100', 3).warmth).toBeGreaterThan(slidersFrom(base).warmth);
  });
});

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
    expect(traitsOf('casual-coffee')).toEqual(expect.arrayContaining(['second person', 'short sentences', 'uses contractions', 'signature phrase "small batches"']));
    expect(traitsOf('technical-docs')).toEqual(expect.arrayContaining(['technical vocabulary', 'imperative instructions', 'long sentences']));
    expect(traitsOf('hedged-consultancy')).toContain('hedged');
    expect(traitsOf('formal-bank')).toEqual(expect.arrayContaining(['third person', 'no contractions']));
    expect(traitsOf('warm-charity')).toEqual(expect.arrayContaining(['warm, appreciative words', 'speaks as "we"', 'second person']));
    // The summary is derived from the text, not canned.
    const summaries = NAMES.map((name) => summaryFrom(measured[name], sliders[name]));
    expect(new Set(summaries).size).toBe(NAMES.length);
    expect(summaryFrom(measured['casual-coffee'], sliders['casual-coffee'])).toContain('Casual');
    expect(summaryFrom(measured['formal-bank'], sliders['formal-bank'])).toContain('Formal');
    expect(summaryFrom(measured['warm-charity'], sliders['warm-charity'])).toContain('"you" and about itself as "we"');
  });
});

describe('trainingVerdict', () => {
  test.each(NAMES)('accepts %s', (name) => {
    expect(trainingVerdict(measured[name])).toEqual({ ok: true });
  });

  test('rejects German as unsupported_language and says what it detected', () => {
    const verdict = trainingVerdict(measure(sample('german')));
    expect(verdict).toMatchObject({ ok: false, reason: 'unsupported_language' });
    expect(!verdict.ok && verdict.message).toContain('German (de)');
  });

  test('rejects a list as sample_not_distinctive and asks for prose', () => {
    const verdict = trainingVerdict(measure(sample('list')));
    expect(verdict).toMatchObject({ ok: false, reason: 'sample_not_distinctive' });
    expect(!verdict.ok && verdict.message).toMatch(/list.*full sentences/);
  });

  test('rejects repeated text and too few sentences', () => {
    const repeated = trainingVerdict(measure('We roast coffee in small batches every week and ship it fresh. '.repeat(20)));
    expect(repeated).toMatchObject({ ok: false, reason: 'sample_not_distinctive' });
    expect(!repeated.ok && repeated.message).toContain('repeats itself');
    const oneSentence = trainingVerdict(measure(texts['formal-bank'].replace(/[.!?]/g, ',').replace(/\s+/g, ' ')));
    expect(oneSentence).toMatchObject({ ok: false, reason: 'sample_not_distinctive' });
    for (const verdict of [repeated, oneSentence]) expect(!verdict.ok && verdict.message.length).toBeLessThanOrEqual(1000);
  });
});

describe('rewriteToward', () => {
  const TARGETS: Record<string, Sliders> = {
    ...sliders,
    'very formal': { formality: 90, warmth: 20, humor: 0, enthusiasm: 10, conciseness: 40, complexity: 80, assertiveness: 60 },
    'chatty and upbeat': { formality: 10, warmth: 80, humor: 60, enthusiasm: 80, conciseness: 85, complexity: 10, assertiveness: 80 },
    'hedged': { formality: 60, warmth: 30, humor: 0, enthusiasm: 10, conciseness: 50, complexity: 40, assertiveness: 10 },
  };

  test.each(Object.keys(TARGETS))('moves every other sample toward the %s sliders', (targetName) => {
    const target = TARGETS[targetName]!;
    for (const name of NAMES) {
      if (name === targetName) continue;
      const rewritten = rewriteToward(texts[name], target);
      const before = distance(sliders[name], target);
      const after = distance(slidersFrom(measure(rewritten)), target);
      expect(after, `${name} toward ${targetName}: ${before} → ${after}`).toBeLessThan(before);
    }
  });

  test('leaves text that is already on target unchanged', () => {
    for (const name of NAMES) expect(rewriteToward(texts[name], sliders[name])).toBe(texts[name]);
  });

  /** Rewrites text toward its own sliders with some of them changed, so that only the rules of those act. */
  const toward = (text: string, changes: Partial<Sliders>) => rewriteToward(text, { ...slidersFrom(measure(text)), ...changes });

  test('contracts, expands, hedges and un-hedges with the right capitals', () => {
    expect(toward('We are sure that it is not ready. Do not worry about it.', { formality: 0 })).toBe("We're sure that it's not ready. Don't worry about it.");
    expect(toward("We're sure it isn't ready! You'll see. Don't worry.", { formality: 100 })).toBe('We are sure it is not ready. You will see. Do not worry.');
    expect(toward('Perhaps we could start on Monday. It might rain, I think.', { assertiveness: 100 })).toBe('We can start on Monday. It will rain.');
    expect(toward('Store the token in a vault. The server will reject expired tokens.', { assertiveness: 0 })).toBe('Perhaps store the token in a vault. The server might reject expired tokens.');
    expect(toward('It is ready. We are here.', { enthusiasm: 100 })).toBe('It is ready! We are here.');
    expect(toward('It is ready! We are here!', { enthusiasm: 0 })).toBe('It is ready. We are here.');
  });

  test('keeps the capitals of names and of words the author writes in lower case', () => {
    expect(toward('Harbour Lights will open a shelter in the harbour. It will have twenty rooms.', { assertiveness: 0 })).toBe('Perhaps Harbour Lights might open a shelter in the harbour. It might have twenty rooms.');
    expect(toward('Maybe npm is fine. npm will install it.', { assertiveness: 100 })).toBe('npm is fine. npm will install it.');
  });

  test('simplifies or elaborates vocabulary', () => {
    expect(toward('Utilize the form to purchase approximately twelve additional units prior to Friday.', { complexity: 0 })).toBe('Use the form to buy about twelve more units before Friday.');
    expect(toward('We use it to help people buy things.', { complexity: 100 })).toBe('We utilize it to assist people purchase things.');
  });

  test('splits long sentences for conciseness where the second part has its own subject', () => {
    const long = 'We roast small batches in our warehouse every Tuesday, and we ship every bag to you on the very same day (really).';
    expect(toward(long, { conciseness: 100 })).toBe('We roast small batches in our warehouse every Tuesday. We ship every bag to you on the same day.');
    const shared = 'The endpoint accepts signed requests from registered clients, and returns a receipt with the identifier of the stored event.';
    expect(toward(shared, { conciseness: 100 })).toBe(shared);
  });

  test('addresses the reader for warmth', () => {
    // A text that already opens on the reader gets no opener.
    expect(toward('Customers receive a statement each month. The statement lists every payment. It is sent by post.', { warmth: 100 })).toBe(
      'You receive a statement each month. The statement lists every payment. It is sent by post.',
    );
    expect(toward('A statement is sent each month. It lists every payment. Statements are kept for a year.', { warmth: 100 })).toBe(
      'Thank you for being with us. A statement is sent each month. It lists every payment. Statements are kept for a year.',
    );
  });

  test('is deterministic, and leaves empty text empty', () => {
    for (const name of NAMES) expect(rewriteToward(texts[name], TARGETS['chatty and upbeat']!)).toBe(rewriteToward(texts[name], TARGETS['chatty and upbeat']!));
    for (const target of Object.values(TARGETS)) expect(rewriteToward('', target)).toBe('');
  });
});

describe('checkText', () => {
  test.each(NAMES)('scores %s on_voice against its own sliders', (name) => {
    const result = check(texts[name], sliders[name]);
    expect(result.score).toBeGreaterThanOrEqual(80);
    expect(result.rating).toBe('on_voice');
    expect(result.word_count).toBe(countWords(texts[name]));
    for (const slider of SLIDER_NAMES) expect(result.sliders[slider]).toEqual({ target: sliders[name][slider], measured: sliders[name][slider], deviation: 0 });
  });

  test('scores lower against a very different voice, with signed deviations', () => {
    const result = check(texts['casual-coffee'], sliders['formal-bank']);
    expect(result.score).toBeLessThan(60);
    expect(result.rating).toBe('off_voice');
    expect(result.sliders.formality.deviation).toBe(sliders['casual-coffee'].formality - sliders['formal-bank'].formality);
    expect(result.sliders.formality.deviation).toBeLessThan(-25);
  });

  test('rates close between 60 and 79', () => {
    const target = { ...sliders['warm-charity'], warmth: sliders['warm-charity'].warmth - 50, conciseness: sliders['warm-charity'].conciseness - 40 };
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
        expect(s.reason).toMatch(new RegExp(`^(More|Less) \\w+ than the voice \\(${s.slider} \\d+, target \\d+\\)\\.$`));
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
    const text = '😄🎉 Hey!!! This is sooo cool, you’re gonna love it 😍! We are pleased to announce the commencement of operations. 👩‍👩‍👧 Thanks, folks — lol!';
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
        ...NAMES.map((name, i) => `${name.padEnd(width)}  ${matrix[i]!.map((score) => String(score).padStart(9)).join(' ')}`),
      ].join('\n'),
    );
    NAMES.forEach((_, a) => {
      NAMES.forEach((__, b) => {
        if (a !== b) expect(matrix[a]![a]!, `${NAMES[a]} vs voice ${NAMES[b]}`).toBeGreaterThan(matrix[a]![b]!);
      });
    });
  }

  test('tells the five voices apart: every sample scores higher against its own voice than against any other', () => {
    discrimination('check score of sample (row) against the voice trained on sample (column)', (name) => texts[name], (name) => sliders[name]);
  });

  test('tells the five voices apart on held-out text: first half of a sample against voices trained on second halves', () => {
    // Against its own sliders a sample trivially scores 100; halves show how the check does on unseen text of a voice.
    const half = (name: Name, which: 0 | 1) => {
      const paragraphs = texts[name].trim().split(/\n\s*\n/);
      const middle = Math.ceil(paragraphs.length / 2);
      return (which === 0 ? paragraphs.slice(0, middle) : paragraphs.slice(middle)).join('\n\n');
    };
    discrimination('check score of the first half of sample (row) against the voice trained on the second half of sample (column)', (name) => half(name, 0), (name) => slidersFrom(measure(half(name, 1))));
  });
});

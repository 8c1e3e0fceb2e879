// Rewriting toward target sliders (src/features/engine/style/rewrite.ts): rewrites move text toward the target.
import { describe, expect, test } from 'vitest';
import { measure, rewriteToward, type Sliders, slidersFrom } from '../../../src/features/engine/style/index.ts';
import { distance, NAMES, sliders, texts } from './samples.ts';

describe('rewriteToward', () => {
  const TARGETS: Record<string, Sliders> = {
    ...sliders,
    'very formal': {
      formality: 90,
      warmth: 20,
      humor: 0,
      enthusiasm: 10,
      conciseness: 40,
      complexity: 80,
      assertiveness: 60,
    },
    'chatty and upbeat': {
      formality: 10,
      warmth: 80,
      humor: 60,
      enthusiasm: 80,
      conciseness: 85,
      complexity: 10,
      assertiveness: 80,
    },
    hedged: { formality: 60, warmth: 30, humor: 0, enthusiasm: 10, conciseness: 50, complexity: 40, assertiveness: 10 },
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
  const toward = (text: string, changes: Partial<Sliders>) =>
    rewriteToward(text, { ...slidersFrom(measure(text)), ...changes });

  test('contracts, expands, hedges and un-hedges with the right capitals', () => {
    expect(toward('We are sure that it is not ready. Do not worry about it.', { formality: 0 })).toBe(
      "We're sure that it's not ready. Don't worry about it.",
    );
    expect(toward("We're sure it isn't ready! You'll see. Don't worry.", { formality: 100 })).toBe(
      'We are sure it is not ready. You will see. Do not worry.',
    );
    expect(toward('Perhaps we could start on Monday. It might rain, I think.', { assertiveness: 100 })).toBe(
      'We can start on Monday. It will rain.',
    );
    expect(toward('Store the token in a vault. The server will reject expired tokens.', { assertiveness: 0 })).toBe(
      'Perhaps store the token in a vault. The server might reject expired tokens.',
    );
    expect(toward('It is ready. We are here.', { enthusiasm: 100 })).toBe('It is ready! We are here.');
    expect(toward('It is ready! We are here!', { enthusiasm: 0 })).toBe('It is ready. We are here.');
  });

  test('keeps the capitals of names and of words the author writes in lower case', () => {
    expect(
      toward('Harbour Lights will open a shelter in the harbour. It will have twenty rooms.', { assertiveness: 0 }),
    ).toBe('Perhaps Harbour Lights might open a shelter in the harbour. It might have twenty rooms.');
    expect(toward('Maybe npm is fine. npm will install it.', { assertiveness: 100 })).toBe(
      'npm is fine. npm will install it.',
    );
  });

  test('simplifies or elaborates vocabulary', () => {
    expect(
      toward('Utilize the form to purchase approximately twelve additional units prior to Friday.', { complexity: 0 }),
    ).toBe('Use the form to buy about twelve more units before Friday.');
    expect(toward('We use it to help people buy things.', { complexity: 100 })).toBe(
      'We utilize it to assist people purchase things.',
    );
  });

  test('splits long sentences for conciseness where the second part has its own subject', () => {
    const long =
      'We roast small batches in our warehouse every Tuesday, and we ship every bag to you on the very same day (really).';
    expect(toward(long, { conciseness: 100 })).toBe(
      'We roast small batches in our warehouse every Tuesday. We ship every bag to you on the same day.',
    );
    const shared =
      'The endpoint accepts signed requests from registered clients, and returns a receipt with the identifier of the stored event.';
    expect(toward(shared, { conciseness: 100 })).toBe(shared);
  });

  test('addresses the reader for warmth', () => {
    // A text that already opens on the reader gets no opener.
    expect(
      toward('Customers receive a statement each month. The statement lists every payment. It is sent by post.', {
        warmth: 100,
      }),
    ).toBe('You receive a statement each month. The statement lists every payment. It is sent by post.');
    expect(
      toward('A statement is sent each month. It lists every payment. Statements are kept for a year.', {
        warmth: 100,
      }),
    ).toBe(
      'Thank you for being with us. A statement is sent each month. It lists every payment. Statements are kept for a year.',
    );
  });

  test('is deterministic, and leaves empty text empty', () => {
    for (const name of NAMES)
      expect(rewriteToward(texts[name], TARGETS['chatty and upbeat']!)).toBe(
        rewriteToward(texts[name], TARGETS['chatty and upbeat']!),
      );
    for (const target of Object.values(TARGETS)) expect(rewriteToward('', target)).toBe('');
  });
});

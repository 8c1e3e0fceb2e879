// Style measurement and rewriting read a text in time linear in it: each case feeds what made one of their patterns
// backtrack super-linearly and checks the result. The size is a line of a document (1,000,000 characters), which the
// sandbox-writer's rewrite task measures and rewrites line by line; a voice's sample (10,000) and a checked text
// (20,000) are far shorter. A super-linear pattern takes minutes on such an input (an exponential one, for ever), so a
// case that hangs is one come back. `npm run lint:redos` finds the patterns (scripts/lint-redos.ts).
import { describe, expect, test } from 'vitest';
import { measure } from '../../../src/features/engine/style/measure.ts';
import { clarify, opensWithAddress, rewriteToward } from '../../../src/features/engine/style/rewrite.ts';
import { sentenceSpans } from '../../../src/features/engine/style/sentences.ts';
import { type Sliders, slidersFrom } from '../../../src/features/engine/style/sliders.ts';

const LINE = 1_000_000;
const TABS = '\t'.repeat(LINE);
const all = (value: number): Sliders => ({
  formality: value,
  warmth: value,
  humor: value,
  enthusiasm: value,
  conciseness: value,
  complexity: value,
  assertiveness: value,
});

describe('style on the longest line', () => {
  test('sentence boundaries: emoji after a stop, and stops after a bracket, with something after them', () => {
    expect(sentenceSpans(`Done.${'▪'.repeat(LINE)}x`).map((s) => s.text.length)).toEqual([LINE + 6]);
    expect(sentenceSpans(`Done)${'.'.repeat(LINE)}x`).map((s) => s.text.length)).toEqual([LINE + 6]);
  });

  test("measurements: a sentence's white space before its end, a word of letters only", () => {
    const m = measure(`We ship today.${TABS}x\t ${'a'.repeat(LINE)}`);
    expect([m.word_count, m.sentence_count]).toEqual([5, 2]);
  });

  test('less enthusiasm: white space before a joiner that is no emoji', () => {
    expect(rewriteToward(`Great news!!! We ship today${TABS}\u200D©`, all(0))).toBe('Great news. We ship today \u200D');
  });

  test('a long sentence split at a semicolon after white space', () => {
    const text = `We roast our coffee beans every single morning in the shop${TABS}; we ship them to you by noon on the same day.`;
    expect(rewriteToward(text, all(0))).toBe(
      'Perhaps we roast our coffee beans every single morning in the shop; we ship them to you by noon on the same day.',
    );
  });

  test('more concise: white space before an aside', () => {
    expect(rewriteToward(`We ship today${TABS}(soon) and more.`, all(100))).toBe(
      'We ship today and more (yes, really)!',
    );
  });

  test('more humour: a run of stops before a closing bracket', () => {
    const text = `Our beans are roasted fresh every morning${'!'.repeat(LINE)})`;
    expect(rewriteToward(text, { ...slidersFrom(measure(text)), humor: 100 })).toBe(text);
  });

  test('a hedge: a sentence opening with letters that are not word characters', () => {
    const letters = 'é'.repeat(LINE);
    expect(opensWithAddress(`${letters}x we roast`)).toBe(false);
    expect(opensWithAddress(`${letters}, we roast`)).toBe(true);
    expect(rewriteToward(`${letters}x we roast beans daily here.`, { ...all(50), assertiveness: 0 })).toBe(
      `Perhaps ${letters}x we roast beans daily here (yes, really)!`,
    );
  });

  test('clarity: white space before punctuation and at the end', () => {
    expect(clarify(`We ship${TABS}x\t, today${TABS}`)).toBe('We ship x, today ');
  });
});

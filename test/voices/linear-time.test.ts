// A voice's instructions quote its sample's first sentences in time linear in the sample: a sample of 10,000 characters
// (the contract's most) with no sentence end made the pattern that finds sentences read to its end from every
// character. `npm run lint:redos` finds such patterns (scripts/lint-redos.ts).
import { expect, test } from 'vitest';
import { voiceInstructions } from '../../src/features/voices/instructions.ts';

const SAMPLE = 10_000;
const sliders = {
  formality: 50,
  warmth: 50,
  humor: 50,
  enthusiasm: 50,
  conciseness: 50,
  complexity: 50,
  assertiveness: 50,
};

test('a sample without a sentence end, and one whose last sentence has none', () => {
  const voice = { name: 'Plain', style_summary: null, traits: [], sliders, banned_phrases: [] };
  const reference = (sample: string) =>
    voiceInstructions({ ...voice, sample_text: sample }).split('Reference sentences of the voice: ')[1];
  expect(reference('a'.repeat(SAMPLE))).toBe('a'.repeat(600));
  expect(reference(`We roast daily. ${'a'.repeat(SAMPLE - 16)}`)).toBe('We roast daily.');
});

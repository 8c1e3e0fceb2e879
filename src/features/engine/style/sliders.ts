// The seven sliders a voice is set by (0 to 100), and how measurements map to them.
import type { Measurements } from './measure.ts';

export const SLIDER_NAMES = [
  'formality',
  'warmth',
  'humor',
  'enthusiasm',
  'conciseness',
  'complexity',
  'assertiveness',
] as const;
export type SliderName = (typeof SLIDER_NAMES)[number];
export type Sliders = Record<SliderName, number>;

const clamp = (value: number) => Math.min(100, Math.max(0, Math.round(value)));

/**
 * Each slider is a clamped linear sum of measurements: every term is monotonic in its measurement, so more of a
 * trait never moves a slider the other way. Coefficients were set so that typical copy spans the scale (see the
 * samples in test/voices/samples).
 */
export function slidersFrom(m: Measurements): Sliders {
  if (m.word_count === 0)
    return { formality: 50, warmth: 0, humor: 0, enthusiasm: 0, conciseness: 50, complexity: 0, assertiveness: 50 };
  return {
    // Contractions, slang, exclamations and emoji make it casual; ceremonious connectives, long sentences and long words formal.
    formality: clamp(
      45 -
        6 * m.contractions_per_100_words -
        6 * m.slang_per_100 -
        25 * m.exclamations_per_sentence -
        4 * m.emoji_per_100_words +
        8 * m.formal_markers_per_100 +
        0.8 * (m.mean_sentence_words - 12) +
        60 * m.long_word_ratio,
    ),
    // Talking to "you" and as "we"/"I", and warm words (thank, grateful, love, welcome…).
    warmth: clamp(
      5 +
        3 * m.second_person_per_100 +
        2 * m.first_person_plural_per_100 +
        1.5 * m.first_person_singular_per_100 +
        7 * m.warm_words_per_100,
    ),
    // Humor markers (laughter, jokes, playful asides, laughing emoji), helped a little by slang and exclamations.
    humor: clamp(
      30 * m.humor_markers_per_100 + 4 * m.slang_per_100 + 15 * m.exclamations_per_sentence + 3 * m.emoji_per_100_words,
    ),
    // Exclamation marks first, then excited words and emoji.
    enthusiasm: clamp(
      10 + 110 * m.exclamations_per_sentence + 6 * m.excitement_words_per_100 + 6 * m.emoji_per_100_words,
    ),
    // Short sentences are concise; asides (parentheses, semicolons, dashes) make it expansive.
    conciseness: clamp(
      100 -
        3 * (m.mean_sentence_words - 6) -
        15 * m.parentheticals_per_sentence -
        15 * m.semicolons_and_dashes_per_sentence,
    ),
    // Reading grade (sentence length × syllables), long words and technical terms.
    complexity: clamp(-10 + 3 * m.reading_grade + 60 * m.long_word_ratio + 4 * m.technical_terms_per_100),
    // Hedges pull it down; imperatives and words of certainty push it up.
    assertiveness: clamp(
      60 -
        7 * m.hedges_per_100_words +
        50 * m.imperatives_ratio +
        3 * m.confident_markers_per_100 -
        15 * m.questions_per_sentence,
    ),
  };
}

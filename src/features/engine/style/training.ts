// Whether a sample can train a voice.
import type { Measurements } from './measure.ts';

export type TrainingVerdict =
  | { ok: true }
  | { ok: false; reason: 'sample_not_distinctive' | 'unsupported_language'; message: string };

const LANGUAGE_NAMES: Record<string, string> = {
  de: 'German',
  fr: 'French',
  es: 'Spanish',
  it: 'Italian',
  nl: 'Dutch',
  pt: 'Portuguese',
};
const SEND_PROSE = 'send about 300 words of typical copy in full sentences, as you would write to a customer';

/** Whether a sample can train a voice: English prose of several distinct sentences (the API checks the word bounds). */
export function trainingVerdict(m: Measurements): TrainingVerdict {
  const fail = (reason: 'sample_not_distinctive' | 'unsupported_language', message: string): TrainingVerdict => ({
    ok: false,
    reason,
    message,
  });
  if (m.language !== null && m.language !== 'en') {
    return fail(
      'unsupported_language',
      `The sample looks like ${LANGUAGE_NAMES[m.language] ?? m.language} (${m.language}); voices can only be trained on English so far: ${SEND_PROSE}, in English.`,
    );
  }
  if (m.list_item_ratio >= 0.5) {
    return fail(
      'sample_not_distinctive',
      `The sample is mostly a list (${Math.round(m.list_item_ratio * 100)}% of its lines are list items), which shows little of how you write: ${SEND_PROSE}.`,
    );
  }
  // Below 0.3 distinct words per word, 200+ words of prose are the same passage over and over.
  if (m.repeated_sentence_ratio >= 0.3 || (m.word_count >= 100 && m.type_token_ratio < 0.3)) {
    return fail(
      'sample_not_distinctive',
      `The sample repeats itself (${Math.round(m.repeated_sentence_ratio * 100)}% repeated sentences, ${Math.round(m.type_token_ratio * 100)}% distinct words): ${SEND_PROSE}, without repeating passages.`,
    );
  }
  if (m.sentence_count < 5) {
    return fail(
      'sample_not_distinctive',
      `The sample has only ${m.sentence_count} sentence${m.sentence_count === 1 ? '' : 's'}, too few to tell a style from: ${SEND_PROSE}.`,
    );
  }
  if (m.language === null) {
    return fail(
      'unsupported_language',
      `The language of the sample could not be recognised as English; voices can only be trained on English so far: ${SEND_PROSE}, in English.`,
    );
  }
  return { ok: true };
}

// The traits and the summary of a voice shown to users, from its measurements and sliders.
import type { Measurements } from './measure.ts';
import { capitalize } from './sentences.ts';
import type { Sliders } from './sliders.ts';

/** Short traits, strongest first: each candidate's strength is how far its measurement is past the trait's threshold. */
export function traitsFrom(m: Measurements, sliders: Sliders): string[] {
  const found: Array<{ strength: number; trait: string }> = [];
  const add = (value: number, threshold: number, trait: string) => {
    if (value >= threshold) found.push({ strength: value / threshold, trait });
  };
  const pronouns = m.second_person_per_100 + m.first_person_plural_per_100 + m.first_person_singular_per_100;
  add(m.second_person_per_100, 2, 'second person');
  add(m.first_person_plural_per_100, 2, 'speaks as "we"');
  add(m.first_person_singular_per_100, 1.5, 'first person ("I")');
  if (m.word_count >= 50 && pronouns < 0.5) found.push({ strength: 2, trait: 'third person' });
  add(m.contractions_per_100_words, 1.5, 'uses contractions');
  if (m.word_count >= 100 && m.contractions_per_100_words === 0)
    found.push({ strength: 1.5, trait: 'no contractions' });
  if (m.sentence_count) add(12 / Math.max(1, m.mean_sentence_words), 1, 'short sentences');
  add(m.mean_sentence_words, 22, 'long sentences');
  if (m.mean_sentence_words) add(m.sentence_words_stdev / m.mean_sentence_words, 0.6, 'varied sentence length');
  add(m.exclamations_per_sentence, 0.1, 'exclamatory');
  add(m.questions_per_sentence, 0.1, 'asks questions');
  add(m.emoji_per_100_words, 0.3, 'uses emoji');
  add(m.hedges_per_100_words, 2, 'hedged');
  add(m.imperatives_ratio, 0.2, 'imperative instructions');
  add(m.technical_terms_per_100, 2, 'technical vocabulary');
  if (m.word_count >= 20) add(0.08 / Math.max(0.02, m.long_word_ratio), 1, 'plain words');
  add(m.humor_markers_per_100, 0.3, 'playful asides and jokes');
  add(m.semicolons_and_dashes_per_sentence + m.parentheticals_per_sentence, 0.3, 'asides, semicolons and dashes');
  add(m.warm_words_per_100, 1.5, 'warm, appreciative words');
  add(m.formal_markers_per_100, 0.8, 'formal connectives');
  add(m.slang_per_100, 0.7, 'chatty slang');
  add(sliders.formality, 75, 'formal register');
  add(100 - sliders.formality, 75, 'conversational');
  add(sliders.enthusiasm, 60, 'energetic');
  add(sliders.assertiveness, 80, 'direct and confident');
  m.signature_phrases.forEach((phrase, i) => {
    found.push({ strength: 1.4 - i * 0.05, trait: `signature phrase "${phrase.slice(0, 40)}"` });
  });
  // A stable sort keeps the order above among equals, so the result is deterministic.
  return found
    .sort((a, b) => b.strength - a.strength)
    .slice(0, 12)
    .map((f) => f.trait.slice(0, 60));
}

const listed = (items: string[]) =>
  items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;

/** Up to four sentences built from the measurements: tone, sentences and vocabulary, person, habits. */
export function summaryFrom(m: Measurements, sliders: Sliders): string {
  const tone = [
    sliders.formality >= 70 ? 'formal' : sliders.formality <= 30 ? 'casual' : 'neutral in register',
    sliders.warmth >= 60 ? 'warm' : sliders.warmth <= 20 ? 'impersonal' : null,
    sliders.humor >= 35 ? 'playful' : null,
    sliders.enthusiasm >= 60 ? 'energetic' : sliders.enthusiasm <= 20 ? 'calm' : null,
    sliders.assertiveness >= 75 ? 'direct' : sliders.assertiveness <= 30 ? 'tentative' : null,
  ].filter((t): t is string => t !== null);
  const vocabulary =
    m.technical_terms_per_100 >= 2
      ? 'technical'
      : m.long_word_ratio >= 0.2
        ? 'elaborate'
        : m.long_word_ratio <= 0.08
          ? 'plain'
          : 'everyday';
  const variety =
    m.mean_sentence_words && m.sentence_words_stdev / m.mean_sentence_words >= 0.6
      ? 'of very varied length'
      : 'of fairly even length';
  const sentences = [
    `${capitalize(listed(tone))}.`,
    `Sentences average ${Math.round(m.mean_sentence_words)} words, ${variety}, at a reading grade of about ${Math.round(m.reading_grade)}, with ${vocabulary} vocabulary.`,
  ];
  const you = m.second_person_per_100 >= 1.5;
  const we = m.first_person_plural_per_100 >= 1.5;
  const i = m.first_person_singular_per_100 >= 1.5;
  const person =
    you && we
      ? 'Speaks to the reader as "you" and about itself as "we"'
      : you
        ? 'Speaks to the reader as "you"'
        : we
          ? 'Writes as "we"'
          : i
            ? 'Writes as "I"'
            : 'Writes in the third person';
  const contractions =
    m.contractions_per_100_words >= 1.5
      ? 'uses contractions freely'
      : m.contractions_per_100_words === 0
        ? 'never uses contractions'
        : 'uses few contractions';
  sentences.push(`${person}, and ${contractions}.`);
  const habits = [
    m.hedges_per_100_words >= 2 ? 'hedges often (maybe, might, could)' : null,
    m.imperatives_ratio >= 0.2 ? 'gives instructions in the imperative' : null,
    m.exclamations_per_sentence >= 0.1
      ? `ends ${Math.round(m.exclamations_per_sentence * 100)}% of sentences with "!"`
      : null,
    m.humor_markers_per_100 >= 0.3 ? 'slips in jokes and playful asides' : null,
    m.signature_phrases[0] ? `comes back to "${m.signature_phrases[0]}"` : null,
  ].filter((h): h is string => h !== null);
  if (habits.length) sentences.push(`${capitalize(listed(habits.slice(0, 3)))}.`);
  return sentences.join(' ').slice(0, 1000);
}

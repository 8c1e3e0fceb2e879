// The conformance check of a text against a voice's sliders: a score, a rating, and suggestions by sentence.
import { measure } from './measure.ts';
import { rewriteToward } from './rewrite.ts';
import { sentenceSpans } from './sentences.ts';
import { SLIDER_NAMES, type SliderName, type Sliders, slidersFrom } from './sliders.ts';

export interface SliderDeviation {
  target: number;
  measured: number;
  /** measured - target: positive when the text is further right on the scale than the voice. */
  deviation: number;
}
export interface Suggestion {
  /** Code-point offsets into the checked text, start inclusive, end exclusive. */
  start: number;
  end: number;
  original: string;
  replacement: string | null;
  reason: string;
  slider: SliderName | null;
}
export interface CheckResult {
  score: number;
  rating: 'on_voice' | 'close' | 'off_voice';
  word_count: number;
  sliders: Record<SliderName, SliderDeviation>;
  suggestions: Suggestion[];
}

/** Score points lost per point of mean absolute slider deviation: on_voice within 10 points on average, close within 20. */
const DEVIATION_PENALTY = 2;
const BANNED_PENALTY = 15;
/** A sentence is worth a suggestion when its own mean deviation would make it score below 70 alone. */
const SENTENCE_DEVIATION = 15;
const ADJECTIVES: Record<SliderName, string> = {
  formality: 'formal',
  warmth: 'warm',
  humor: 'playful',
  enthusiasm: 'enthusiastic',
  conciseness: 'concise',
  complexity: 'complex',
  assertiveness: 'assertive',
};

const meanDeviation = (measured: Sliders, target: Sliders) =>
  SLIDER_NAMES.reduce((sum, name) => sum + Math.abs(measured[name] - target[name]), 0) / SLIDER_NAMES.length;

export function checkText(
  text: string,
  target: Sliders,
  options: { bannedMatches: number; maxSuggestions: number },
): CheckResult {
  const m = measure(text);
  const measured = slidersFrom(m);
  const sliders = Object.fromEntries(
    SLIDER_NAMES.map((name) => [
      name,
      { target: target[name], measured: measured[name], deviation: measured[name] - target[name] },
    ]),
  ) as Record<SliderName, SliderDeviation>;
  if (m.word_count === 0) return { score: 0, rating: 'off_voice', word_count: 0, sliders, suggestions: [] };
  const score = Math.max(
    0,
    Math.min(
      100,
      Math.round(100 - DEVIATION_PENALTY * meanDeviation(measured, target) - BANNED_PENALTY * options.bannedMatches),
    ),
  );
  const rating = score >= 80 ? 'on_voice' : score >= 60 ? 'close' : 'off_voice';
  return {
    score,
    rating,
    word_count: m.word_count,
    sliders,
    suggestions: suggestionsFor(text, target, options.maxSuggestions),
  };
}

/** The most off-voice sentences, each rewritten toward the voice; in order of position, never overlapping. */
function suggestionsFor(text: string, target: Sliders, max: number): Suggestion[] {
  if (max <= 0) return [];
  // Offsets count code points (an emoji is two UTF-16 units but one code point); sentence bounds never split a pair.
  const toCodePoint = (utf16: number) => Array.from(text.slice(0, utf16)).length;
  const ranked = sentenceSpans(text)
    .map((span) => {
      const own = slidersFrom(measure(span.text));
      const slider = SLIDER_NAMES.reduce((worst, name) =>
        Math.abs(own[name] - target[name]) > Math.abs(own[worst] - target[worst]) ? name : worst,
      );
      return { span, own, slider, deviation: meanDeviation(own, target) };
    })
    .filter((c) => c.deviation >= SENTENCE_DEVIATION)
    .sort((a, b) => b.deviation - a.deviation || a.span.start - b.span.start);
  const suggestions: Suggestion[] = [];
  for (const { span, own, slider } of ranked) {
    if (suggestions.length >= max) break;
    const replacement = rewriteToward(span.text, target);
    if (replacement === span.text) continue; // nothing the rules can do: not a useful suggestion
    const direction = own[slider] > target[slider] ? 'More' : 'Less';
    suggestions.push({
      start: toCodePoint(span.start),
      end: toCodePoint(span.end),
      original: span.text,
      replacement,
      reason: `${direction} ${ADJECTIVES[slider]} than the voice (${slider} ${own[slider]}, target ${target[slider]}).`,
      slider,
    });
  }
  return suggestions.sort((a, b) => a.start - b.start);
}

// What a ready voice tells the model: its style summary, traits, slider targets, banned phrases and a few sentences
// of the sample as reference. The sandbox models get the sliders themselves (middleware.ts), not this text.
import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.ts';
import { style } from '../engine/index.ts';
import { effectiveSliders, type Sliders } from './presenters.ts';
import { readyVoice } from './voices.ts';

const SLIDER_LINE = 'Slider targets (0-100): ';

const SLIDER_WORDS: Record<keyof Sliders, [low: string, high: string]> = {
  formality: ['casual and conversational, with contractions', 'formal, without contractions or slang'],
  warmth: ['neutral and detached', 'warm and personal, speaking to the reader as "you"'],
  humor: ['serious', 'playful, with light humour'],
  enthusiasm: ['calm and understated, no exclamation marks', 'energetic, with the odd exclamation mark'],
  conciseness: ['expansive, with detail', 'terse: short sentences, no filler'],
  complexity: ['plain everyday words', 'precise technical vocabulary and longer sentences'],
  assertiveness: ['tentative and hedged', 'direct and confident, no hedging'],
};

export function voiceInstructions(voice: {
  name: string;
  style_summary: string | null;
  traits: string[];
  sliders: Sliders;
  banned_phrases: string[];
  sample_text: string;
}): string {
  const lean = (Object.keys(SLIDER_WORDS) as (keyof Sliders)[])
    .filter((name) => Math.abs(voice.sliders[name] - 50) >= 15)
    .map((name) => SLIDER_WORDS[name][voice.sliders[name] < 50 ? 0 : 1]);
  // A few whole sentences of the sample: enough to show the rhythm, not so many that the model copies them.
  const reference = (voice.sample_text.match(/(?<![^.!?])[^.!?]+[.!?]+/g) ?? [voice.sample_text])
    .slice(0, 3)
    .join(' ')
    .trim()
    .slice(0, 600);
  return [
    `Write in the brand voice "${voice.name}".`,
    voice.style_summary ? `Style: ${voice.style_summary}` : null,
    voice.traits.length > 0 ? `Traits: ${voice.traits.join('; ')}.` : null,
    lean.length > 0 ? `Be ${lean.join('; ')}.` : null,
    `${SLIDER_LINE}${style.SLIDER_NAMES.map((name) => `${name} ${voice.sliders[name]}`).join(', ')}`,
    voice.banned_phrases.length > 0
      ? `Never use these phrases: ${voice.banned_phrases.map((p) => `"${p}"`).join(', ')}.`
      : null,
    `Reference sentences of the voice: ${reference}`,
  ]
    .filter((line): line is string => line !== null)
    .join('\n');
}

/** A voice as the engine applies it: its instructions for the model, its sliders, and what the output policy needs. */
export interface AppliedVoice {
  id: string;
  name: string;
  banned_phrases: string[];
  instructions: string;
  sliders: Sliders;
}

/** The ready voice `voiceId` of the workspace, named by the request's `voice_id` (404 or 409 voice_not_ready else). */
export async function appliedVoice(db: Kysely<Database>, workspaceId: string, voiceId: string): Promise<AppliedVoice> {
  const row = await readyVoice(db, workspaceId, voiceId, '/voice_id');
  const banned = JSON.parse(row.banned_phrases) as string[];
  const sliders = effectiveSliders(row)!;
  const instructions = voiceInstructions({
    name: row.name,
    style_summary: row.style_summary,
    traits: JSON.parse(row.traits) as string[],
    sliders,
    banned_phrases: banned,
    sample_text: row.sample_text,
  });
  return { id: row.id, name: row.name, banned_phrases: banned, instructions, sliders };
}

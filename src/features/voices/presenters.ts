// Voice rows as the API shows them, and the effective sliders (inferred, with the user's overrides applied).
import type { Selectable } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { VoicesTable } from './schema.ts';

type Schemas = components['schemas'];
export type Sliders = Schemas['VoiceSliders'];
export type SliderOverrides = Schemas['VoiceSliderOverrides'];

/** The inferred sliders with the overrides applied; null before the first training. */
export function effectiveSliders(
  row: Pick<Selectable<VoicesTable>, 'inferred_sliders' | 'slider_overrides'>,
): Sliders | null {
  if (row.inferred_sliders === null) return null;
  const overrides = JSON.parse(row.slider_overrides) as SliderOverrides;
  const sliders = { ...(JSON.parse(row.inferred_sliders) as Sliders) };
  for (const [name, value] of Object.entries(overrides))
    if (typeof value === 'number') sliders[name as keyof Sliders] = value;
  return sliders;
}

export function presentVoice(row: Selectable<VoicesTable>): Schemas['Voice'] {
  return {
    id: row.id,
    object: 'voice',
    name: row.name,
    description: row.description,
    status: row.status,
    failure_reason: row.failure_reason as Schemas['VoiceFailureReason'] | null,
    failure_message: row.failure_message,
    sample_text: row.sample_text,
    sample_word_count: row.sample_word_count,
    language: row.language,
    sliders: effectiveSliders(row),
    inferred_sliders: row.inferred_sliders === null ? null : (JSON.parse(row.inferred_sliders) as Sliders),
    slider_overrides: JSON.parse(row.slider_overrides) as SliderOverrides,
    banned_phrases: JSON.parse(row.banned_phrases) as string[],
    traits: JSON.parse(row.traits) as string[],
    style_summary: row.style_summary,
    trained_at: row.trained_at,
    metadata: JSON.parse(row.metadata) as Schemas['Metadata'],
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

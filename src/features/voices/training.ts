// The `voices.train` job: measures the sample (style.ts), infers the sliders, traits and summary, and ends the
// training in `ready` (event voice.trained) or `failed` (event voice.training_failed) with a reason a user can act
// on. The summary and traits are derived from the measurements; with VOICE_TRAINING_MODEL set, that model writes them
// from the sample and the measurements instead (through the engine, billed to the workspace as `voices`), and a
// provider's failure falls back to the derived ones rather than failing the training. It runs at least once per training: a job for a sample that has since been replaced, or for a voice deleted
// meanwhile, finds no voice with its training_id and ends without writing anything or emitting an event.
import type { JSONSchema7 } from '@ai-sdk/provider';
import { ConfigError } from '../../config.ts';
import { iso } from '../../platform/clock.ts';
import type { WorkerServices } from '../../platform/feature.ts';
import type { JobDefinitions } from '../../platform/jobs/runner.ts';
import { forUpdate } from '../../storage/locks.ts';
import { type Catalogue, type Engine, style } from '../engine/index.ts';
import { recordEvent } from '../webhooks/index.ts';
import { effectiveSliders } from './presenters.ts';

/** The summary and traits a model writes, as JSON of this schema. */
const DESCRIPTION_SCHEMA: JSONSchema7 = {
  type: 'object',
  properties: {
    style_summary: { type: 'string', maxLength: 1000 },
    traits: { type: 'array', maxItems: 12, items: { type: 'string', maxLength: 60 } },
  },
  required: ['style_summary', 'traits'],
  additionalProperties: false,
};

type Description = { style_summary: string; traits: string[] };

/** The model's summary and traits of a sample, or null when it failed or answered something else. */
async function modelDescription(
  engine: Engine,
  model: string,
  workspaceId: string,
  sample: string,
  measurements: style.Measurements,
  sliders: style.Sliders,
  now: Date,
  signal: AbortSignal,
): Promise<Description | null> {
  const generated = await engine.generate({
    workspaceId,
    apiKeyId: null,
    feature: 'voices',
    model,
    messages: [
      {
        role: 'system',
        content:
          'You describe the writing style of a brand from a sample of its copy, for a writer who must imitate it. Answer JSON: style_summary (2 to 4 sentences, under 1000 characters, about tone, rhythm, person and word choice, not the topic) and traits (up to 12 short phrases, most characteristic first, each under 60 characters).',
      },
      {
        role: 'user',
        content: `Measurements: ${JSON.stringify(measurements)}
Sliders (0-100): ${JSON.stringify(sliders)}

Sample:
${sample}`,
      },
    ],
    maxOutputTokens: 800,
    responseFormat: { type: 'json', schema: DESCRIPTION_SCHEMA, name: 'voice_description' },
    signal,
    now,
  });
  const parsed = JSON.parse(generated.choices[0]!.text) as Partial<Description>;
  if (typeof parsed.style_summary !== 'string' || !Array.isArray(parsed.traits)) return null;
  return {
    style_summary: parsed.style_summary.trim().slice(0, 1000),
    traits: parsed.traits
      .filter((t): t is string => typeof t === 'string' && t.trim() !== '')
      .map((t) => t.trim().slice(0, 60))
      .slice(0, 12),
  };
}

/** VOICE_TRAINING_MODEL must be an available model of the catalogue other than the sandbox's (or unset). */
export function checkVoiceTrainingModel(catalogue: Catalogue, id: string | null): void {
  if (!id) return;
  const model = catalogue.get(id);
  if (!model)
    throw new ConfigError(`VOICE_TRAINING_MODEL: no model ${id} in the catalogue (GET /v1/models lists them)`);
  if (!catalogue.available(model))
    throw new ConfigError(
      `VOICE_TRAINING_MODEL: ${id} is served by ${model.provider}, which is not configured: set ${catalogue.enablingVariable(model)}`,
    );
  if (model.provider === 'sandbox')
    throw new ConfigError(
      'VOICE_TRAINING_MODEL: the sandbox models do not write summaries; leave it unset to derive them from the measurements',
    );
}

export function voiceJobs(services: WorkerServices): JobDefinitions {
  const model = services.config.voiceTrainingModel;
  const engine = model ? services.engine : null;
  return {
    'voices.train': {
      async run(job) {
        const { voice_id: voiceId, training_id: trainingId } = job.payload as { voice_id: string; training_id: string };
        const sample = await job.db
          .selectFrom('voices')
          .select(['sample_text'])
          .where('id', '=', voiceId)
          .where('training_id', '=', trainingId)
          .executeTakeFirst();
        if (!sample) return;
        const measurements = style.measure(sample.sample_text);
        const verdict = style.trainingVerdict(measurements);
        const sliders = style.slidersFrom(measurements);
        let description: Description = {
          style_summary: style.summaryFrom(measurements, sliders),
          traits: style.traitsFrom(measurements, sliders),
        };
        if (verdict.ok && engine && model && job.workspaceId) {
          try {
            description =
              (await modelDescription(
                engine,
                model,
                job.workspaceId,
                sample.sample_text,
                measurements,
                sliders,
                job.clock.now(),
                job.signal,
              )) ?? description;
          } catch (error) {
            job.logger.warn(
              { err: error, voice_id: voiceId, model },
              'the training model did not describe the voice; the summary and traits are derived from the measurements',
            );
          }
        }
        const now = job.clock.now();
        await job.db.transaction().execute(async (trx) => {
          const voice = await forUpdate(
            trx.selectFrom('voices').selectAll().where('id', '=', voiceId).where('training_id', '=', trainingId),
            trx,
          ).executeTakeFirst();
          if (voice?.status !== 'training') return; // replaced, deleted, or already ended by an earlier attempt
          if (!verdict.ok) {
            await trx
              .updateTable('voices')
              .set({
                status: 'failed',
                failure_reason: verdict.reason,
                failure_message: verdict.message,
                updated_at: iso(now),
              })
              .where('id', '=', voiceId)
              .execute();
            await recordEvent(
              trx,
              voice.workspace_id,
              'voice.training_failed',
              {
                voice_id: voiceId,
                failure_reason: verdict.reason,
                failure_message: verdict.message,
                sample_word_count: voice.sample_word_count,
                name: voice.name,
              },
              now,
            );
            return;
          }
          const trained = {
            status: 'ready' as const,
            failure_reason: null,
            failure_message: null,
            language: measurements.language,
            inferred_sliders: JSON.stringify(sliders),
            traits: JSON.stringify(description.traits),
            style_summary: description.style_summary,
            trained_at: iso(now),
            updated_at: iso(now),
          };
          await trx.updateTable('voices').set(trained).where('id', '=', voiceId).execute();
          await recordEvent(
            trx,
            voice.workspace_id,
            'voice.trained',
            {
              voice_id: voiceId,
              sample_word_count: voice.sample_word_count,
              sliders: effectiveSliders({
                inferred_sliders: trained.inferred_sliders,
                slider_overrides: voice.slider_overrides,
              })!,
              banned_phrases: JSON.parse(voice.banned_phrases) as string[],
              name: voice.name,
              language: measurements.language!,
              trained_at: trained.trained_at,
            },
            now,
          );
        });
      },
    },
  };
}

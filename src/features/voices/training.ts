// The `voices.train` job: measures the sample (style.ts), infers the sliders, traits and summary, and ends the
// training in `ready` (event voice.trained) or `failed` (event voice.training_failed) with a reason a user can act
// on. It runs at least once per training: a job for a sample that has since been replaced, or for a voice deleted
// meanwhile, finds no voice with its training_id and ends without writing anything or emitting an event.
import { iso } from '../../platform/clock.ts';
import type { JobDefinitions } from '../../platform/jobs/runner.ts';
import { forUpdate } from '../../storage/locks.ts';
import { recordEvent } from '../webhooks/record-event.ts';
import { effectiveSliders } from './presenters.ts';
import { measure, slidersFrom, summaryFrom, traitsFrom, trainingVerdict } from './style.ts';

export const voiceJobs: JobDefinitions = {
  'voices.train': {
    async run(job) {
      const { voice_id: voiceId, training_id: trainingId } = job.payload as { voice_id: string; training_id: string };
      const sample = await job.db.selectFrom('voices').select(['sample_text']).where('id', '=', voiceId).where('training_id', '=', trainingId).executeTakeFirst();
      if (!sample) return;
      const measurements = measure(sample.sample_text);
      const verdict = trainingVerdict(measurements);
      const now = job.clock.now();
      await job.db.transaction().execute(async (trx) => {
        const voice = await forUpdate(trx.selectFrom('voices').selectAll().where('id', '=', voiceId).where('training_id', '=', trainingId), trx).executeTakeFirst();
        if (!voice || voice.status !== 'training') return; // replaced, deleted, or already ended by an earlier attempt
        if (!verdict.ok) {
          await trx.updateTable('voices').set({ status: 'failed', failure_reason: verdict.reason, failure_message: verdict.message, updated_at: iso(now) }).where('id', '=', voiceId).execute();
          await recordEvent(trx, voice.workspace_id, 'voice.training_failed', { voice_id: voiceId, failure_reason: verdict.reason, failure_message: verdict.message, sample_word_count: voice.sample_word_count, name: voice.name }, now);
          return;
        }
        const sliders = slidersFrom(measurements);
        const trained = {
          status: 'ready' as const,
          failure_reason: null,
          failure_message: null,
          language: measurements.language,
          inferred_sliders: JSON.stringify(sliders),
          traits: JSON.stringify(traitsFrom(measurements, sliders)),
          style_summary: summaryFrom(measurements, sliders),
          measurements: JSON.stringify(measurements),
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
            sliders: effectiveSliders({ inferred_sliders: trained.inferred_sliders, slider_overrides: voice.slider_overrides })!,
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

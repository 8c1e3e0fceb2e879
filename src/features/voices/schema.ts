// The voices feature's table, merged into the platform's Database interface (see src/features/projects/schema.ts).
declare module '../../storage/schema.ts' {
  interface Database {
    voices: VoicesTable;
  }
}

declare module '../../platform/jobs/runner.ts' {
  interface JobPayloads {
    /** Trains a voice from the sample of the training `training_id`; a newer sample makes this job a no-op. */
    'voices.train': { voice_id: string; training_id: string };
  }
}

export interface VoicesTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  status: 'training' | 'ready' | 'failed';
  failure_reason: string | null;
  failure_message: string | null;
  sample_text: string;
  sample_word_count: number;
  /** The training that is current: each new sample gets a new one, so a job for an older sample knows to stop. */
  training_id: string;
  language: string | null;
  /** JSON: the Sliders inferred by the last successful training, or null. */
  inferred_sliders: string | null;
  /** JSON: the overrides set by the user, `{}` when none. */
  slider_overrides: string;
  /** JSON array of strings. */
  banned_phrases: string;
  /** JSON array of strings. */
  traits: string;
  style_summary: string | null;
  trained_at: string | null;
  /** JSON object. */
  metadata: string;
  created_at: string;
  updated_at: string;
}

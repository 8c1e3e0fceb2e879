// Brand voices: a sample, what training learned from it, and the user's overrides and banned phrases.
import type { Kysely, Migration } from 'kysely';

export const voices: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('voices')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('failure_reason', 'text')
      .addColumn('failure_message', 'text')
      .addColumn('sample_text', 'text', (c) => c.notNull())
      .addColumn('sample_word_count', 'integer', (c) => c.notNull())
      .addColumn('training_id', 'text', (c) => c.notNull())
      .addColumn('language', 'text')
      .addColumn('inferred_sliders', 'text')
      .addColumn('slider_overrides', 'text', (c) => c.notNull())
      .addColumn('banned_phrases', 'text', (c) => c.notNull())
      .addColumn('traits', 'text', (c) => c.notNull())
      .addColumn('style_summary', 'text')
      .addColumn('trained_at', 'text')
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('voices_workspace').on('voices').columns(['workspace_id', 'id']).execute();
  },
};

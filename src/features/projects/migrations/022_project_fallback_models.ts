// A project's default fallback models (a JSON array of catalogue ids, `[]` for none): tried by the chat completions
// and responses that name the project and no `models` of their own.
import { type Kysely, type Migration, sql } from 'kysely';

export const projectFallbackModels: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('projects')
      .addColumn('fallback_models', 'text', (c) => c.notNull().defaultTo(sql`'[]'`))
      .execute();
  },
};

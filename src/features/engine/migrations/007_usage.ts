// The usage records of the content engine: one row per model call, summed by GET /v1/usage. Kept as long as the
// workspace (they are its billing history); deleting the workspace deletes them.
import type { Kysely, Migration } from 'kysely';

export const usage: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('usage_records')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('api_key_id', 'text')
      .addColumn('model', 'text', (c) => c.notNull())
      .addColumn('feature', 'text', (c) => c.notNull())
      .addColumn('day', 'text', (c) => c.notNull())
      .addColumn('input_tokens', 'bigint', (c) => c.notNull())
      .addColumn('cached_input_tokens', 'bigint', (c) => c.notNull())
      .addColumn('output_tokens', 'bigint', (c) => c.notNull())
      .addColumn('cost_usd', 'double precision', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('usage_records_workspace_day')
      .on('usage_records')
      .columns(['workspace_id', 'day'])
      .execute();
  },
};

// The platform's leased jobs (src/platform/jobs/runner.ts): background work of any feature, driven from this table.
// The platform's and the features' migrations share one numbered sequence, run in name order; this one takes the
// number after the features' 003_key_users and 004_projects.
import { type Kysely, type Migration, sql } from 'kysely';

export const jobs: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('jobs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('workspace_id', 'text', (c) => c.references('workspaces.id').onDelete('cascade'))
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('max_attempts', 'integer', (c) => c.notNull())
      .addColumn('run_at', 'text', (c) => c.notNull())
      .addColumn('leased_until', 'text')
      .addColumn('lease_token', 'text')
      .addColumn('last_error', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('finished_at', 'text')
      .execute();
    // The runner's hot lookup (what is due) stays small however long the history.
    await db.schema
      .createIndex('jobs_due')
      .on('jobs')
      .column('run_at')
      .where(sql.ref('status'), '=', 'pending')
      .execute();
    await db.schema.createIndex('jobs_finished').on('jobs').column('finished_at').execute();
  },
};

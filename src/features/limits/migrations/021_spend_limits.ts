// Spend limits, the reservations of the calls in flight under them, and the record of the events sent per period.
// The spend of a project is counted from the usage records' `project_id`, which the engine's migration
// 026_usage_records_project adds with the indexes that let the check of every call sum one scope's records of one
// period. (Databases migrated before it got that column and those indexes from this migration.)
import type { Kysely, Migration } from 'kysely';

export const spendLimits: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('spend_limits')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('scope_type', 'text', (c) => c.notNull())
      .addColumn('scope_id', 'text', (c) => c.notNull())
      .addColumn('amount_usd', 'double precision', (c) => c.notNull())
      .addColumn('period', 'text', (c) => c.notNull())
      .addColumn('soft_threshold', 'double precision')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('spend_limits_workspace').on('spend_limits').columns(['workspace_id', 'id']).execute();
    await db.schema
      .createIndex('spend_limits_scope_period')
      .on('spend_limits')
      .columns(['scope_type', 'scope_id', 'period'])
      .unique()
      .execute();

    await db.schema
      .createTable('spend_reservations')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('api_key_id', 'text')
      .addColumn('project_id', 'text')
      .addColumn('amount_usd', 'double precision', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('spend_reservations_workspace')
      .on('spend_reservations')
      .columns(['workspace_id', 'expires_at'])
      .execute();

    await db.schema
      .createTable('spend_limit_notices')
      .addColumn('spend_limit_id', 'text', (c) => c.notNull().references('spend_limits.id').onDelete('cascade'))
      .addColumn('period_start', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('spend_limit_notices_pk', ['spend_limit_id', 'period_start', 'kind'])
      .execute();
  },
};

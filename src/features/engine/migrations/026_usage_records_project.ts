// The project a model call was made for (`project_id`, null for calls of no project and for every call recorded
// before), and the indexes that let a spend limit's check sum one key's or one project's records of one period.
//
// Databases migrated before this migration existed got the same column and indexes from the limits feature's
// 021_spend_limits; there this migration finds them and changes nothing.
import { type Kysely, type Migration, SqliteAdapter, sql } from 'kysely';

/** Whether usage_records has project_id already, in the schema the connection resolves unqualified names in. */
async function hasProjectColumn(db: Kysely<unknown>): Promise<boolean> {
  const { rows } =
    db.getExecutor().adapter instanceof SqliteAdapter
      ? await sql<{ n: number }>`select count(*) as n from pragma_table_info('usage_records')
          where name = 'project_id'`.execute(db)
      : await sql<{ n: number | string }>`select count(*) as n from information_schema.columns
          where table_schema = current_schema() and table_name = 'usage_records' and column_name = 'project_id'`.execute(
          db,
        );
  return Number(rows[0]?.n) > 0;
}

export const usageRecordsProject: Migration = {
  async up(db: Kysely<unknown>) {
    if (!(await hasProjectColumn(db)))
      await db.schema.alterTable('usage_records').addColumn('project_id', 'text').execute();
    await db.schema
      .createIndex('usage_records_key_day')
      .ifNotExists()
      .on('usage_records')
      .columns(['api_key_id', 'day'])
      .execute();
    await db.schema
      .createIndex('usage_records_project_day')
      .ifNotExists()
      .on('usage_records')
      .columns(['project_id', 'day'])
      .execute();
  },
};

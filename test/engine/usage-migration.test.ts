// The usage records' project column and its indexes belong to the engine's migrations (026_usage_records_project):
// a new database gets them there, and a database migrated by the code before it, whose 021_spend_limits added them,
// migrates cleanly to the same tables.
import { type Kysely, type Migration, Migrator, sql } from 'kysely';
import { describe, expect, test } from 'vitest';
import { features } from '../../src/features/index.ts';
import { allMigrations, migrate, openStorage } from '../../src/storage/database.ts';
import { databaseKinds, freshDatabase } from '../support/server.ts';

/** What 021_spend_limits did to usage_records before the engine's migration took it over, as it was then. */
async function oldSpendLimitsUsagePart(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('usage_records').addColumn('project_id', 'text').execute();
  await db.schema.createIndex('usage_records_key_day').on('usage_records').columns(['api_key_id', 'day']).execute();
  await db.schema.createIndex('usage_records_project_day').on('usage_records').columns(['project_id', 'day']).execute();
}

/** The migrations as the code before 026 had them. */
function oldMigrations(): Record<string, Migration> {
  const { '026_usage_records_project': _new, ...before } = allMigrations(features);
  const spendLimits = before['021_spend_limits']!;
  return {
    ...before,
    '021_spend_limits': {
      async up(db) {
        await spendLimits.up(db);
        await oldSpendLimitsUsagePart(db);
      },
    },
  };
}

// biome-ignore lint/suspicious/noExplicitAny: the tables as the migrations made them
async function usageIndexes(db: Kysely<any>, kind: string): Promise<string[]> {
  const { rows } =
    kind === 'sqlite'
      ? await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'usage_records'
          and name like 'usage_records_%'`.execute(db)
      : await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'usage_records'
          and indexname like 'usage_records_%' and indexname <> 'usage_records_pkey'`.execute(db);
  return rows.map((row) => row.name).sort();
}

// biome-ignore lint/suspicious/noExplicitAny: the tables as the migrations made them
async function recordWithProject(db: Kysely<any>): Promise<unknown> {
  const now = new Date().toISOString();
  await db
    .insertInto('workspaces')
    .values({ id: 'ws_1', name: 'W', region: 'eu', created_at: now, updated_at: now, event_sequence: 0 })
    .execute();
  await db
    .insertInto('usage_records')
    .values({
      id: 'use_1',
      workspace_id: 'ws_1',
      api_key_id: null,
      project_id: 'prj_1',
      model: 'sandbox-writer',
      feature: 'chat',
      day: now.slice(0, 10),
      input_tokens: 1,
      cached_input_tokens: 0,
      output_tokens: 1,
      cost_usd: 0,
      created_at: now,
    })
    .execute();
  return (await db.selectFrom('usage_records').select('project_id').executeTakeFirstOrThrow()).project_id;
}

const INDEXES = ['usage_records_key_day', 'usage_records_project_day', 'usage_records_workspace_day'];

describe.each(databaseKinds)('the usage records migrations on %s', (kind) => {
  test('a new database gets the project column and its indexes from the engine', async () => {
    const database = await freshDatabase(kind);
    const storage = openStorage(database.url);
    try {
      const applied = await migrate(storage.db, features);
      expect(applied.indexOf('026_usage_records_project')).toBeGreaterThan(applied.indexOf('021_spend_limits'));
      expect(await usageIndexes(storage.db, kind)).toEqual(INDEXES);
      expect(await recordWithProject(storage.db)).toBe('prj_1');
    } finally {
      await storage.close();
      await database.drop();
    }
  });

  test('a database migrated by the code before (021 added them) migrates cleanly, and keeps its records', async () => {
    const database = await freshDatabase(kind);
    const storage = openStorage(database.url);
    try {
      const old = await new Migrator({
        db: storage.db,
        provider: { getMigrations: async () => oldMigrations() },
      }).migrateToLatest();
      expect(old.error).toBeUndefined();
      expect(await recordWithProject(storage.db)).toBe('prj_1');
      expect(await migrate(storage.db, features)).toEqual(['026_usage_records_project']);
      expect(await usageIndexes(storage.db, kind)).toEqual(INDEXES);
      expect(await storage.db.selectFrom('usage_records').select('project_id').execute()).toEqual([
        { project_id: 'prj_1' },
      ]);
    } finally {
      await storage.close();
      await database.drop();
    }
  });
});

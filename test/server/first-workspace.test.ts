// The demo workspace of `npm start` (createFirstWorkspace): servers that seed a new database at once make one.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { features } from '../../src/features/index.ts';
import { createFirstWorkspace } from '../../src/features/workspace/index.ts';
import { migrate, openStorage } from '../../src/storage/database.ts';
import { freshDatabase, postgresUrl, type TestDatabase } from '../support/server.ts';

const input = { name: 'Demo workspace', region: 'eu' as const, ownerEmail: 'owner@demo.example' };

describe.runIf(postgresUrl)('createFirstWorkspace on PostgreSQL', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await freshDatabase('postgres');
    const storage = openStorage(database.url);
    await migrate(storage.db, features);
    await storage.close();
  });
  afterAll(async () => database?.drop());

  test('two seeders that both found no workspace make one between them', async () => {
    // A transaction of the test holds writes to the table while both seeders pass their check (a read) and wait for
    // the lock; it lets them go once both wait.
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    const storages = [openStorage(database.url), openStorage(database.url)];
    try {
      await holder.query('begin');
      await holder.query('lock table workspaces in exclusive mode');
      const seeds = storages.map((storage) => createFirstWorkspace(storage.db, input));
      for (let waiting = 0, tries = 0; waiting < 2; tries++) {
        if (tries > 500) throw new Error('the seeders never waited for the lock');
        await new Promise((resolve) => setTimeout(resolve, 10));
        const { rows } = await holder.query(
          "select count(*)::int as n from pg_locks where relation = 'workspaces'::regclass and not granted",
        );
        waiting = rows[0].n;
      }
      await holder.query('commit');
      const made = await Promise.all(seeds);
      expect(made.filter((workspace) => workspace !== undefined)).toHaveLength(1);
      const { rows } = await holder.query('select count(*)::int as n from workspaces');
      expect(rows[0].n).toBe(1);
      // Every later start finds it.
      expect(await createFirstWorkspace(storages[0]!.db, input)).toBeUndefined();
    } finally {
      await holder.end();
      for (const storage of storages) await storage.close();
    }
  });
});

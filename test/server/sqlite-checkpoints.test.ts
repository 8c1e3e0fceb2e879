// SQLite's write-ahead log is checkpointed by a thread of the process, not by the commit that makes it long (which
// runs on the event loop): the server's connection never checkpoints on commit, the thread copies what was written
// into the database file, and closing a storage lets the thread's connection to its file go.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, test } from 'vitest';
import { openStorage } from '../../src/storage/database.ts';
import { startCheckpoints } from '../../src/storage/sqlite-checkpoints.ts';
import { eventually } from '../support/expect.ts';

describe("SQLite's checkpoints", () => {
  const directory = mkdtempSync(join(tmpdir(), 'checkpoints-'));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  test("the server's connection leaves the log to the thread, which copies it into the database file", async () => {
    const file = join(directory, 'server.sqlite');
    const storage = openStorage(`sqlite:${file}`);
    try {
      const { rows } = await sql<{ wal_autocheckpoint: number }>`PRAGMA wal_autocheckpoint`.execute(storage.db);
      expect(rows[0]?.wal_autocheckpoint).toBe(0);
      await sql`CREATE TABLE pages (body TEXT)`.execute(storage.db);
      // 8 MB, far past the 1,000 pages (4 MB) at which a commit would checkpoint the log itself.
      for (let n = 0; n < 16; n++)
        await sql`INSERT INTO pages (body) VALUES (${`${n}`.padEnd(512 * 1024, 'x')})`.execute(storage.db);
      await eventually(
        async () => statSync(file).size,
        (size) => size > 8 * 1024 * 1024,
        15_000,
      );
      const { rows: counted } = await sql<{ n: number }>`SELECT count(*) AS n FROM pages`.execute(storage.db);
      expect(counted[0]?.n).toBe(16);
    } finally {
      await storage.close();
    }
  });

  test('stopping answers once the file is let go; a file the thread cannot open does not fail the process', async () => {
    await startCheckpoints(join(directory, 'missing', 'nowhere.sqlite')).stop();
    const path = join(directory, 'shared.sqlite');
    const first = openStorage(`sqlite:${path}`);
    const second = openStorage(`sqlite:${path}`);
    await first.close();
    const { rows } = await sql<{ n: number }>`SELECT 1 AS n`.execute(second.db);
    expect(rows[0]?.n).toBe(1);
    await second.close();
  });
});

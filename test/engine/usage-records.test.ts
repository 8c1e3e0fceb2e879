// The usage rows of model calls on a real database: the calls that end in one turn of the event loop share a write,
// each call's rows are in the database when its recordUsage resolves, and a call whose row cannot be written (its
// workspace deleted meanwhile) costs no other call its rows. On SQLite and PostgreSQL.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Catalogue } from '../../src/features/engine/catalogue.ts';
import { loadProvidersConfig } from '../../src/features/engine/providers/registry.ts';
import { recordUsage, type UsageOwner } from '../../src/features/engine/usage-records.ts';
import { features } from '../../src/features/index.ts';
import { createWorkspace } from '../../src/features/workspace/index.ts';
import { Metrics } from '../../src/platform/metrics.ts';
import { migrate, openStorage, type Storage } from '../../src/storage/database.ts';
import { databaseKinds, freshDatabase, openPoolConnection, postgresUrl, type TestDatabase } from '../support/server.ts';

const catalogue = new Catalogue(
  loadProvidersConfig({ OPENAI_API_KEY: 'sk-test' }, (message) => {
    throw new Error(message);
  }),
);
const model = catalogue.get('gpt-4o-mini')!;
const usage = (outputTokens: number) => ({ inputTokens: 10, cachedInputTokens: 0, outputTokens });

describe.each(databaseKinds)('usage rows on %s', (kind) => {
  let database: TestDatabase;
  let storage: Storage;
  const logged: Array<{ msg: string; usage?: unknown }> = [];
  let services: Parameters<typeof recordUsage>[0];

  beforeAll(async () => {
    database = await freshDatabase(kind);
    storage = openStorage(database.url);
    await migrate(storage.db, features);
    const logger = pino(
      { level: 'error' },
      { write: (line: string) => void logged.push(JSON.parse(line) as { msg: string; usage?: unknown }) },
    );
    services = { db: storage.db, logger, metrics: new Metrics({ logger }) };
  });
  afterAll(async () => {
    await storage?.close();
    await database?.drop();
  });

  async function workspace(name: string) {
    return (await createWorkspace(storage.db, { name, region: 'eu' })).workspace.id;
  }

  const owner = (workspaceId: string, apiKeyId: string | null): UsageOwner => ({
    workspaceId,
    apiKeyId,
    feature: 'chat',
    now: new Date(),
  });

  const rowsOf = (workspaceId: string) =>
    storage.db
      .selectFrom('usage_records')
      .select(['api_key_id', 'output_tokens'])
      .where('workspace_id', '=', workspaceId)
      .orderBy('output_tokens')
      .execute();

  test('calls ending together: every call’s rows (a call of two choices, two rows) are written when it resolves', async () => {
    const workspaceId = await workspace('Together');
    const calls = Array.from({ length: 12 }, (_, i) =>
      recordUsage(services, model, owner(workspaceId, `key_${i}`), [{ usage: usage(i + 1), costUsd: 0.001 }]).then(
        async () => (await rowsOf(workspaceId)).some((row) => row.api_key_id === `key_${i}`),
      ),
    );
    const twoChoices = recordUsage(services, model, owner(workspaceId, null), [
      { usage: usage(100), costUsd: 0.002 },
      { usage: usage(101), costUsd: 0.002 },
    ]);
    expect(await Promise.all(calls)).toEqual(Array(12).fill(true));
    await twoChoices;
    const rows = await rowsOf(workspaceId);
    expect(rows.map((row) => Number(row.output_tokens))).toEqual([
      ...Array.from({ length: 12 }, (_, i) => i + 1),
      100,
      101,
    ]);
    // Calls of a later turn are written too.
    await recordUsage(services, model, owner(workspaceId, 'key_late'), [{ usage: usage(200), costUsd: 0.001 }]);
    expect((await rowsOf(workspaceId)).at(-1)).toMatchObject({ api_key_id: 'key_late' });
  });

  test('a call whose workspace is gone is logged with its row; the calls written with it keep theirs', async () => {
    const kept = await workspace('Kept');
    const gone = await workspace('Gone');
    await storage.db.deleteFrom('workspaces').where('id', '=', gone).execute();
    logged.length = 0;
    await Promise.all([
      recordUsage(services, model, owner(kept, 'key_a'), [{ usage: usage(1), costUsd: 0.001 }]),
      recordUsage(services, model, owner(gone, 'key_b'), [{ usage: usage(2), costUsd: 0.001 }]),
      recordUsage(services, model, owner(kept, 'key_c'), [{ usage: usage(3), costUsd: 0.001 }]),
    ]);
    expect((await rowsOf(kept)).map((row) => row.api_key_id)).toEqual(['key_a', 'key_c']);
    expect(await rowsOf(gone)).toEqual([]);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({
      msg: 'the usage of a model call could not be recorded',
      usage: [{ workspace_id: gone, api_key_id: 'key_b', output_tokens: 2 }],
    });
  });
});

describe.skipIf(!postgresUrl)('a usage row whose write finds no database connection (PostgreSQL)', () => {
  test('is written again once a connection is free, and the call waits for it', async () => {
    const database = await freshDatabase('postgres');
    const setup = openStorage(database.url);
    await migrate(setup.db, features);
    const { workspace } = await createWorkspace(setup.db, { name: 'Held connection', region: 'eu' });
    await setup.close();
    // One connection, and a query gives up waiting for it after 100 ms: the write below fails first.
    const storage = openStorage(database.url, { poolMax: 1, poolTimeoutMs: 100 });
    try {
      await openPoolConnection(storage);
      const logger = pino({ level: 'silent' });
      const services = { db: storage.db, logger, metrics: new Metrics({ logger }) };
      let release!: () => void;
      const held = storage.db.connection().execute(
        (connection) =>
          new Promise<void>((resolve) => {
            release = resolve;
            void connection.selectNoFrom((eb) => eb.lit(1).as('one')).execute();
          }),
      );
      setTimeout(() => release(), 400);
      await recordUsage(
        services,
        model,
        { workspaceId: workspace.id, apiKeyId: null, feature: 'chat', now: new Date() },
        [{ usage: usage(7), costUsd: 0.001 }],
      );
      await held;
      const rows = await storage.db
        .selectFrom('usage_records')
        .select('output_tokens')
        .where('workspace_id', '=', workspace.id)
        .execute();
      expect(rows.map((row) => Number(row.output_tokens))).toEqual([7]);
    } finally {
      await storage.close();
      await database.drop();
    }
  });
});

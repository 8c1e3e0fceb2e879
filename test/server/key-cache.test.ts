// The key cache (src/platform/key-cache.ts): a key that authenticated is remembered, and a change of it (revocation,
// a new role, its workspace) is seen at its very next request, on this server and on another server of the same
// database. The rest of the suite runs with the cache on too (its default), so every test of keys exercises it.
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { hashSecret } from '../../src/platform/auth.ts';
import { changesCallers } from '../../src/platform/key-cache.ts';
import type { Database } from '../../src/storage/schema.ts';
import { expectProblem } from '../support/expect.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';

describe('which statements change a caller', () => {
  // A database handle that only builds queries.
  const db = new Kysely<Database>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
  const changes = (query: { compile(): { query: unknown; sql: string } }) => changesCallers(query.compile() as never);

  test('a key revoked, rotated, renamed or deleted, a workspace renamed or deleted: yes', () => {
    expect(changes(db.updateTable('api_keys').set({ revoked_at: 'x', updated_at: 'x' }).where('id', '=', 'k'))).toBe(
      true,
    );
    expect(changes(db.updateTable('api_keys').set({ secret_hash: 'x' }))).toBe(true);
    expect(changes(db.updateTable('api_keys').set({ last_used_at: 'x', role: 'viewer' }))).toBe(true);
    expect(changes(db.deleteFrom('api_keys').where('id', '=', 'k'))).toBe(true);
    expect(changes(db.updateTable('workspaces').set({ name: 'x' }))).toBe(true);
    expect(changes(db.deleteFrom('workspaces'))).toBe(true);
    // Through an alias, an upsert, or SQL that Kysely did not build.
    expect(changes(db.updateTable('api_keys as k').set({ revoked_at: 'x' }))).toBe(true);
    expect(
      changes(
        db
          .insertInto('api_keys')
          .values({} as never)
          .onConflict((oc) => oc.column('id').doUpdateSet({ role: 'viewer' })),
      ),
    ).toBe(true);
    expect(
      changesCallers({
        query: sql`update api_keys set role = 'viewer'`.toOperationNode() as never,
        sql: "update api_keys set role = 'viewer'",
      }),
    ).toBe(true);
  });

  test("a key's last use, a workspace's event sequence, another table, a read or an insert: no", () => {
    expect(changes(db.updateTable('api_keys').set({ last_used_at: 'x' }))).toBe(false);
    expect(changes(db.updateTable('workspaces').set((eb) => ({ event_sequence: eb('event_sequence', '+', 1) })))).toBe(
      false,
    );
    expect(changes(db.updateTable('members').set({ role: 'viewer' }))).toBe(false);
    expect(changes(db.deleteFrom('members'))).toBe(false);
    expect(changes(db.selectFrom('api_keys').selectAll())).toBe(false);
    expect(changes(db.insertInto('api_keys').values({} as never))).toBe(false);
    expect(
      changesCallers({ query: sql`select 1 from api_keys`.toOperationNode() as never, sql: 'select 1 from api_keys' }),
    ).toBe(false);
  });
});

describe.each(databaseKinds)('the key cache on %s', (kind) => {
  let server: TestServer;
  /** A second server on the same database, whose cache would keep a key for a minute but for its changes. */
  let other: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ database: kind });
    other = await startTestServer({
      databaseUrl: server.database.url,
      workspace: false,
      env: { AUTH_CACHE_MS: '60000' },
    });
  });
  afterAll(async () => {
    await other?.close();
    await server?.close();
  });

  const remembered = (on: TestServer, secret: string) =>
    on.platform.keyCache.get(hashSecret(secret), process.hrtime.bigint()) !== undefined;

  /**
   * Uses the key until the server remembers it (bounded): after any write to the keys the cache stays unused for a
   * moment (HOLD_MS), and the test before this one may have written.
   */
  async function useUntilRemembered(on: TestServer, secret: string): Promise<void> {
    for (let i = 0; i < 100; i++) {
      expect((await on.call('GET', '/v1/workspace', { key: secret })).status).toBe(200);
      if (remembered(on, secret)) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(remembered(on, secret)).toBe(true);
  }

  /** Waits (bounded) until the server's cache has let go of the key: PostgreSQL's notification reaches it after the commit. */
  async function forgotten(on: TestServer, secret: string): Promise<void> {
    for (let i = 0; i < 200 && remembered(on, secret); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(remembered(on, secret)).toBe(false);
  }

  test('a key is remembered after it authenticated, and a revocation through the API ends it at its next request', async () => {
    const key = await server.createKey('editor');
    await useUntilRemembered(server, key.secret);
    expect((await server.call('DELETE', `/v1/api-keys/${key.id}`)).status).toBe(200);
    expectProblem(await server.call('GET', '/v1/workspace', { key: key.secret }), 401, 'unauthenticated');
  });

  test('a write to the key row through the database, not the API, is seen at the next request too', async () => {
    const key = await server.createKey('admin');
    await useUntilRemembered(server, key.secret);
    await server.platform.db.updateTable('api_keys').set({ role: 'viewer' }).where('id', '=', key.id).execute();
    expectProblem(
      await server.call('POST', '/v1/api-keys', { key: key.secret, body: { name: 'no', role: 'viewer' } }),
      403,
      'insufficient_role',
    );
  });

  test("a remembered key's last use is still recorded, to the minute", async () => {
    const key = await server.createKey('viewer');
    const minute = () => new Date(Math.floor(Date.now() / 60_000) * 60_000).toISOString();
    const before = minute();
    for (let i = 0; i < 3; i++)
      expect((await server.call('GET', '/v1/workspace', { key: key.secret })).status).toBe(200);
    const after = minute();
    // The write is not awaited by the request: wait (bounded) for it.
    let lastUsed: string | null = null;
    for (let i = 0; i < 100 && !lastUsed; i++) {
      lastUsed = (
        await server.platform.db
          .selectFrom('api_keys')
          .select('last_used_at')
          .where('id', '=', key.id)
          .executeTakeFirstOrThrow()
      ).last_used_at;
      if (!lastUsed) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect([before, after]).toContain(lastUsed);
  });

  test('a key revoked on one server is refused by another server of the same database that remembered it', async () => {
    const key = await server.createKey('editor');
    await useUntilRemembered(other, key.secret);
    expect((await server.call('DELETE', `/v1/api-keys/${key.id}`)).status).toBe(200);
    // SQLite: the other server sees the commit by data_version at its next lookup. PostgreSQL: by the notification of
    // the commit, which arrives on its own connection.
    if (kind === 'postgres') await forgotten(other, key.secret);
    expectProblem(await other.call('GET', '/v1/workspace', { key: key.secret }), 401, 'unauthenticated');
  });

  test('a rotation on one server: the other takes the new secret at once and ends the old one with its grace', async () => {
    const key = await server.createKey('editor');
    await useUntilRemembered(other, key.secret);
    const rotated = await server.call('POST', `/v1/api-keys/${key.id}/rotate`);
    expect(rotated.status).toBe(200);
    if (kind === 'postgres') await forgotten(other, key.secret);
    expect((await other.call('GET', '/v1/workspace', { key: rotated.body.secret })).status).toBe(200);
    // Still in its grace period: the old secret works.
    expect((await other.call('GET', '/v1/workspace', { key: key.secret })).status).toBe(200);
    // The grace period ends (here by a write of another process, as an operator's fix would).
    const outside = kind === 'postgres' ? new pg.Client({ connectionString: server.database.url }) : undefined;
    if (outside) {
      await outside.connect();
      await outside.query('update api_keys set previous_secret_expires_at = $1 where id = $2', [
        new Date(Date.now() - 1000).toISOString(),
        key.id,
      ]);
      await outside.end();
      await forgotten(other, key.secret);
    } else {
      await server.platform.db
        .updateTable('api_keys')
        .set({ previous_secret_expires_at: new Date(Date.now() - 1000).toISOString() })
        .where('id', '=', key.id)
        .execute();
    }
    expectProblem(await other.call('GET', '/v1/workspace', { key: key.secret }), 401, 'unauthenticated');
    expect((await other.call('GET', '/v1/workspace', { key: rotated.body.secret })).status).toBe(200);
  });

  test.runIf(kind === 'postgres')(
    'while a transaction that changes a key is open, the key is read from the database and not remembered',
    async () => {
      const key = await server.createKey('admin');
      await useUntilRemembered(server, key.secret);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let changed!: () => void;
      const written = new Promise<void>((resolve) => (changed = resolve));
      const transaction = server.platform.db.transaction().execute(async (trx) => {
        await trx.updateTable('api_keys').set({ role: 'viewer' }).where('id', '=', key.id).execute();
        changed();
        await held;
      });
      // The change is written (not committed) before the request: otherwise a busy machine may serve the request
      // from the cache before the transaction has even begun.
      await Promise.race([written, transaction]);
      try {
        // Uncommitted: the request reads the admin row on another connection, and must not keep it past the commit.
        expect((await server.call('GET', '/v1/api-keys', { key: key.secret })).status).toBe(200);
        expect(remembered(server, key.secret)).toBe(false);
      } finally {
        release();
        await transaction;
      }
      expectProblem(
        await server.call('POST', '/v1/api-keys', { key: key.secret, body: { name: 'no', role: 'viewer' } }),
        403,
        'insufficient_role',
      );
    },
  );
});

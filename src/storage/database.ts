// Opens the database named by DATABASE_URL: SQLite through node:sqlite (built into Node 24, no native build) or
// PostgreSQL through pg. Both are one Kysely<Database>; nothing above this file knows which.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import {
  type Dialect,
  Kysely,
  type LogEvent,
  type Migration,
  Migrator,
  PostgresDialect,
  SqliteAdapter,
  type SqliteDatabase,
  SqliteDialect,
  sql,
} from 'kysely';
import pg from 'pg';
import { platform } from './migrations/001_platform.ts';
import { jobs } from './migrations/005_jobs.ts';
import { keyChanges } from './migrations/016_key_changes.ts';
import { requestLogIndexes } from './migrations/020_request_log_index.ts';
import { servedAddresses } from './migrations/023_served_addresses.ts';
import type { Database } from './schema.ts';
import { startCheckpoints } from './sqlite-checkpoints.ts';

export { isConnectionError, isTransientError } from './errors.ts';

/** The databases this service runs on, named as in DATABASE_URL's scheme. */
export const databaseKinds = ['sqlite', 'postgres'] as const;
export type DatabaseKind = (typeof databaseKinds)[number];

export interface Storage {
  db: Kysely<Database>;
  kind: DatabaseKind;
  /** Resolves when the database answers a trivial query (GET /readyz). */
  ping(): Promise<void>;
  /** PostgreSQL: the connections of the pool now (SQLite has one connection and no pool). */
  pool?: () => { total: number; idle: number; waiting: number };
  /** SQLite: `PRAGMA data_version`, which changes when another connection (another process) commits. */
  dataVersion?: () => number;
  close(): Promise<void>;
}

/** What the migrations need of a feature: its name and its migrations (a Feature, or src/features/migrations.ts). */
export interface MigrationsOfFeature {
  name: string;
  migrations?: Record<string, Migration>;
}

/** The platform's own migrations; each feature brings its own (Feature.migrations). */
const platformMigrations = {
  '001_platform': platform,
  '005_jobs': jobs,
  '016_key_changes': keyChanges,
  '020_request_log_index': requestLogIndexes,
  '023_served_addresses': servedAddresses,
};

/**
 * Every migration, the platform's and the given features' (src/features/index.ts, or src/features/migrations.ts),
 * sorted by name: the order they run in. Names never change once released (databases record them); a new one takes
 * the next free number.
 */
export function allMigrations(features: readonly MigrationsOfFeature[]): Record<string, Migration> {
  return collectMigrations(platformMigrations, features);
}

/** Every migration of the platform and the features, sorted by name (the order they run in); a duplicate name throws. */
export function collectMigrations(
  platform: Record<string, Migration>,
  features: readonly MigrationsOfFeature[],
): Record<string, Migration> {
  const all: Record<string, Migration> = { ...platform };
  for (const feature of features) {
    for (const [name, migration] of Object.entries(feature.migrations ?? {})) {
      if (name in all) throw new Error(`migration ${name} of feature ${feature.name} is already defined`);
      all[name] = migration;
    }
  }
  return Object.fromEntries(Object.entries(all).sort(([a], [b]) => a.localeCompare(b)));
}

export interface StorageOptions {
  /** Told about an error of an idle PostgreSQL connection (server restart, connection killed); the pool replaces it. */
  onIdleError?: (error: Error) => void;
  /** PostgreSQL: the most connections of the pool (DATABASE_POOL_MAX). */
  poolMax?: number;
  /** PostgreSQL: how long a query waits for a connection before it fails with a connection error (DATABASE_POOL_TIMEOUT_MS). */
  poolTimeoutMs?: number;
  /** Wraps the dialect of the database handle (the key cache watches its writes: src/platform/key-cache.ts). */
  wrapDialect?: (dialect: Dialect) => Dialect;
  /**
   * The query logger of a database system, if any: Kysely calls it after every query (the traces' query spans,
   * src/platform/telemetry.ts `querySpans`, handed in by whoever opens the database).
   */
  queryLog?: (system: 'sqlite' | 'postgresql') => ((event: LogEvent) => void) | undefined;
}

/** Opens the database; every query is told to the query logger, if one is given (`queryLog`). */
export function openStorage(url: string, options: StorageOptions = {}): Storage {
  const wrap = options.wrapDialect ?? ((dialect: Dialect) => dialect);
  const log = (system: 'sqlite' | 'postgresql') => options.queryLog?.(system);
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    const database = openSqlite(path);
    const checkpoints = path === ':memory:' ? undefined : startCheckpoints(path);
    const db = new Kysely<Database>({ dialect: wrap(new SqliteDialect({ database })), log: log('sqlite') });
    const close = async () => {
      await checkpoints?.stop();
      await db.destroy();
    };
    return { db, kind: 'sqlite', ping: () => ping(db), close, dataVersion: database.dataVersion };
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolMax ?? 10,
    connectionTimeoutMillis: options.poolTimeoutMs ?? 5000,
  });
  // Without a listener, an error on an idle connection (PostgreSQL restarted, the connection terminated by an
  // administrator) is an unhandled 'error' event that kills the process. The pool drops that connection by itself.
  pool.on('error', (error) => options.onIdleError?.(error));
  // The pool listens only while a connection is idle in it. A connection checked out between two queries (a
  // transaction awaiting other work) that fails would emit an unheard 'error' and kill the process: each connection
  // gets a listener of its own for its whole life. Its next query fails (isConnectionError), and the pool drops it
  // when it is released, because it is no longer queryable.
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = new Kysely<Database>({ dialect: wrap(new PostgresDialect({ pool })), log: log('postgresql') });
  const close = async () => {
    // pool.end() resolves when it has asked its connections to end, not when they have: wait for each to be gone, so
    // that after close() nothing of ours is connected (dropping the database right after close() must not hit us).
    const open = pool.totalCount;
    let removed = 0;
    const gone = new Promise<void>((resolve) => {
      if (open === 0) resolve();
      pool.on('remove', () => {
        if (++removed >= open) resolve();
      });
    });
    await db.destroy();
    await gone;
  };
  const poolUse = () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount });
  return { db, kind: 'postgres', ping: () => ping(db), close, pool: poolUse };
}

/** Applies the pending migrations of the platform and of `features`; returns the names applied. */
export async function migrate(db: Kysely<Database>, features: readonly MigrationsOfFeature[]): Promise<string[]> {
  const migrations = allMigrations(features);
  const run = async (target: Kysely<Database>) => {
    const migrator = new Migrator({ db: target, provider: { getMigrations: async () => migrations } });
    const { error, results } = await migrator.migrateToLatest();
    if (error) throw error;
    return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  };
  // PostgreSQL: the Migrator takes an advisory lock, so processes starting together migrate one after the other.
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return run(db);
  // SQLite: Kysely's migration lock is a no-op and it runs migrations outside a transaction, so two processes starting
  // on one new file both ran 001 and the second died with "table workspaces already exists". One write transaction
  // around the whole migration is the lock: the second waits (busy_timeout), then finds nothing left to do.
  return db.connection().execute(async (connection) => {
    await sql`begin immediate`.execute(connection);
    try {
      const applied = await run(connection);
      await sql`commit`.execute(connection);
      return applied;
    } catch (error) {
      await sql`rollback`.execute(connection);
      throw error;
    }
  });
}

export async function ping(db: Kysely<Database>): Promise<void> {
  await sql`select 1`.execute(db);
}

// node:sqlite binds only null, numbers, bigints, strings and bytes; Kysely hands it booleans and undefined too.
function bindable(value: unknown): SQLInputValue {
  if (value === undefined) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof Date) return value.toISOString();
  return value as SQLInputValue;
}

/**
 * Two processes switching one new file to WAL at the same moment can deadlock on its locks; SQLite then answers one of
 * them "database is locked" at once, without waiting busy_timeout (two processes of the CI's test started together
 * did). The other one finishes its switch in a few milliseconds, so the loser tries again, for up to five seconds.
 */
function switchToWal(database: DatabaseSync): void {
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      database.exec('PRAGMA journal_mode = WAL;');
      return;
    } catch (error) {
      if (!/database is locked/.test(String((error as Error).message)) || Date.now() > deadline) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
}

/** Adapts node:sqlite's DatabaseSync to the interface Kysely's SqliteDialect expects (better-sqlite3's). */
function openSqlite(path: string): SqliteDatabase & { dataVersion: () => number } {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const database = new DatabaseSync(path);
  // WAL lets readers run beside the writer; busy_timeout lets several processes share one file.
  database.exec('PRAGMA busy_timeout = 5000;');
  switchToWal(database);
  // The log is checkpointed by a thread of its own (sqlite-checkpoints.ts), not by the commit that makes it long.
  database.exec('PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA wal_autocheckpoint = 0;');
  // Preparing costs more than running a small query; the server runs the same few statements over and over. Whether
  // a statement returns rows is kept with it: asking node:sqlite (columns()) built its column list on every query.
  const statements = new Map<string, { statement: StatementSync; reader: boolean }>();
  const prepare = (text: string) => {
    let prepared = statements.get(text);
    if (!prepared) {
      const statement = database.prepare(text);
      prepared = { statement, reader: statement.columns().length > 0 };
      if (statements.size > 500) statements.clear();
      statements.set(text, prepared);
    }
    return prepared;
  };
  const dataVersion = database.prepare('PRAGMA data_version');
  return {
    dataVersion: () => (dataVersion.get() as { data_version: number }).data_version,
    close: () => database.close(),
    prepare(text) {
      // Kysely begins every transaction with a deferred `begin`. One that reads and then writes, while another process
      // wrote meanwhile, fails with SQLITE_BUSY at once (busy_timeout does not apply to upgrading a stale snapshot): two
      // processes migrating one new file did. `begin immediate` takes the write lock first, waiting busy_timeout for it.
      // Within a process Kysely already runs one transaction at a time on its one connection, so this costs nothing.
      const { statement, reader } = prepare(text === 'begin' ? 'begin immediate' : text);
      const args = (parameters: ReadonlyArray<unknown>) => parameters.map(bindable);
      return {
        reader,
        all: (parameters) => statement.all(...args(parameters)),
        run: (parameters) => statement.run(...args(parameters)),
        iterate: (parameters) => statement.iterate(...args(parameters)),
      };
    },
  };
}

// Opens the database named by DATABASE_URL: SQLite through node:sqlite (built into Node 24, no native build) or
// PostgreSQL through pg. Both are one Kysely<Database>; nothing above this file knows which.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql, type SqliteDatabase } from 'kysely';
import pg from 'pg';
import { platform } from './migrations/001_platform.ts';
import type { Database } from './schema.ts';

export type DatabaseKind = 'sqlite' | 'postgres';

export interface Storage {
  db: Kysely<Database>;
  kind: DatabaseKind;
  close(): Promise<void>;
}

/** Every migration, in order. A new feature appends its own. */
export const migrations = { '001_platform': platform };

export function openStorage(url: string): Storage {
  if (url.startsWith('sqlite:')) {
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: openSqlite(url.slice('sqlite:'.length)) }) });
    return { db, kind: 'sqlite', close: () => db.destroy() };
  }
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return { db, kind: 'postgres', close: () => db.destroy() };
}

export async function migrate(db: Kysely<Database>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
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

/** Adapts node:sqlite's DatabaseSync to the interface Kysely's SqliteDialect expects (better-sqlite3's). */
function openSqlite(path: string): SqliteDatabase {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const database = new DatabaseSync(path);
  // WAL lets readers run beside the writer; busy_timeout lets several processes share one file.
  database.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;');
  // Preparing costs more than running a small query; the server runs the same few statements over and over.
  const statements = new Map<string, StatementSync>();
  const prepare = (text: string): StatementSync => {
    let statement = statements.get(text);
    if (!statement) {
      statement = database.prepare(text);
      if (statements.size > 500) statements.clear();
      statements.set(text, statement);
    }
    return statement;
  };
  return {
    close: () => database.close(),
    prepare(text) {
      const statement = prepare(text);
      const args = (parameters: ReadonlyArray<unknown>) => parameters.map(bindable);
      return {
        reader: statement.columns().length > 0,
        all: (parameters) => statement.all(...args(parameters)),
        run: (parameters) => statement.run(...args(parameters)),
        iterate: (parameters) => statement.iterate(...args(parameters)),
      };
    },
  };
}

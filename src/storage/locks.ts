// Row locks that read the same on both databases. PostgreSQL takes them with `for no key update`; SQLite has no row
// locks and needs none: a write transaction (Kysely's `begin`, made `begin immediate`) excludes every other writer.
import { type Kysely, PostgresAdapter, type SelectQueryBuilder, type Transaction } from 'kysely';
import type { Database } from './schema.ts';

export function isPostgres(db: Kysely<Database>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/**
 * The query with `for no key update` on PostgreSQL: it excludes every other lock taken here and every write of the
 * row, but not the `for key share` that PostgreSQL takes on a parent row when a row referring to it is inserted. So
 * locking a workspace's row (to serialise its project names, its limits) never waits for, nor deadlocks with, the
 * inserts of that workspace's threads, usage rows and request log. No key column is ever updated.
 */
export function forUpdate<TB extends keyof Database, O>(
  query: SelectQueryBuilder<Database, TB, O>,
  trx: Transaction<Database>,
): SelectQueryBuilder<Database, TB, O> {
  return isPostgres(trx) ? query.forNoKeyUpdate() : query;
}

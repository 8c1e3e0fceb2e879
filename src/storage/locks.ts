// Row locks that read the same on both databases. PostgreSQL takes them with `for update`; SQLite has no row
// locks and needs none: a write transaction (Kysely's `begin`, made `begin immediate`) excludes every other writer.
import { type Kysely, PostgresAdapter, type SelectQueryBuilder, type Transaction } from 'kysely';
import type { Database } from './schema.ts';

export function isPostgres(db: Kysely<Database>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** The query with `for update` on PostgreSQL. */
export function forUpdate<TB extends keyof Database, O>(
  query: SelectQueryBuilder<Database, TB, O>,
  trx: Transaction<Database>,
): SelectQueryBuilder<Database, TB, O> {
  return isPostgres(trx) ? query.forUpdate() : query;
}

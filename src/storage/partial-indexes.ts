// The background workers' hot lookups read small partial indexes (`… where status = 'pending'`): what is due, and
// each webhook endpoint's queue head. SQLite uses a partial index only when the query states the index's condition
// with the same literal values; with a bound parameter (`status = ?`) it cannot know the condition holds, and scans
// the table instead (EXPLAIN QUERY PLAN: `SCAN webhook_deliveries`), a scan that grows with 30 days of history. So
// these conditions are written as literals, never parameters. (PostgreSQL plans node-postgres's unnamed statements
// with their values and used the indexes either way.)
import { sql } from 'kysely';

/** `'pending'` as a literal in the SQL text, for a condition a partial index is defined by. */
export const PENDING = sql.lit<'pending'>('pending');
/** `1` as a literal in the SQL text (`ordered = 1` of the webhook queue index). */
export const ONE = sql.lit<0 | 1>(1);

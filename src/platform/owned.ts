// The shape of every change to a resource a workspace owns: in one transaction, lock the resource's row (or answer
// 404 when the workspace has none by that id), write, and record the audit entry of the change. The SQL stays at the
// call site (which rows, which columns, which write); these two helpers hold what was the same each time.
import type { SelectQueryBuilder, Transaction } from 'kysely';
import { forUpdate } from '../storage/locks.ts';
import type { Database } from '../storage/schema.ts';
import { type AuditEntry, byRequest, recordAudit } from './audit.ts';
import type { RequestContext } from './context.ts';
import { notFound } from './problems.ts';

/**
 * The row that `query` selects (a resource of the caller's workspace, by id), locked until the transaction ends
 * (forUpdate), or the 404 `<what>_not_found` naming `id`.
 */
export async function lockOwned<TB extends keyof Database, O>(
  trx: Transaction<Database>,
  query: SelectQueryBuilder<Database, TB, O>,
  what: string,
  id: string,
): Promise<O> {
  const row = await forUpdate(query, trx).executeTakeFirst();
  if (!row) throw notFound(what, id);
  return row as O;
}

/**
 * Runs `change` in a transaction and records, in the same transaction, the audit entry it returns beside its result
 * (by the request's caller): the change and its record commit together or not at all.
 */
export function audited<T>(
  context: RequestContext,
  change: (trx: Transaction<Database>) => Promise<[result: T, entry: AuditEntry]>,
): Promise<T> {
  return context.platform.db.transaction().execute(async (trx) => {
    const [result, entry] = await change(trx);
    await recordAudit(trx, byRequest(context), entry);
    return result;
  });
}

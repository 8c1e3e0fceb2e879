// Wakes delivery workers when deliveries were created or made due: `pg_notify` on commit (PostgreSQL) or an
// in-process signal (SQLite); see src/platform/jobs/notify.ts.
import type { Kysely } from 'kysely';
import { notifyOnCommit } from '../../platform/jobs/notify.ts';
import type { Database } from '../../storage/schema.ts';

export const DELIVERIES_CHANNEL = 'webhook_deliveries';

/** Call in the transaction that created deliveries (or made some due). */
export function deliveriesCreated(trx: Kysely<Database>): Promise<void> {
  return notifyOnCommit(trx, DELIVERIES_CHANNEL);
}

// The usage rows of provider calls (`usage_records`, what GET /v1/usage sums and prices), one a call that reached
// the provider, written when the call ends whatever happened, and counted in the metrics (GET /metrics) alike. A row
// that fails on a lost database connection or a deadlock is written again for a few seconds (RETRY_DELAYS_MS), the
// answer waiting for it; one that cannot be written at all is logged with what it held, and the answer goes out.
//
// The rows of calls that end in the same turn of the event loop are written in one transaction, and each call waits
// for it: under load a commit (its WAL frames, its index pages) costs more than the rows it holds, and a call's row is
// still in the database before its answer ends.
import type { Insertable, Kysely } from 'kysely';
import type { Logger } from 'pino';
import { iso } from '../../platform/clock.ts';
import { newId } from '../../platform/ids.ts';
import type { Metrics } from '../../platform/metrics.ts';
import { isTransientError } from '../../storage/database.ts';
import { preparedQuery } from '../../storage/prepared-query.ts';
import type { Database } from '../../storage/schema.ts';
import type { CatalogueEntry } from './catalogue-entry.ts';
import type { TokenUsage, UsageFeature } from './generation.ts';
import { recordUsageMetrics } from './observability.ts';

/** Whose calls they were. */
export interface UsageOwner {
  workspaceId: string;
  apiKeyId: string | null;
  /** The project the output was for (a project's spend limit counts it); null for none. */
  projectId?: string | null;
  feature: UsageFeature;
  now: Date;
}

type UsageRow = Insertable<Database['usage_records']>;
const insertUsageRow = preparedQuery<UsageRow & Record<string, unknown>, never>((db, row) =>
  db.insertInto('usage_records').values(row),
);

/** One call's rows waiting for the write of its turn. */
interface Pending {
  rows: UsageRow[];
  written: () => void;
  failed: (error: unknown) => void;
}

/** The calls of this turn of the event loop, per database. */
const batches = new WeakMap<Kysely<Database>, Pending[]>();

async function insertRows(db: Kysely<Database>, rows: UsageRow[], runner: Kysely<Database> = db): Promise<void> {
  for (const row of rows) await insertUsageRow(db, row, runner);
}

/** Writes the turn's calls in one transaction; when it fails, each call's rows alone, so that one call's bad row (its
 *  workspace deleted meanwhile) costs no other call its rows. */
async function flush(db: Kysely<Database>, batch: Pending[]): Promise<void> {
  if (batch.length > 1) {
    try {
      await db.transaction().execute(async (trx) => {
        for (const pending of batch) await insertRows(db, pending.rows, trx);
      });
      for (const pending of batch) pending.written();
      return;
    } catch {
      // Each call on its own below.
    }
  }
  for (const pending of batch) {
    try {
      if (pending.rows.length === 1) await insertRows(db, pending.rows);
      else await db.transaction().execute((trx) => insertRows(db, pending.rows, trx));
      pending.written();
    } catch (error) {
      pending.failed(error);
    }
  }
}

function write(db: Kysely<Database>, rows: UsageRow[]): Promise<void> {
  let batch = batches.get(db);
  if (!batch) {
    const queued: Pending[] = [];
    batches.set(db, (batch = queued));
    setImmediate(() => {
      batches.delete(db);
      void flush(db, queued);
    });
  }
  const pending = batch;
  return new Promise<void>((written, failed) => pending.push({ rows, written, failed }));
}

/** Writes a row for each call that used tokens (a call refused before the provider costs nothing and is not a call). */
export async function recordUsage(
  services: { db: Kysely<Database>; logger: Logger; metrics: Metrics },
  model: CatalogueEntry,
  owner: UsageOwner,
  calls: Array<{ usage: TokenUsage; costUsd: number }>,
): Promise<void> {
  const { db, logger, metrics } = services;
  const rows = calls
    .filter(({ usage }) => usage.inputTokens + usage.outputTokens > 0)
    .map(({ usage, costUsd }) => ({
      id: newId('use', owner.now),
      workspace_id: owner.workspaceId,
      api_key_id: owner.apiKeyId,
      project_id: owner.projectId ?? null,
      model: model.id,
      feature: owner.feature,
      day: iso(owner.now).slice(0, 10),
      input_tokens: usage.inputTokens,
      cached_input_tokens: usage.cachedInputTokens,
      output_tokens: usage.outputTokens,
      cost_usd: costUsd,
      created_at: iso(owner.now),
    }));
  if (rows.length === 0) return;
  for (const row of rows) {
    recordUsageMetrics(
      metrics,
      owner.feature,
      model.id,
      { inputTokens: row.input_tokens, cachedInputTokens: row.cached_input_tokens, outputTokens: row.output_tokens },
      row.cost_usd,
    );
  }
  for (let attempt = 0; ; attempt++) {
    try {
      await write(db, rows);
      return;
    } catch (error) {
      // The attempt before committed, and its connection was lost before it could say so.
      if (attempt > 0 && isDuplicateRow(error)) return;
      if (!isTransientError(error) || attempt >= RETRY_DELAYS_MS.length) {
        logger.error({ err: error, usage: rows }, 'the usage of a model call could not be recorded');
        return;
      }
      logger.warn({ err: error, attempt: attempt + 1 }, 'the usage of a model call waits for the database; retrying');
      await new Promise((resolve) => setTimeout(resolve, RETRY_DELAYS_MS[attempt]));
    }
  }
}

/**
 * A lost or exhausted database connection, or a deadlock PostgreSQL undid, does not lose the row of a call that was
 * billed upstream: it is written again, for about eight seconds (the caller waits; at shutdown the drain does too). Its id is fixed, so a write that
 * committed but whose answer was lost is not written twice.
 */
const RETRY_DELAYS_MS = [250, 500, 1000, 2000, 4000];

function isDuplicateRow(error: unknown): boolean {
  const { code, message } = error as { code?: string; message?: string };
  return code === '23505' || /UNIQUE constraint failed/.test(message ?? '');
}

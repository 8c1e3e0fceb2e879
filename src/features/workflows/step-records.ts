// A step's row in workflow_run_steps as the runtime writes it while a run goes on: each write refreshes the run's
// status in the same transaction, so that the API never shows a run and its steps out of step.
import type { Transaction } from 'kysely';
import { iso } from '../../platform/clock.ts';
import type { Platform } from '../../platform/context.ts';
import type { Database } from '../../storage/schema.ts';
import type { Value } from './expressions.ts';
import type { StepFailure } from './steps.ts';
import { refreshRunStatus, type StepRow } from './store.ts';

type Db = Platform['db'];

/** The outcome of one step within an execution. */
export interface Outcome {
  status: 'success' | 'failure' | 'skipped' | 'rejected' | 'cancelled';
  output: Value;
}

export async function stepRow(
  db: Db | Transaction<Database>,
  runId: string,
  stepId: string,
): Promise<StepRow | undefined> {
  return db
    .selectFrom('workflow_run_steps')
    .selectAll()
    .where('run_id', '=', runId)
    .where('step_id', '=', stepId)
    .executeTakeFirst();
}

export function isFinal(status: string): boolean {
  return ['success', 'failure', 'skipped', 'rejected', 'cancelled'].includes(status);
}

export function parseOutput(row: StepRow): Value {
  return row.output === null ? null : (JSON.parse(row.output) as Value);
}

/** The outcome a step's row records. */
export function recordedOutcome(row: StepRow): Outcome {
  return { status: row.status as Outcome['status'], output: parseOutput(row) };
}

/** A step whose `when` is false: skipped, unless it has started meanwhile. */
export async function recordSkipped(db: Db, runId: string, stepId: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('workflow_run_steps')
      .set({ status: 'skipped', finished_at: iso(new Date()) })
      .where('run_id', '=', runId)
      .where('step_id', '=', stepId)
      .where('status', '=', 'pending')
      .execute();
    await refreshRunStatus(trx, runId);
  });
}

/** An attempt begins: the step is running, its attempts counted from 1, started when its first attempt was. */
export async function recordAttemptStarted(
  db: Db,
  runId: string,
  stepId: string,
  attempts: number,
  startedAt: string,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('workflow_run_steps')
      .set({ status: 'running', attempts, started_at: startedAt })
      .where('run_id', '=', runId)
      .where('step_id', '=', stepId)
      .execute();
    await refreshRunStatus(trx, runId);
  });
}

/** The step's success and its cost, in our tables. */
export async function recordSuccess(
  trx: Transaction<Database>,
  runId: string,
  stepId: string,
  output: Value,
  costUsd: number,
): Promise<void> {
  await trx
    .updateTable('workflow_run_steps')
    .set((eb) => ({
      status: 'success',
      output: JSON.stringify(output),
      error: null,
      finished_at: iso(new Date()),
      cost_usd: eb('cost_usd', '+', costUsd),
    }))
    .where('run_id', '=', runId)
    .where('step_id', '=', stepId)
    .where('status', '=', 'running')
    .execute();
  await trx
    .updateTable('workflow_runs')
    .set((eb) => ({ cost_usd: eb('cost_usd', '+', costUsd) }))
    .where('id', '=', runId)
    .execute();
  await refreshRunStatus(trx, runId);
}

/** The step's failure, its error and its cost. */
export async function recordFailure(
  db: Db,
  runId: string,
  stepId: string,
  code: StepFailure['code'],
  message: string,
  costUsd = 0,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('workflow_run_steps')
      .set((eb) => ({
        status: 'failure',
        error: JSON.stringify({ code, message: message.slice(0, 2000) }),
        finished_at: iso(new Date()),
        cost_usd: eb('cost_usd', '+', costUsd),
      }))
      .where('run_id', '=', runId)
      .where('step_id', '=', stepId)
      .where('status', 'in', ['pending', 'running', 'awaiting_approval'])
      .execute();
    await trx
      .updateTable('workflow_runs')
      .set((eb) => ({ cost_usd: eb('cost_usd', '+', costUsd) }))
      .where('id', '=', runId)
      .execute();
    await refreshRunStatus(trx, runId);
  });
}

/** A failed attempt that will be retried: its cost and its error are kept, the step stays running. */
export async function recordRetriedFailure(
  db: Db,
  runId: string,
  stepId: string,
  failure: StepFailure,
  costUsd: number,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('workflow_run_steps')
      .set((eb) => ({
        cost_usd: eb('cost_usd', '+', costUsd),
        error: JSON.stringify({ code: failure.code, message: failure.message }),
      }))
      .where('run_id', '=', runId)
      .where('step_id', '=', stepId)
      .execute();
  });
}

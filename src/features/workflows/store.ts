// The runs of workflows as the API shows them (workflow_runs and workflow_run_steps): the queries and state changes
// that the handlers (runs.ts) and the runtime (runtime.ts) share, and the presenters.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import { iso } from '../../platform/clock.ts';
import type { Database } from '../../storage/schema.ts';
import type { Definition } from './definition.ts';
import type { WorkflowRunStepsTable, WorkflowRunsTable } from './schema.ts';

type Schemas = components['schemas'];
type Db = Kysely<Database> | Transaction<Database>;
export type RunRow = Selectable<WorkflowRunsTable>;
export type StepRow = Selectable<WorkflowRunStepsTable>;
export type RunStatus = Schemas['WorkflowRunStatus'];
export type StepStatus = Schemas['WorkflowRunStepStatus'];
export type RunError = Schemas['WorkflowRunError'];
export type StepError = Schemas['WorkflowRunStepError'];
export type Approval = Schemas['WorkflowRunStepApproval'];

export const FINAL_RUN_STATUSES: readonly RunStatus[] = ['success', 'failure', 'cancelled'];
export const FINAL_STEP_STATUSES: readonly StepStatus[] = ['success', 'failure', 'skipped', 'rejected', 'cancelled'];

export async function stepsOf(db: Db, runId: string): Promise<StepRow[]> {
  return db.selectFrom('workflow_run_steps').selectAll().where('run_id', '=', runId).orderBy('position').execute();
}

export async function versionDefinition(db: Db, workflowId: string, version: number): Promise<Definition> {
  const row = await db
    .selectFrom('workflow_versions')
    .select('definition')
    .where('workflow_id', '=', workflowId)
    .where('version', '=', version)
    .executeTakeFirstOrThrow();
  return JSON.parse(row.definition) as Definition;
}

/** Cents to a billionth: sums of float costs do not show binary noise. */
export function roundCost(usd: number): number {
  return Math.round(usd * 1e9) / 1e9;
}

const parse = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

export function presentStep(row: StepRow): Schemas['WorkflowRunStep'] {
  return {
    id: row.step_id,
    type: row.type as Schemas['WorkflowStepType'],
    status: row.status as StepStatus,
    attempts: row.attempts,
    cost_usd: roundCost(row.cost_usd),
    latency_ms:
      row.started_at && row.finished_at ? Math.max(0, Date.parse(row.finished_at) - Date.parse(row.started_at)) : null,
    started_at: row.started_at,
    finished_at: row.finished_at,
    output: parse(row.output),
    error: parse<StepError>(row.error),
    approval: parse<Approval>(row.approval),
  };
}

/** The run as the API shows it; `approvalUrl` is the page of the step that waits for a decision (approvals.ts). */
export function presentRun(row: RunRow, steps: StepRow[], approvalUrl: string | null): Schemas['WorkflowRun'] {
  return {
    id: row.id,
    object: 'workflow_run',
    workflow_id: row.workflow_id,
    workflow_version: row.workflow_version,
    status: row.status as RunStatus,
    inputs: JSON.parse(row.inputs) as Schemas['WorkflowRun']['inputs'],
    outputs: parse(row.outputs),
    error: parse<RunError>(row.error),
    metadata: JSON.parse(row.metadata) as Schemas['Metadata'],
    cost_usd: roundCost(row.cost_usd),
    latency_ms:
      row.started_at && row.finished_at ? Math.max(0, Date.parse(row.finished_at) - Date.parse(row.started_at)) : null,
    steps: steps.map(presentStep),
    approval_url: row.status === 'awaiting_approval' ? approvalUrl : null,
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
  };
}

/**
 * The run's status from its steps, while it is not final: `running` while a step runs (or none has started yet),
 * `awaiting_approval` when nothing runs and an approval waits. Called after every change of a step.
 */
export async function refreshRunStatus(trx: Db, runId: string): Promise<void> {
  const steps = await trx.selectFrom('workflow_run_steps').select('status').where('run_id', '=', runId).execute();
  const waiting = steps.some((step) => step.status === 'awaiting_approval');
  const running = steps.some((step) => step.status === 'running');
  const status: RunStatus = waiting && !running ? 'awaiting_approval' : 'running';
  await trx
    .updateTable('workflow_runs')
    .set({ status })
    .where('id', '=', runId)
    .where('status', 'in', ['queued', 'running', 'awaiting_approval'])
    .execute();
}

/** Ends every step that has not ended as `cancelled` (the run was cancelled, or failed before they ran). */
export async function cancelOpenSteps(trx: Db, runId: string, now: Date): Promise<void> {
  await trx
    .updateTable('workflow_run_steps')
    .set({ status: 'cancelled', finished_at: iso(now) })
    .where('run_id', '=', runId)
    .where('status', 'in', ['pending', 'running', 'awaiting_approval'])
    .execute();
}

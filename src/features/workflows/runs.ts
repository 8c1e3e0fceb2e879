// Runs of a workflow: start (inputs checked against the definition), list, get, cancel, and the decisions of approval
// steps. The handlers change our tables; the runtime (runtime.ts) carries the runs out and is told what changed.
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import { byRequest, recordAudit } from '../../platform/audit.ts';
import { characterCount } from '../../platform/characters.ts';
import { iso } from '../../platform/clock.ts';
import { atLeast, callerRole, type RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { parseInstant } from '../../platform/instant.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { Problem, type ProblemFieldError } from '../../platform/problems.ts';
import { forUpdate } from '../../storage/locks.ts';
import { approvalUrl } from './approvals.ts';
import type { Definition } from './definition.ts';
import type { Value } from './expressions.ts';
import {
  type Approval,
  cancelOpenSteps,
  FINAL_RUN_STATUSES,
  presentRun,
  type RunRow,
  refreshRunStatus,
  stepsOf,
  versionDefinition,
} from './store.ts';
import { loadWorkflow, workflowsOf } from './workflows.ts';

type Schemas = components['schemas'];

const runNotFound = (workflowId: string, runId: string) =>
  new Problem('not_found', `No run ${runId} of workflow ${workflowId} in this workspace.`);

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** The run's inputs with the defaults filled in, or every way they break the definition's `inputs`. */
export function checkInputs(
  definition: Definition,
  given: Record<string, Value>,
): { inputs: Record<string, Value>; errors: ProblemFieldError[] } {
  const declared = definition.inputs ?? {};
  const errors: ProblemFieldError[] = [];
  const inputs: Record<string, Value> = {};
  for (const name of Object.keys(given))
    if (!Object.hasOwn(declared, name))
      errors.push({
        pointer: `/inputs/${name}`,
        detail: `is not an input of this workflow (it has: ${Object.keys(declared).join(', ') || 'none'})`,
      });
  for (const [name, input] of Object.entries(declared)) {
    const pointer = `/inputs/${name}`;
    const value = given[name];
    if (value === undefined || value === null) {
      if (input.required) errors.push({ pointer, detail: 'is required' });
      inputs[name] = (input.default ?? null) as Value;
      continue;
    }
    const type = input.type ?? 'string';
    const actual = typeName(value);
    const fits = type === actual || (type === 'number' && actual === 'integer');
    if (!fits) {
      errors.push({
        pointer,
        detail: `must be ${type === 'array' || type === 'object' || type === 'integer' ? `an ${type}` : `a ${type}`}, not ${actual === 'array' || actual === 'object' || actual === 'integer' ? `an ${actual}` : actual}`,
      });
      continue;
    }
    if (input.enum && !input.enum.includes(value as string | number))
      errors.push({ pointer, detail: `must be one of ${input.enum.map((item) => JSON.stringify(item)).join(', ')}` });
    if (typeof value === 'string' && characterCount(value) > (input.max_length ?? 100_000))
      errors.push({ pointer, detail: `must be at most ${input.max_length ?? 100_000} characters` });
    if (typeof value === 'number' && input.minimum !== undefined && value < input.minimum)
      errors.push({ pointer, detail: `must be at least ${input.minimum}` });
    if (typeof value === 'number' && input.maximum !== undefined && value > input.maximum)
      errors.push({ pointer, detail: `must be at most ${input.maximum}` });
    if (Array.isArray(value) && value.length > (input.max_items ?? 1000))
      errors.push({ pointer, detail: `must have at most ${input.max_items ?? 1000} items` });
    inputs[name] = value;
  }
  return { inputs, errors };
}

async function loadRun(context: RequestContext, workflowId: string, runId: string): Promise<RunRow> {
  const run = await context.platform.db
    .selectFrom('workflow_runs')
    .selectAll()
    .where('id', '=', runId)
    .where('workflow_id', '=', workflowId)
    .where('workspace_id', '=', context.caller.workspace.id)
    .executeTakeFirst();
  if (!run) {
    await loadWorkflow(context.platform.db, context, workflowId);
    throw runNotFound(workflowId, runId);
  }
  return run;
}

async function presented(context: RequestContext, runId: string): Promise<Schemas['WorkflowRun']> {
  const db = context.platform.db;
  const run = await db.selectFrom('workflow_runs').selectAll().where('id', '=', runId).executeTakeFirstOrThrow();
  const steps = await stepsOf(db, runId);
  return presentRun(run, steps, await waitingApprovalUrl(context, run, steps));
}

/** The approval page of the run's step that waits for a decision, as `workflow.run.approval_required` gave it. */
async function waitingApprovalUrl(
  context: RequestContext,
  run: Pick<RunRow, 'id' | 'status'>,
  steps: Awaited<ReturnType<typeof stepsOf>>,
): Promise<string | null> {
  if (run.status !== 'awaiting_approval') return null;
  const step = steps.find((candidate) => candidate.status === 'awaiting_approval' && candidate.approval);
  if (!step) return null;
  const { expires_at: expiresAt } = JSON.parse(step.approval!) as Approval;
  return approvalUrl(context.platform, context.caller.workspace, run.id, step.step_id, new Date(expiresAt));
}

/** Records a decision on an approval step that waits, then wakes its run. */
async function decide(
  context: RequestContext,
  path: { id: string; run_id: string; step_id: string },
  decision: 'approve' | 'reject',
  comment: string | undefined,
) {
  const db = context.platform.db;
  await loadRun(context, path.id, path.run_id);
  await db.transaction().execute(async (trx) => {
    const run = await forUpdate(
      trx.selectFrom('workflow_runs').selectAll().where('id', '=', path.run_id),
      trx,
    ).executeTakeFirstOrThrow();
    const step = await trx
      .selectFrom('workflow_run_steps')
      .selectAll()
      .where('run_id', '=', run.id)
      .where('step_id', '=', path.step_id)
      .executeTakeFirst();
    if (!step) throw new Problem('not_found', `The run ${run.id} has no step ${path.step_id}.`);
    if (step.type !== 'approval' || step.status !== 'awaiting_approval' || run.status === 'cancelled') {
      const why =
        step.type !== 'approval'
          ? 'is not an approval step'
          : `is ${run.status === 'cancelled' ? 'cancelled' : step.status}`;
      throw new Problem(
        'step_not_awaiting_approval',
        `The step ${step.step_id} ${why}; only a step that is awaiting_approval can be decided.`,
      );
    }
    const approval = JSON.parse(step.approval!) as Approval;
    if (!atLeast(context.caller.role, approval.approver_role)) {
      throw new Problem(
        'insufficient_role',
        `The step ${step.step_id} needs an approver with the ${approval.approver_role} role or higher; ${callerRole(context.caller)}.`,
      );
    }
    const now = iso(context.now);
    const keyId = context.caller.apiKey.id;
    const decided: Approval = {
      ...approval,
      decision,
      decided_at: now,
      decided_by_key_id: keyId,
      comment: comment ?? null,
      timed_out: false,
    };
    await trx
      .updateTable('workflow_run_steps')
      .set({
        status: decision === 'approve' ? 'success' : 'rejected',
        approval: JSON.stringify(decided),
        output: JSON.stringify({ decision, comment: comment ?? null, decided_by_key_id: keyId, timed_out: false }),
        finished_at: now,
      })
      .where('run_id', '=', run.id)
      .where('step_id', '=', step.step_id)
      .execute();
    // The run goes on at once (`running`) unless another approval still waits with nothing running.
    await refreshRunStatus(trx, run.id);
    await recordAudit(trx, byRequest(context), {
      action: decision === 'approve' ? 'workflow_step.approved' : 'workflow_step.rejected',
      target: { type: 'workflow_run', id: run.id, display_name: null },
      details: { step_id: step.step_id, comment: comment ?? null },
    });
  });
  // The decision is recorded: a lost wake-up is sent again by the runtime's reconciliation.
  await context.platform.services.workflows
    .wake(path.run_id, path.step_id)
    .catch((error: unknown) =>
      context.platform.logger.warn(
        { err: error, run_id: path.run_id },
        'could not wake the run; it is woken within seconds',
      ),
    );
  return {
    status: 200 as const,
    contentType: 'application/json' as const,
    body: await presented(context, path.run_id),
  };
}

export const runHandlers = {
  async startWorkflowRun(request, context) {
    const db = context.platform.db;
    const workspaceId = context.caller.workspace.id;
    const run = await db.transaction().execute(async (trx) => {
      // Locked: a delete of the workflow waits for the run to exist, and then refuses (it has an active run).
      const workflow = await forUpdate(
        workflowsOf(trx, workspaceId).where('id', '=', request.path.id),
        trx,
      ).executeTakeFirst();
      if (!workflow) throw new Problem('not_found', `No workflow ${request.path.id} in this workspace.`);
      const definition = await versionDefinition(trx, workflow.id, workflow.version);
      const { inputs, errors } = checkInputs(definition, (request.body.inputs ?? {}) as Record<string, Value>);
      if (errors.length > 0)
        throw new Problem(
          'invalid_workflow_inputs',
          `The run's inputs have ${errors.length} error${errors.length === 1 ? '' : 's'}; the workflow's input_schema describes them.`,
          { errors },
        );
      const now = iso(context.now);
      const row: RunRow = {
        id: newId('run', context.now),
        workspace_id: workspaceId,
        workflow_id: workflow.id,
        workflow_version: workflow.version,
        status: 'queued',
        inputs: JSON.stringify(inputs),
        outputs: null,
        error: null,
        metadata: JSON.stringify(request.body.metadata ?? {}),
        cost_usd: 0,
        api_key_id: context.caller.apiKey.id,
        user_id: context.caller.userId,
        engine_run_id: null,
        created_at: now,
        started_at: null,
        finished_at: null,
      };
      await trx.insertInto('workflow_runs').values(row).execute();
      await trx
        .insertInto('workflow_run_steps')
        .values(
          definition.steps.map((step, position) => ({
            run_id: row.id,
            step_id: step.id,
            position,
            type: step.type,
            status: 'pending',
            attempts: 0,
            cost_usd: 0,
            started_at: null,
            finished_at: null,
            output: null,
            error: null,
            approval: null,
          })),
        )
        .execute();
      await trx.updateTable('workflows').set({ last_run_at: now }).where('id', '=', workflow.id).execute();
      return row;
    });
    // Committed first: a run handed to the engine always exists. One that is not handed (this process dies now) is
    // handed by the runtime's reconciliation.
    await context.platform.services.workflows
      .enqueue(run.id)
      .catch((error: unknown) =>
        context.platform.logger.warn(
          { err: error, run_id: run.id },
          'could not hand the run to the engine; it is handed within seconds',
        ),
      );
    const body = await presented(context, run.id);
    return {
      status: 202,
      contentType: 'application/json',
      headers: { Location: `/v1/workflows/${run.workflow_id}/runs/${run.id}` },
      body,
    };
  },

  async listWorkflowRuns(request, context) {
    const db = context.platform.db;
    await loadWorkflow(db, context, request.path.id);
    const page = pageRequest(request.query);
    let query = db
      .selectFrom('workflow_runs')
      .selectAll()
      .where('workflow_id', '=', request.path.id)
      .where('workspace_id', '=', context.caller.workspace.id);
    if (request.query.status !== undefined) query = query.where('status', '=', request.query.status);
    if (request.query.created_after !== undefined)
      query = query.where('created_at', '>=', iso(parseInstant(request.query.created_after)));
    if (request.query.created_before !== undefined)
      query = query.where('created_at', '<', iso(parseInstant(request.query.created_before)));
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const steps = new Map<string, Awaited<ReturnType<typeof stepsOf>>>();
    const ids = rows.map((row) => row.id);
    if (ids.length > 0) {
      for (const step of await db
        .selectFrom('workflow_run_steps')
        .selectAll()
        .where('run_id', 'in', ids)
        .orderBy('position')
        .execute()) {
        steps.set(step.run_id, [...(steps.get(step.run_id) ?? []), step]);
      }
    }
    const urls = new Map<string, string | null>();
    for (const row of rows) urls.set(row.id, await waitingApprovalUrl(context, row, steps.get(row.id) ?? []));
    const { body, headers } = toPage(
      rows,
      page,
      (row) => ({ id: row.id }),
      (row) => presentRun(row, steps.get(row.id) ?? [], urls.get(row.id) ?? null),
      context.url,
    );
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async getWorkflowRun(request, context) {
    const run = await loadRun(context, request.path.id, request.path.run_id);
    return {
      status: 200,
      contentType: 'application/json',
      body: await presented(context, run.id),
    };
  },

  async cancelWorkflowRun(request, context) {
    const db = context.platform.db;
    await loadRun(context, request.path.id, request.path.run_id);
    await db.transaction().execute(async (trx) => {
      const run = await forUpdate(
        trx.selectFrom('workflow_runs').selectAll().where('id', '=', request.path.run_id),
        trx,
      ).executeTakeFirstOrThrow();
      if (FINAL_RUN_STATUSES.includes(run.status as never)) {
        throw new Problem(
          'run_not_cancellable',
          `The run ${run.id} has already finished (${run.status}); only a queued, running or awaiting_approval run can be cancelled.`,
        );
      }
      await cancelOpenSteps(trx, run.id, context.now);
      await trx
        .updateTable('workflow_runs')
        .set({ status: 'cancelled', finished_at: iso(context.now) })
        .where('id', '=', run.id)
        .execute();
      await recordAudit(trx, byRequest(context), {
        action: 'workflow_run.cancelled',
        target: { type: 'workflow_run', id: run.id, display_name: null },
        details: { workflow_id: run.workflow_id },
      });
    });
    await context.platform.services.workflows
      .cancel(request.path.run_id)
      .catch((error: unknown) =>
        context.platform.logger.warn(
          { err: error, run_id: request.path.run_id },
          'could not stop the engine run; it stops at its next step',
        ),
      );
    return { status: 200, contentType: 'application/json', body: await presented(context, request.path.run_id) };
  },

  async approveWorkflowStep(request, context) {
    return decide(context, request.path, 'approve', request.body?.comment);
  },

  async rejectWorkflowStep(request, context) {
    return decide(context, request.path, 'reject', request.body?.comment);
  },
} satisfies Pick<
  Handlers<RequestContext>,
  | 'startWorkflowRun'
  | 'listWorkflowRuns'
  | 'getWorkflowRun'
  | 'cancelWorkflowRun'
  | 'approveWorkflowStep'
  | 'rejectWorkflowStep'
>;

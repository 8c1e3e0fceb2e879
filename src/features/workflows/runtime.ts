// Runs are carried out on a durable engine, openworkflow, behind this file: everything else sees only
// `WorkflowRuntime` (enqueue, cancel, wake), so another engine (DBOS on PostgreSQL, say) could replace it here.
//
// openworkflow keeps each run's history of steps in its own tables (a SQLite file beside the service's database, or
// the schema `openworkflow` of its PostgreSQL database) and replays a run's function after a crash or a wait: a step
// that finished is not run again, its recorded result is returned. Our tables (store.ts) are what the API answers;
// each step writes its state there as it goes, and the changes that must happen once (a document version, an event)
// are written in the same transaction as the step's success, so that a replay finds them done.
//
//   - Steps run when the steps they depend on have ended (`success`, `skipped`, or `rejected` with on_reject
//     continue), independent ones at the same time; `when` false skips a step.
//   - A failed attempt whose code is in the step's `retry_on` is retried by the engine with the step's backoff (the run
//     is put back in the queue for later, nothing waits in memory); other errors and the last attempt fail the step,
//     which fails the run: the steps not started are `cancelled`.
//   - An approval step records its request and the event `workflow.run.approval_required` once, then waits for a
//     signal (sent when someone decides) or for its timeout: the server can restart meanwhile.
//   - The run's cost is checked after each step against `max_cost_usd`.
//   - What the run builds from its steps' outputs (transform outputs, the content an approval shows, the run's
//     outputs) passes the output policy like generated text (output-policy.ts); a block fails the step or the run
//     with `invalid_output`.
//   - The end (status, outputs, `workflow.run.completed`) is one transaction.

import { sql } from 'kysely';
import { defineWorkflowSpec, OpenWorkflow, type Worker } from 'openworkflow';
import { BackendPostgres } from 'openworkflow/postgres';
import { BackendSqlite } from 'openworkflow/sqlite';
import postgres from 'postgres';
import { iso } from '../../platform/clock.ts';
import type { Platform } from '../../platform/context.ts';
import { Problem } from '../../platform/problems.ts';
import { failSpan, inSpan, SpanKind } from '../../platform/telemetry.ts';
import { recordEvent } from '../webhooks/index.ts';
import { approvalUrl } from './approvals.ts';
import type { Definition } from './definition.ts';
import { asText, evaluate, parseExpression, type Scope, truthy, type Value } from './expressions.ts';
import { withOutputPolicy } from './output-policy.ts';
import {
  isFinal,
  type Outcome,
  recordAttemptStarted,
  recordedOutcome,
  recordFailure,
  recordRetriedFailure,
  recordSkipped,
  recordSuccess,
  stepRow,
} from './step-records.ts';
import { failureOf, renderTemplate, runAttempt, type Step } from './steps.ts';
import {
  type Approval,
  cancelOpenSteps,
  FINAL_RUN_STATUSES,
  type RunError,
  type RunRow,
  refreshRunStatus,
  roundCost,
  type StepRow,
  versionDefinition,
} from './store.ts';

type Backend = BackendSqlite | BackendPostgres;

/** The one engine workflow: its input names the run in our tables, which hold everything else. */
const RUN = defineWorkflowSpec<{ runId: string }, null>({
  name: 'content-service.workflow-run',
  // An error outside a step (the database gone, the server stopping) puts the run back in the queue.
  retryPolicy: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '60s', maximumAttempts: 50 },
});

/** How often stray work is looked for: runs accepted but not handed to the engine, decisions whose signal was lost. */
const RECONCILE_MS = 2000;

/** How long the engine's connections have to end once the server stops, in seconds (postgres.js's unit). */
const POOL_END_GRACE_S = 2;

/** openworkflow parks a run (a wait, a retry's backoff) by throwing: its spans are not failures. */
const parked = (error: unknown) => (error as Error)?.name === 'SleepSignalError' || error instanceof Stopping;

/** Thrown at the start of a step while the server stops: the run goes back to the queue for the next worker. */
class Stopping extends Error {}

const signalName = (runId: string, stepId: string) => `approval:${runId}:${stepId}`;

/** The SQLite file of the engine beside the service's database (`data/x.db` → `data/x.workflows.db`). */
function engineDatabasePath(path: string): string {
  if (path === ':memory:' || path === '') return ':memory:';
  return /\.db$/.test(path) ? path.replace(/\.db$/, '.workflows.db') : `${path}.workflows`;
}

/**
 * The engine's backend, whose failed claims (the worker's polls, while the database is away) go to the server's log:
 * openworkflow's worker writes them to the console as text. A claim that fails claims nothing; the worker polls again
 * after its backoff, as it does after an error. The worker claims for each free slot at once, and polls again every
 * second or so: the first failure is logged, then nothing until a claim works again.
 */
function claimsLogged(backend: Backend, logger: Platform['logger']): Backend {
  const claim = backend.claimWorkflowRun.bind(backend);
  let failing = false;
  backend.claimWorkflowRun = (params) =>
    claim(params).then(
      (run) => {
        if (failing) logger.info('the workflow engine claims runs again');
        failing = false;
        return run;
      },
      (error: unknown) => {
        if (!failing) logger.warn({ err: error }, 'the workflow engine could not claim a run; it polls again');
        failing = true;
        return null;
      },
    );
  return backend;
}

export class WorkflowRuntime {
  readonly #platform: Platform;
  #backend: Backend | undefined;
  /** The engine's PostgreSQL pool (none on SQLite). */
  #pool: postgres.Sql | undefined;
  #client: OpenWorkflow | undefined;
  #worker: Worker | undefined;
  #stopping = false;
  #reconciler: NodeJS.Timeout | undefined;

  constructor(platform: Platform) {
    this.#platform = platform;
  }

  async start(): Promise<void> {
    const { config } = this.#platform;
    const url = config.databaseUrl;
    this.#backend = claimsLogged(await this.#connect(url), this.#platform.logger);
    this.#client = new OpenWorkflow({ backend: this.#backend });
    // One span per execution of a run (a replay after a wait or a crash is another), its steps' spans within it; the
    // parent is openworkflow's own span of the execution (it traces through the same OpenTelemetry API).
    this.#client.implementWorkflow(RUN, ({ input, step }) =>
      inSpan(
        'workflow run',
        SpanKind.INTERNAL,
        { 'content_service.workflow_run.id': input.runId },
        () => this.#execute(input.runId, step),
        { parked },
      ),
    );
    if (config.webhooksWorker) {
      this.#worker = this.#client.newWorker({ concurrency: config.workflowConcurrency });
      await this.#worker.start();
      this.#reconciler = setInterval(
        () =>
          void this.#reconcile().catch((error: unknown) =>
            this.#platform.logger.warn({ err: error }, 'workflow reconciliation failed'),
          ),
        RECONCILE_MS,
      );
      this.#reconciler.unref();
      void this.#reconcile().catch(() => {});
    }
  }

  /**
   * The engine's backend, its tables migrated. Processes starting together on one database migrated at the same
   * time and one failed ("duplicate key value violates unique constraint"): the migration runs under a lock of the
   * service's database, an advisory lock on PostgreSQL, the write lock of the service's file on SQLite.
   */
  async #connect(url: string): Promise<Backend> {
    const db = this.#platform.db;
    if (url.startsWith('sqlite:')) {
      const path = engineDatabasePath(url.slice('sqlite:'.length));
      return db.transaction().execute(async () => BackendSqlite.connect(path));
    }
    return db.connection().execute(async (connection) => {
      await sql`select pg_advisory_lock(hashtext('content-service:openworkflow-migrations'))`.execute(connection);
      try {
        // connect() migrates the engine's tables, then opens a pool of postgres.js's default size (lazily: it has no
        // connection yet). That pool is ended unused and the engine runs on one sized by WORKFLOW_DATABASE_POOL_MAX,
        // made as the engine makes its own (column names read in camel case).
        await (await BackendPostgres.connect(url, { schema: 'openworkflow' })).stop();
        this.#pool = postgres(url, {
          max: this.#platform.config.workflowDatabasePoolMax,
          transform: { column: { from: postgres.toCamel } },
        });
        return BackendPostgres.fromPool(this.#pool, { schema: 'openworkflow' });
      } finally {
        await sql`select pg_advisory_unlock(hashtext('content-service:openworkflow-migrations'))`.execute(connection);
      }
    });
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#reconciler);
    await this.#worker?.stop();
  }

  async dispose(): Promise<void> {
    // postgres.js's end() waits for a connection whose query PostgreSQL cut off (a failover, an administrator) to say it
    // ended, which it never does (github.com/porsager/postgres/issues/1097). The worker has stopped and no request
    // runs: a connection still open after a grace is closed.
    await this.#pool?.end({ timeout: POOL_END_GRACE_S });
    await this.#backend?.stop();
  }

  /** Hands an accepted run to the engine; the run's id is the idempotency key, so handing it twice starts it once. */
  async enqueue(runId: string): Promise<void> {
    const handle = await this.#client!.runWorkflow(RUN, { runId }, { idempotencyKey: runId });
    await this.#platform.db
      .updateTable('workflow_runs')
      .set({ engine_run_id: handle.workflowRun.id })
      .where('id', '=', runId)
      .execute();
  }

  /** Stops the engine's run of a cancelled run (the run's state is already ours): a run parked on an approval or a retry. */
  async cancel(runId: string): Promise<void> {
    const row = await this.#platform.db
      .selectFrom('workflow_runs')
      .select('engine_run_id')
      .where('id', '=', runId)
      .executeTakeFirst();
    if (!row?.engine_run_id) return;
    const run = await this.#backend!.getWorkflowRun({ workflowRunId: row.engine_run_id });
    if (run && ['pending', 'running', 'sleeping'].includes(run.status)) await this.#client!.cancelWorkflowRun(run.id);
  }

  /** Wakes a run whose approval step was decided (the decision is in our tables already). */
  async wake(runId: string, stepId: string): Promise<boolean> {
    const { workflowRunIds } = await this.#client!.sendSignal({
      signal: signalName(runId, stepId),
      data: { decided: true },
    });
    return workflowRunIds.length > 0;
  }

  /**
   * Runs accepted and committed but never handed to the engine (the process died in between) are handed now;
   * decided approval steps whose run still sleeps (the signal came before the run waited, or got lost) are woken.
   */
  async #reconcile(): Promise<void> {
    const db = this.#platform.db;
    const stale = iso(new Date(Date.now() - RECONCILE_MS));
    const queued = await db
      .selectFrom('workflow_runs')
      .select('id')
      .where('status', '=', 'queued')
      .where('engine_run_id', 'is', null)
      .where('created_at', '<', stale)
      .limit(50)
      .execute();
    for (const run of queued) await this.enqueue(run.id);
    const decided = await db
      .selectFrom('workflow_run_steps as s')
      .innerJoin('workflow_runs as r', 'r.id', 's.run_id')
      .select(['s.run_id', 's.step_id'])
      .where('s.type', '=', 'approval')
      .where('s.status', 'in', ['success', 'rejected'])
      .where('s.finished_at', '<', stale)
      .where('r.status', 'in', ['running', 'awaiting_approval'])
      .limit(50)
      .execute();
    for (const step of decided) await this.wake(step.run_id, step.step_id);
  }

  // ------------------------------------------------------------------------------------------------- one run

  async #execute(runId: string, step: StepApi): Promise<null> {
    const db = this.#platform.db;
    const run = await db.selectFrom('workflow_runs').selectAll().where('id', '=', runId).executeTakeFirst();
    // Deleted with its workflow, or already ended (cancelled while queued): nothing to do.
    if (!run || FINAL_RUN_STATUSES.includes(run.status as never)) return null;
    const definition = await versionDefinition(db, run.workflow_id, run.workflow_version);
    const workflow = await db
      .selectFrom('workflows')
      .select('project_id')
      .where('id', '=', run.workflow_id)
      .executeTakeFirst();
    await step.run({ name: 'start' }, async () => {
      await db
        .updateTable('workflow_runs')
        .set({ status: 'running', started_at: iso(new Date()) })
        .where('id', '=', runId)
        .where('status', '=', 'queued')
        .execute();
      return null;
    });

    const scope: Scope = {
      inputs: JSON.parse(run.inputs) as Record<string, Value>,
      steps: {},
      run: { id: run.id },
      workflow: { id: run.workflow_id, version: run.workflow_version },
    };
    const byId = new Map(definition.steps.map((item) => [item.id, item]));
    const outcomes = new Map<string, Promise<Outcome>>();
    // Why the run fails, once something failed it: no further step starts.
    let failure: RunError | null = null;

    const outcomeOf = (id: string): Promise<Outcome> => {
      let outcome = outcomes.get(id);
      if (!outcome) {
        outcome = (async () => {
          const item = byId.get(id)!;
          const before = await Promise.all((item.depends_on ?? []).map(outcomeOf));
          // A rejection with on_reject `fail` has set `failure`; with `continue`, the steps after it run.
          const blocked = before.some((previous) => previous.status === 'failure' || previous.status === 'cancelled');
          // A server that stops starts no further step: the run goes back to the queue (an error outside a step).
          if (this.#stopping) throw new Stopping('the server is stopping; the run goes on in the next worker');
          const result =
            blocked || failure || (await this.#cancelled(runId))
              ? { status: 'cancelled' as const, output: null }
              : await inSpan(
                  `workflow step ${id}`,
                  SpanKind.INTERNAL,
                  {
                    'content_service.workflow_run.id': runId,
                    'content_service.workflow_step.id': id,
                    'content_service.workflow_step.type': item.type,
                  },
                  async (span) => {
                    const outcome = await this.#step(run, item, scope, workflow?.project_id ?? null, step);
                    span?.setAttribute('content_service.workflow_step.status', outcome.status);
                    if (span && outcome.status === 'failure')
                      failSpan(span, new Error(`the step ${id} failed`), 'step_failed');
                    return outcome;
                  },
                  { parked },
                );
          scope.steps[id] = { status: result.status, output: result.output };
          if (result.status === 'failure' && !failure) failure = await this.#stepError(runId, id);
          if (
            result.status === 'rejected' &&
            item.type === 'approval' &&
            (item.on_reject ?? 'fail') === 'fail' &&
            !failure
          ) {
            failure = { step_id: id, code: 'approval_rejected', message: `The approval step ${id} was rejected.` };
          }
          if (!failure && definition.max_cost_usd !== undefined && result.status === 'success') {
            const cost = await this.#runCost(runId);
            if (cost > definition.max_cost_usd)
              failure = {
                step_id: null,
                code: 'budget_exceeded',
                message: `The run cost $${roundCost(cost)}, more than the budget of $${definition.max_cost_usd} (max_cost_usd).`,
              };
          }
          return result;
        })();
        outcomes.set(id, outcome);
      }
      return outcome;
    };

    // Every branch runs to its end before a wait or a retry parks the run, so that independent work is not dropped.
    const settled = await Promise.allSettled(definition.steps.map((item) => outcomeOf(item.id)));
    const thrown = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (thrown) throw thrown.reason;

    await step.run({ name: 'finish' }, async () => {
      await this.#finish(run, definition, scope, workflow?.project_id ?? null, failure);
      return null;
    });
    return null;
  }

  async #cancelled(runId: string): Promise<boolean> {
    const row = await this.#platform.db
      .selectFrom('workflow_runs')
      .select('status')
      .where('id', '=', runId)
      .executeTakeFirst();
    return !row || row.status === 'cancelled';
  }

  async #runCost(runId: string): Promise<number> {
    const row = await this.#platform.db
      .selectFrom('workflow_run_steps')
      .select((eb) => eb.fn.sum<number>('cost_usd').as('cost'))
      .where('run_id', '=', runId)
      .executeTakeFirst();
    return Number(row?.cost ?? 0);
  }

  async #stepError(runId: string, stepId: string): Promise<RunError> {
    const row = await this.#platform.db
      .selectFrom('workflow_run_steps')
      .select('error')
      .where('run_id', '=', runId)
      .where('step_id', '=', stepId)
      .executeTakeFirst();
    const error = row?.error
      ? (JSON.parse(row.error) as { code: RunError['code']; message: string })
      : { code: 'internal_error' as const, message: 'The step failed.' };
    return { step_id: stepId, ...error };
  }

  /** One step of a run: what its row already records (a replay), else what its `when` decides, else the step itself. */
  async #step(run: RunRow, item: Step, scope: Scope, projectId: string | null, step: StepApi): Promise<Outcome> {
    const recorded = await stepRow(this.#platform.db, run.id, item.id);
    if (recorded && isFinal(recorded.status)) return recordedOutcome(recorded);
    const decided = await this.#decidedByWhen(run.id, item, scope);
    if (decided) return decided;
    if (item.type === 'approval') return this.#approval(run, item, scope, projectId, step);
    // One engine step per workflow step: the engine retries it (a thrown error) with the step's backoff, and replays
    // its result once it has one. A failure that is not retried is a result too: the step's `failure`.
    return step.run({ name: `step:${item.id}`, retryPolicy: retriesOf(item).policy }, () =>
      this.#attempt(run, item, scope, projectId),
    );
  }

  /** What the step's `when` decides: skipped when false, failed when it cannot be evaluated; null when the step runs. */
  async #decidedByWhen(runId: string, item: Step, scope: Scope): Promise<Outcome | null> {
    if (item.when === undefined) return null;
    let go: boolean;
    try {
      go = truthy(evaluate(parseExpression(item.when), scope));
    } catch (error) {
      await recordFailure(this.#platform.db, runId, item.id, 'template_error', (error as Error).message);
      return { status: 'failure', output: null };
    }
    if (go) return null;
    await recordSkipped(this.#platform.db, runId, item.id);
    return { status: 'skipped', output: null };
  }

  /** One attempt at a step's work: marked running, run within the step's timeout, and its success or failure recorded. */
  async #attempt(run: RunRow, item: WorkStep, scope: Scope, projectId: string | null): Promise<Outcome> {
    const db = this.#platform.db;
    const current = await stepRow(db, run.id, item.id);
    // A replay after a crash that came between our commit and the engine's: the step is done.
    if (current && isFinal(current.status)) return recordedOutcome(current);
    if (await this.#cancelled(run.id)) return { status: 'cancelled', output: null };
    const attempts = (current?.attempts ?? 0) + 1;
    await recordAttemptStarted(db, run.id, item.id, attempts, current?.started_at ?? iso(new Date()));
    const timeout = AbortSignal.timeout(item.timeout_ms ?? 120_000);
    try {
      const outcome = await runAttempt(item, {
        platform: this.#platform,
        engine: this.#platform.services.engine,
        run,
        projectId,
        scope,
        signal: timeout,
        now: new Date(),
        // A document version and the step's success are one transaction.
        recordSuccess: (trx, output, costUsd) => recordSuccess(trx, run.id, item.id, output, costUsd),
      });
      if (!outcome.recorded)
        await db.transaction().execute((trx) => recordSuccess(trx, run.id, item.id, outcome.output, outcome.costUsd));
      return { status: 'success', output: outcome.output };
    } catch (error) {
      return this.#attemptFailed(run.id, item, attempts, error, timeout.aborted);
    }
  }

  /**
   * A failed attempt: the step's failure when it was the last one or its failure is not retried; else recorded, then
   * thrown, so that the engine schedules the next attempt after the step's backoff.
   */
  async #attemptFailed(
    runId: string,
    item: WorkStep,
    attempts: number,
    error: unknown,
    timedOut: boolean,
  ): Promise<Outcome> {
    const failure = failureOf(error, timedOut);
    const cost = (error as { costUsd?: number }).costUsd ?? 0;
    const { maxAttempts, retryOn } = retriesOf(item);
    if (attempts >= maxAttempts || !failure.retryable || !retryOn.includes(failure.code)) {
      await recordFailure(this.#platform.db, runId, item.id, failure.code, failure.message, cost);
      return { status: 'failure', output: null };
    }
    await recordRetriedFailure(this.#platform.db, runId, item.id, failure, cost);
    throw failure;
  }

  async #approval(
    run: RunRow,
    item: Extract<Step, { type: 'approval' }>,
    scope: Scope,
    projectId: string | null,
    step: StepApi,
  ): Promise<Outcome> {
    const db = this.#platform.db;
    const { expiresAt } = await step.run({ name: `request:${item.id}` }, async () => {
      const now = new Date();
      const expires = new Date(now.getTime() + (item.timeout_ms ?? 604_800_000));
      let content: string | null = null;
      if (item.show !== undefined) {
        try {
          content = [...asText(renderTemplate(item.show, scope))].slice(0, 100_000).join('');
        } catch (error) {
          await recordFailure(db, run.id, item.id, 'template_error', (error as Error).message);
          return { expiresAt: null };
        }
        try {
          content = (await withOutputPolicy(content, { platform: this.#platform, run, projectId })) as string;
        } catch (error) {
          if (!isPolicyViolation(error)) throw error;
          const failure = failureOf(error, false);
          await recordFailure(db, run.id, item.id, failure.code, failure.message);
          return { expiresAt: null };
        }
      }
      const approval: Approval = {
        approver_role: item.approver_role ?? 'editor',
        instructions: item.instructions,
        content,
        requested_at: iso(now),
        expires_at: iso(expires),
        on_timeout: item.on_timeout ?? 'fail',
        decision: null,
        decided_at: null,
        decided_by_key_id: null,
        comment: null,
        timed_out: false,
      };
      const workspace = await db
        .selectFrom('workspaces')
        .selectAll()
        .where('id', '=', run.workspace_id)
        .executeTakeFirstOrThrow();
      const url = await approvalUrl(this.#platform, workspace, run.id, item.id, expires);
      await db.transaction().execute(async (trx) => {
        const changed = await trx
          .updateTable('workflow_run_steps')
          .set({ status: 'awaiting_approval', started_at: iso(now), attempts: 1, approval: JSON.stringify(approval) })
          .where('run_id', '=', run.id)
          .where('step_id', '=', item.id)
          .where('status', '=', 'pending')
          .executeTakeFirst();
        if (Number(changed.numUpdatedRows) === 0) return;
        await refreshRunStatus(trx, run.id);
        await recordEvent(
          trx,
          run.workspace_id,
          'workflow.run.approval_required',
          {
            workflow_id: run.workflow_id,
            run_id: run.id,
            step_id: item.id,
            approval_url: url,
            approver_role: approval.approver_role,
            expires_at: approval.expires_at,
          },
          now,
        );
      });
      return { expiresAt: approval.expires_at };
    });
    if (expiresAt === null) return { status: 'failure', output: null };

    let row = await stepRow(db, run.id, item.id);
    if (row?.status === 'awaiting_approval') {
      // Woken by the decision's signal, or by the timeout; our table says which.
      await step.waitForSignal({
        name: `decision:${item.id}`,
        signal: signalName(run.id, item.id),
        timeout: new Date(expiresAt),
      });
      row = await stepRow(db, run.id, item.id);
      if (row?.status === 'awaiting_approval') row = await this.#timeOut(run.id, item);
    }
    if (!row) return { status: 'cancelled', output: null };
    return recordedOutcome(row);
  }

  /** Nobody decided in time: `on_timeout` decides (approve, reject) or fails the step. A decision that came at the last moment stands. */
  async #timeOut(runId: string, item: Extract<Step, { type: 'approval' }>): Promise<StepRow | undefined> {
    const db = this.#platform.db;
    const onTimeout = item.on_timeout ?? 'fail';
    await db.transaction().execute(async (trx) => {
      const row = await stepRow(trx, runId, item.id);
      if (row?.status !== 'awaiting_approval') return;
      const now = iso(new Date());
      const approval = {
        ...(JSON.parse(row.approval!) as Approval),
        timed_out: true,
        decided_at: onTimeout === 'fail' ? null : now,
        decision: onTimeout === 'fail' ? null : onTimeout,
      };
      const output =
        onTimeout === 'fail' ? null : { decision: onTimeout, comment: null, decided_by_key_id: null, timed_out: true };
      await trx
        .updateTable('workflow_run_steps')
        .set({
          status: onTimeout === 'approve' ? 'success' : onTimeout === 'reject' ? 'rejected' : 'failure',
          approval: JSON.stringify(approval),
          output: output === null ? null : JSON.stringify(output),
          error:
            onTimeout === 'fail'
              ? JSON.stringify({
                  code: 'approval_timed_out',
                  message: `Nobody decided on ${item.id} by ${approval.expires_at}.`,
                })
              : null,
          finished_at: now,
        })
        .where('run_id', '=', runId)
        .where('step_id', '=', item.id)
        .where('status', '=', 'awaiting_approval')
        .execute();
      await refreshRunStatus(trx, runId);
    });
    return stepRow(db, runId, item.id);
  }

  /** The run's end: its status, outputs or error, the steps left `cancelled`, and `workflow.run.completed`, at once. */
  async #finish(
    run: RunRow,
    definition: Definition,
    scope: Scope,
    projectId: string | null,
    failure: RunError | null,
  ): Promise<void> {
    const now = new Date();
    let outputs: Record<string, Value> | null = null;
    if (!failure) {
      try {
        outputs = Object.fromEntries(
          Object.entries(definition.outputs ?? {}).map(([name, template]) => [name, renderTemplate(template, scope)]),
        );
      } catch (error) {
        failure = {
          step_id: null,
          code: 'template_error',
          message: `The outputs could not be rendered: ${(error as Error).message}`,
        };
      }
    }
    if (outputs) {
      try {
        outputs = (await withOutputPolicy(outputs, { platform: this.#platform, run, projectId })) as Record<
          string,
          Value
        >;
      } catch (error) {
        if (!isPolicyViolation(error)) throw error;
        const withheld = failureOf(error, false);
        failure = { step_id: null, code: withheld.code, message: withheld.message };
        outputs = null;
      }
    }
    await this.#platform.db.transaction().execute(async (trx) => {
      const current = await trx.selectFrom('workflow_runs').selectAll().where('id', '=', run.id).executeTakeFirst();
      if (!current || FINAL_RUN_STATUSES.includes(current.status as never)) return;
      const status = failure ? 'failure' : 'success';
      const startedAt = current.started_at ?? iso(now);
      await cancelOpenSteps(trx, run.id, now);
      await trx
        .updateTable('workflow_runs')
        .set({
          status,
          outputs: outputs === null ? null : JSON.stringify(outputs),
          error: failure ? JSON.stringify(failure) : null,
          finished_at: iso(now),
          started_at: startedAt,
        })
        .where('id', '=', run.id)
        .execute();
      await recordEvent(
        trx,
        run.workspace_id,
        'workflow.run.completed',
        {
          workflow_id: run.workflow_id,
          run_id: run.id,
          status,
          duration_ms: Math.max(0, now.getTime() - Date.parse(startedAt)),
          cost_usd: roundCost(current.cost_usd),
          error: failure,
        },
        now,
      );
    });
  }
}

type StepApi = Parameters<Parameters<OpenWorkflow['implementWorkflow']>[1]>[0]['step'];

function isPolicyViolation(error: unknown): boolean {
  return error instanceof Problem && error.code === 'policy_violation';
}

/** A step that does work, as opposed to an approval, which waits for a decision. */
type WorkStep = Exclude<Step, { type: 'approval' }>;

/** A step's retries: how many attempts, on which failures, and the engine's retry policy (the step's backoff). */
function retriesOf(item: WorkStep) {
  const retry = item.retry ?? {};
  const maxAttempts = retry.max_attempts ?? 3;
  return {
    maxAttempts,
    retryOn: (retry.retry_on ?? ['timeout', 'rate_limited', 'provider_error']) as string[],
    policy: {
      maximumAttempts: maxAttempts,
      initialInterval: `${retry.initial_ms ?? 1000}ms` as const,
      backoffCoefficient: retry.multiplier ?? 2,
      maximumInterval: `${retry.max_ms ?? 30_000}ms` as const,
    },
  };
}

declare module '../../platform/context.ts' {
  interface Services {
    /** The workflows' durable runtime (started once the server listens). */
    workflows: WorkflowRuntime;
  }
}

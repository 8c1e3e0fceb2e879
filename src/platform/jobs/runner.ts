// The job runner: background work of any feature (voice training, knowledge ingestion, …), driven from the `jobs`
// table so that a crash or restart loses nothing.
//   - enqueueJob() writes a job in the transaction of the change that needs it: no job without its change, and the
//     runner is woken when (and only if) that transaction commits (notify.ts).
//   - Each process runs one JobRunner. It claims due jobs with a lease in one statement (`for update skip locked` on
//     PostgreSQL, so two runners never claim the same job), runs the handler of the job's kind, and records the end
//     only while it still holds the lease: `done`, or a retry after a backoff, or `failed` after `max_attempts`.
//   - A runner that dies leaves its lease to run out (`leaseMs`); another runner (or the same one, restarted) runs the
//     job again. A handler must therefore be safe to run twice (at-least-once), like a webhook receiver.
//   - stop() claims nothing more and waits for the jobs in flight to end and be recorded.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { DatabaseKind } from '../../storage/database.ts';
import { PENDING } from '../../storage/partial-indexes.ts';
import type { Database, JobsTable } from '../../storage/schema.ts';
import type { Clock } from '../clock.ts';
import { iso } from '../clock.ts';
import { newId } from '../ids.ts';
import { ATTR_WORKSPACE_ID, inSpan, SpanKind } from '../telemetry.ts';
import { type BackgroundWorker, ClaimLoop, newLease } from './claim-loop.ts';
import { notifyOnCommit } from './notify.ts';

export const JOBS_CHANNEL = 'jobs';
export const DEFAULT_MAX_ATTEMPTS = 5;
/** Until a running job's lease runs out and another runner may take it over; RunningJob.extendLease() renews it. */
export const DEFAULT_LEASE_MS = 5 * 60_000;
/** How often an idle runner looks for retries that fell due, run-out leases and other SQLite processes' jobs. */
export const DEFAULT_POLL_MS = 500;
/** How long stop() lets running jobs finish before it aborts their signals (see JobRunner.stop). */
export const DEFAULT_STOP_GRACE_MS = 10_000;

/**
 * The payload type of every job kind. A feature declares its kinds by merging into this interface:
 *
 *     declare module '../../platform/jobs/runner.ts' {
 *       interface JobPayloads { 'voices.train': { voice_id: string } }
 *     }
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging (`declare module`), which a type alias cannot take
export interface JobPayloads {}
export type JobKind = keyof JobPayloads & string;

/** The wait before attempt `attempt + 1` after attempt `attempt` failed: 10 s, 20 s, 40 s … up to 1 h, ±10 %. */
export function defaultRetryDelayMs(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(3_600_000, 10_000 * 2 ** (attempt - 1));
  return Math.round(base * (1 + (random() * 2 - 1) * 0.1));
}

export interface RunningJob<Payload> {
  id: string;
  kind: string;
  workspaceId: string | null;
  payload: Payload;
  /** 1 for the first attempt. */
  attempt: number;
  maxAttempts: number;
  /** Aborted when the job's lease runs out: another runner may be running it now; stop and let it. */
  signal: AbortSignal;
  /** Renews the lease for long work; false when the lease was lost (stop). */
  extendLease(): Promise<boolean>;
  db: Kysely<Database>;
  clock: Clock;
  logger: Logger;
}

export interface JobDefinition<Payload = unknown> {
  /** Does the work; throwing fails this attempt (retried after a backoff until max_attempts, then `failed`). */
  run(job: RunningJob<Payload>): Promise<void>;
  /** The wait before the next attempt after attempt `attempt` failed; defaultRetryDelayMs otherwise. */
  retryDelayMs?(attempt: number): number;
}

export type JobDefinitions = { [K in JobKind]?: JobDefinition<JobPayloads[K]> } & Record<string, JobDefinition>;

export interface NewJob<K extends JobKind> {
  kind: K;
  payload: JobPayloads[K];
  /** The workspace it belongs to (deleted with it); null for work of the whole service. */
  workspaceId: string | null;
  now: Date;
  /** Not before this instant (default: at once). */
  runAt?: Date;
  maxAttempts?: number;
}

/**
 * Enqueues a job in the transaction of the change that needs it (a Transaction, not the database: no job without its
 * change). The runners are woken when the transaction commits. Returns the job's id.
 */
export async function enqueueJob<K extends JobKind>(trx: Transaction<Database>, job: NewJob<K>): Promise<string> {
  const id = newId('job', job.now);
  await trx
    .insertInto('jobs')
    .values({
      id,
      kind: job.kind,
      workspace_id: job.workspaceId,
      payload: JSON.stringify(job.payload),
      status: 'pending',
      attempts: 0,
      max_attempts: job.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      run_at: iso(job.runAt ?? job.now),
      leased_until: null,
      lease_token: null,
      last_error: null,
      created_at: iso(job.now),
      finished_at: null,
    })
    .execute();
  await notifyOnCommit(trx, JOBS_CHANNEL);
  return id;
}

type Job = Selectable<JobsTable>;

export interface JobRunnerOptions {
  db: Kysely<Database>;
  kind: DatabaseKind;
  databaseUrl: string;
  /** Schedules retries (tests move it); leases measure real time. */
  clock: Clock;
  logger: Logger;
  /** The handler of every kind this runner runs; it claims no job of another kind. */
  definitions: JobDefinitions;
  concurrency?: number;
  leaseMs?: number;
  pollMs?: number;
  stopGraceMs?: number;
}

/** The abort reason of a job whose runner is stopping: the attempt is handed back, not counted as failed. */
class RunnerStopping extends Error {
  constructor() {
    super('the job runner is stopping');
  }
}

export class JobRunner implements BackgroundWorker {
  readonly name = 'jobs';
  readonly #options: Required<JobRunnerOptions>;
  readonly #kinds: string[];
  readonly #loop: ClaimLoop<Job>;
  /** The abort controllers of the jobs running now, by job (its latest attempt). */
  readonly #running = new Map<string, AbortController>();

  constructor(options: JobRunnerOptions) {
    this.#options = {
      ...options,
      concurrency: options.concurrency ?? 10,
      leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
      pollMs: options.pollMs ?? DEFAULT_POLL_MS,
      stopGraceMs: options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS,
    };
    this.#kinds = Object.keys(options.definitions);
    this.#loop = new ClaimLoop<Job>({
      name: this.name,
      kind: options.kind,
      databaseUrl: options.databaseUrl,
      channel: JOBS_CHANNEL,
      logger: options.logger,
      concurrency: this.#options.concurrency,
      pollMs: this.#options.pollMs,
      claim: (limit) => this.#claim(limit),
      run: async (job) => {
        await this.#run(job);
        return undefined;
      },
      describe: (job) => ({ job_id: job.id, job_kind: job.kind }),
    });
  }

  start(): Promise<void> {
    return this.#loop.start();
  }

  wake(): void {
    this.#loop.wake();
  }

  /**
   * Claims nothing more and waits for the running jobs. Those still running after `stopGraceMs` have their signal
   * aborted: a job that stops then is handed back at once (its attempt not counted) for another runner or the next
   * start, so a shutdown neither waits on a long job for minutes nor leaves it leased until the lease runs out.
   */
  async stop(): Promise<void> {
    const stopped = this.#loop.stop();
    const grace = setTimeout(() => {
      for (const controller of this.#running.values()) controller.abort(new RunnerStopping());
    }, this.#options.stopGraceMs);
    try {
      await stopped;
    } finally {
      clearTimeout(grace);
    }
  }

  /** Leases up to `limit` due jobs of the known kinds, counting the attempt, in one statement. */
  async #claim(limit: number): Promise<Job[]> {
    const { db, clock, kind, leaseMs } = this.#options;
    if (this.#kinds.length === 0) return [];
    const lease = newLease(leaseMs);
    const due = db
      .selectFrom('jobs')
      .select('id')
      .where('status', '=', PENDING)
      .where('run_at', '<=', iso(clock.now()))
      .where('kind', 'in', this.#kinds)
      .where((eb) => eb.or([eb('leased_until', 'is', null), eb('leased_until', '<=', lease.expired)]))
      .orderBy('run_at')
      .limit(limit);
    return db
      .updateTable('jobs')
      .set((eb) => ({ leased_until: lease.until, lease_token: lease.token, attempts: eb('attempts', '+', 1) }))
      .where('id', 'in', kind === 'postgres' ? due.forUpdate().skipLocked() : due)
      .returningAll()
      .execute();
  }

  async #run(job: Job): Promise<void> {
    const { db, clock, logger, leaseMs, definitions } = this.#options;
    const definition = definitions[job.kind]!;
    const ours = (query: ReturnType<typeof updateJob>) =>
      query.where('id', '=', job.id).where('lease_token', '=', job.lease_token);
    // This runner claimed the job again while its earlier attempt still runs here: that attempt's lease ran out, and
    // it must know before this one does anything (its lease timer may not have fired yet: the claim and this attempt
    // can run in one turn of the event loop).
    this.#running.get(job.id)?.abort(new Error('the job lease ran out'));
    if (job.attempts > job.max_attempts) {
      // Its last attempt's runner died (the lease ran out): the attempts are used up.
      await ours(updateJob(db))
        .set({
          status: 'failed',
          finished_at: iso(clock.now()),
          leased_until: null,
          lease_token: null,
          last_error: job.last_error ?? 'the lease of the last attempt ran out',
        })
        .execute();
      return;
    }
    const controller = new AbortController();
    this.#running.set(job.id, controller);
    // The signal aborts when the lease recorded in the database runs out, not `leaseMs` after this line: from then on
    // another runner may claim the job, and this run must already know it lost it (the claim came first on a loaded
    // machine, and the second attempt had ended before the first one's signal said so).
    const abortAt = (until: number) => {
      const timer = setTimeout(
        () => controller.abort(new Error('the job lease ran out')),
        Math.max(0, until - Date.now()),
      );
      timer.unref();
      return timer;
    };
    let timer = abortAt(job.leased_until ? Date.parse(job.leased_until) : Date.now() + leaseMs);
    let error: unknown;
    // A span per attempt (a trace of its own), named after the job's kind.
    const attributes = {
      'content_service.job.id': job.id,
      'content_service.job.kind': job.kind,
      'content_service.job.attempt': job.attempts,
      ...(job.workspace_id ? { [ATTR_WORKSPACE_ID]: job.workspace_id } : {}),
    };
    try {
      await inSpan(
        `job ${job.kind}`,
        SpanKind.INTERNAL,
        attributes,
        () =>
          definition.run({
            id: job.id,
            kind: job.kind,
            workspaceId: job.workspace_id,
            payload: JSON.parse(job.payload),
            attempt: job.attempts,
            maxAttempts: job.max_attempts,
            signal: controller.signal,
            extendLease: async () => {
              const until = Date.now() + leaseMs;
              const result = await ours(updateJob(db))
                .set({ leased_until: iso(new Date(until)) })
                .where('status', '=', 'pending')
                .executeTakeFirst();
              if (Number(result.numUpdatedRows) !== 1) return false;
              clearTimeout(timer);
              timer = abortAt(until);
              return true;
            },
            db,
            clock,
            logger,
          }),
        { root: true },
      );
    } catch (failure) {
      error = failure ?? new Error('the job failed');
    } finally {
      clearTimeout(timer);
      if (this.#running.get(job.id) === controller) this.#running.delete(job.id);
    }
    const now = clock.now();
    if (controller.signal.reason instanceof RunnerStopping) {
      await ours(updateJob(db))
        .set({ run_at: iso(now), leased_until: null, lease_token: null, attempts: job.attempts - 1 })
        .execute();
      logger.warn(
        { job_id: job.id, job_kind: job.kind },
        'a job was interrupted by the shutdown; it is handed back to run again',
      );
      return;
    }
    const lastError = error === undefined ? null : String((error as Error)?.message ?? error).slice(0, 1000);
    const retry = error !== undefined && job.attempts < job.max_attempts;
    const result = await ours(updateJob(db))
      .set(
        error === undefined
          ? { status: 'done', finished_at: iso(now), leased_until: null, lease_token: null, last_error: null }
          : retry
            ? {
                run_at: iso(new Date(now.getTime() + (definition.retryDelayMs ?? defaultRetryDelayMs)(job.attempts))),
                leased_until: null,
                lease_token: null,
                last_error: lastError,
              }
            : { status: 'failed', finished_at: iso(now), leased_until: null, lease_token: null, last_error: lastError },
      )
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) {
      logger.warn(
        { job_id: job.id, job_kind: job.kind },
        'a job ended after its lease ran out; another runner owns it now',
      );
    } else if (error !== undefined) {
      logger.warn(
        { err: error, job_id: job.id, job_kind: job.kind, attempt: job.attempts, retry },
        retry ? 'a job attempt failed; it is retried' : 'a job failed for good',
      );
    }
  }
}

const updateJob = (db: Kysely<Database>) => db.updateTable('jobs');

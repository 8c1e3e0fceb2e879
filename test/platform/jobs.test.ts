// The platform's job runner (src/platform/jobs/runner.ts) on real SQLite and PostgreSQL databases: a job exists only
// with the transaction that enqueued it, runs once, retries with backoff and then fails, runs again when its lease
// runs out, never runs twice at once under two runners on one PostgreSQL, and stop() waits for what is in flight.
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { features } from '../../src/features/index.ts';
import { ManualClock } from '../../src/platform/clock.ts';
import {
  defaultRetryDelayMs,
  enqueueJob,
  type JobDefinitions,
  JobRunner,
  type NewJob,
} from '../../src/platform/jobs/runner.ts';
import { migrate, openStorage, type Storage } from '../../src/storage/database.ts';
import { eventually } from '../support/expect.ts';
import { capturedLogger } from '../support/logs.ts';
import { databaseKinds, freshDatabase, type TestDatabase } from '../support/server.ts';

declare module '../../src/platform/jobs/runner.ts' {
  interface JobPayloads {
    'test.work': { n: number };
  }
}

/** What the runners logged at warn and above, as parsed lines. */
const { logger, lines: logged } = capturedLogger<{ msg: string; job_id?: string }>();

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Lets the event loop turn a few times (timers of 0 ms, I/O callbacks), without waiting for any duration. */
async function turns(n = 20): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe.each(databaseKinds)('the job runner on %s', (kind) => {
  let database: TestDatabase;
  let storage: Storage;
  let clock: ManualClock;
  const runners: JobRunner[] = [];
  const storages: Storage[] = [];
  const releases: Array<() => void> = [];

  beforeEach(async () => {
    database = await freshDatabase(kind);
    storage = openStorage(database.url);
    await migrate(storage.db, features);
    clock = new ManualClock('2026-01-01T00:00:00.000Z');
  });

  afterEach(async () => {
    for (const release of releases.splice(0)) release();
    await Promise.all(runners.splice(0).map((runner) => runner.stop()));
    await Promise.all(storages.splice(0).map((s) => s.close()));
    await storage.close();
    await database.drop();
  });

  async function startRunner(
    definitions: JobDefinitions,
    options: { leaseMs?: number; pollMs?: number; stopGraceMs?: number; on?: Storage } = {},
  ): Promise<JobRunner> {
    const on = options.on ?? storage;
    const runner = new JobRunner({
      db: on.db,
      kind,
      databaseUrl: database.url,
      clock,
      logger,
      definitions,
      leaseMs: options.leaseMs,
      pollMs: options.pollMs ?? 50,
      stopGraceMs: options.stopGraceMs,
    });
    runners.push(runner);
    await runner.start();
    return runner;
  }

  async function enqueue(job: Partial<NewJob<'test.work'>> = {}, commit = true): Promise<string> {
    let id = '';
    await storage.db
      .transaction()
      .execute(async (trx) => {
        id = await enqueueJob(trx, {
          kind: 'test.work',
          payload: { n: 1 },
          workspaceId: null,
          now: clock.now(),
          ...job,
        });
        if (!commit) throw new Error('roll back');
      })
      .catch((error: unknown) => {
        if (commit || (error as Error).message !== 'roll back') throw error;
      });
    return id;
  }

  const job = (id: string) => storage.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  test('a job enqueued in a committed transaction runs once, with its payload', async () => {
    const runs: Array<{ id: string; n: number; attempt: number }> = [];
    const runner = await startRunner({
      'test.work': { run: async (j) => void runs.push({ id: j.id, n: j.payload.n, attempt: j.attempt }) },
    });
    const id = await enqueue({ payload: { n: 42 } });
    const done = await eventually(
      () => job(id),
      (row) => row.status === 'done',
    );
    expect(done).toMatchObject({
      attempts: 1,
      leased_until: null,
      lease_token: null,
      last_error: null,
      finished_at: clock.now().toISOString(),
    });
    // Woken again, it finds nothing to run.
    runner.wake();
    const marker = await enqueue({ payload: { n: 2 } });
    await eventually(
      () => job(marker),
      (row) => row.status === 'done',
    );
    expect(runs).toEqual([
      { id, n: 42, attempt: 1 },
      { id: marker, n: 2, attempt: 1 },
    ]);
  });

  test('a job enqueued in a rolled-back transaction never exists and never runs', async () => {
    const ran: number[] = [];
    await startRunner({ 'test.work': { run: async (j) => void ran.push(j.payload.n) } });
    await enqueue({ payload: { n: 1 } }, false);
    const marker = await enqueue({ payload: { n: 2 } });
    await eventually(
      () => job(marker),
      (row) => row.status === 'done',
    );
    expect(ran).toEqual([2]);
    expect(await storage.db.selectFrom('jobs').select('id').execute()).toEqual([{ id: marker }]);
  });

  test('a failing job is retried after growing waits, then fails for good after max_attempts', async () => {
    const attempts: number[] = [];
    const runner = await startRunner({
      'test.work': {
        run: async (j) => {
          attempts.push(j.attempt);
          throw new Error(`attempt ${j.attempt} broke`);
        },
        retryDelayMs: (attempt) => 1000 * 2 ** (attempt - 1),
      },
    });
    const start = clock.now().getTime();
    const id = await enqueue({ maxAttempts: 3 });
    const first = await eventually(
      () => job(id),
      (row) => row.attempts === 1 && row.lease_token === null,
    );
    expect(first).toMatchObject({
      status: 'pending',
      run_at: new Date(start + 1000).toISOString(),
      last_error: 'attempt 1 broke',
    });
    // Not due yet: woken, the runner leaves it.
    runner.wake();
    await turns();
    expect((await job(id)).attempts).toBe(1);

    clock.advance(1000);
    runner.wake();
    const second = await eventually(
      () => job(id),
      (row) => row.attempts === 2 && row.lease_token === null,
    );
    expect(second).toMatchObject({
      status: 'pending',
      run_at: new Date(start + 1000 + 2000).toISOString(),
      last_error: 'attempt 2 broke',
    });

    clock.advance(2000);
    runner.wake();
    const last = await eventually(
      () => job(id),
      (row) => row.status === 'failed',
    );
    expect(last).toMatchObject({
      attempts: 3,
      last_error: 'attempt 3 broke',
      finished_at: new Date(start + 3000).toISOString(),
      lease_token: null,
    });
    expect(attempts).toEqual([1, 2, 3]);
  });

  test('the default backoff doubles from 10 s up to an hour, within ±10 %', () => {
    const middle = () => 0.5;
    expect([1, 2, 3, 4, 10, 20].map((n) => defaultRetryDelayMs(n, middle))).toEqual([
      10_000, 20_000, 40_000, 80_000, 3_600_000, 3_600_000,
    ]);
    expect(defaultRetryDelayMs(1, () => 0)).toBe(9_000);
    expect(defaultRetryDelayMs(1, () => 0.999999)).toBeLessThanOrEqual(11_000);
  });

  test('a job whose lease runs out (its runner hung or died) is run again, and the late end of the first run changes nothing', async () => {
    const hung = deferred();
    releases.push(hung.resolve);
    // By attempt: on a loaded machine the second attempt's run may begin before the first one's.
    const signals = new Map<number, AbortSignal>();
    await startRunner(
      {
        'test.work': {
          run: async (j) => {
            signals.set(j.attempt, j.signal);
            if (j.attempt === 1) await hung.promise;
          },
        },
      },
      { leaseMs: 300 },
    );
    const id = await enqueue();
    const done = await eventually(
      () => job(id),
      (row) => row.status === 'done',
    );
    expect(done.attempts).toBe(2);
    expect([...signals.keys()].sort()).toEqual([1, 2]);
    expect(signals.get(1)!.aborted).toBe(true);
    // The first run ends now: its lease is gone, so it records nothing.
    hung.resolve();
    await eventually(
      async () => logged.filter((line) => line.job_id === id).map((line) => line.msg),
      (messages) => messages.includes('a job ended after its lease ran out; another runner owns it now'),
    );
    expect(await job(id)).toMatchObject({ status: 'done', attempts: 2, last_error: null });
  });

  test('stop() claims nothing more and waits for the jobs in flight to end and be recorded', async () => {
    const started = deferred();
    const finish = deferred();
    releases.push(finish.resolve);
    const runner = await startRunner({
      'test.work': {
        run: async () => {
          started.resolve();
          await finish.promise;
        },
      },
    });
    const id = await enqueue();
    await started.promise;
    let stopped = false;
    const stopping = runner.stop().then(() => (stopped = true));
    await turns();
    expect(stopped).toBe(false);
    const later = await enqueue();
    finish.resolve();
    await stopping;
    expect((await job(id)).status).toBe('done');
    // Enqueued after stop(): left for another runner.
    expect(await job(later)).toMatchObject({ status: 'pending', attempts: 0 });
  });

  test('stop() aborts a job still running after its grace; the job is handed back, its attempt not counted, and runs again', async () => {
    const started = deferred();
    const runner = await startRunner(
      {
        'test.work': {
          // A long job that honours its signal.
          run: async (j) => {
            started.resolve();
            await new Promise<void>((_resolve, reject) =>
              j.signal.addEventListener('abort', () => reject(j.signal.reason), { once: true }),
            );
          },
        },
      },
      { stopGraceMs: 50 },
    );
    const id = await enqueue();
    await started.promise;
    await runner.stop();
    expect(await job(id)).toMatchObject({
      status: 'pending',
      attempts: 0,
      leased_until: null,
      lease_token: null,
      run_at: clock.now().toISOString(),
    });
    const ran = deferred();
    await startRunner({ 'test.work': { run: async () => ran.resolve() } });
    await ran.promise;
    expect(
      await eventually(
        () => job(id),
        (row) => row.status === 'done',
      ),
    ).toMatchObject({ status: 'done', attempts: 1 });
  });

  test.runIf(kind === 'postgres')(
    'two runners on one PostgreSQL database never run a job twice, nor at the same time',
    async () => {
      const running = new Set<string>();
      const runs = new Map<string, number>();
      let overlaps = 0;
      const second = openStorage(database.url);
      storages.push(second);
      const definitions = (db: Storage['db']): JobDefinitions => ({
        'test.work': {
          run: async (j) => {
            if (running.has(j.id)) overlaps++;
            running.add(j.id);
            await db.selectFrom('jobs').select('id').where('id', '=', j.id).execute();
            running.delete(j.id);
            runs.set(j.id, (runs.get(j.id) ?? 0) + 1);
          },
        },
      });
      await startRunner(definitions(storage.db));
      await startRunner(definitions(second.db), { on: second });
      const ids: string[] = [];
      await storage.db.transaction().execute(async (trx) => {
        for (let n = 0; n < 200; n++)
          ids.push(await enqueueJob(trx, { kind: 'test.work', payload: { n }, workspaceId: null, now: clock.now() }));
      });
      await eventually(
        () =>
          storage.db
            .selectFrom('jobs')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('status', '=', 'done')
            .executeTakeFirstOrThrow(),
        (row) => Number(row.n) === ids.length,
        30_000,
      );
      expect(overlaps).toBe(0);
      expect([...runs.values()].every((n) => n === 1)).toBe(true);
      expect(runs.size).toBe(ids.length);
    },
  );
});

import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { Problem } from '../../src/platform/problems.ts';
import { workerPool } from '../../src/platform/worker-pool.ts';
import type * as FailingWorker from './fixtures/failing-worker.ts';
import type * as ThreadWorker from './fixtures/thread-worker.ts';

const linux = existsSync('/proc/thread-self/stat');

describe.skipIf(!linux)('the worker pool', () => {
  test("runs its threads at the lowest CPU priority, leaving the event loop's thread at its own", async () => {
    const run = workerPool<typeof ThreadWorker>(new URL('./fixtures/thread-worker.ts', import.meta.url));
    expect(await run('niceOfThread', null)).toEqual({ nice: 19, worker: true });
    const mainFields = readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1]!.split(' ');
    expect(Number(mainFields[16])).toBeLessThan(19);
  });
});

describe('idle threads', () => {
  const threadWorker = new URL('./fixtures/thread-worker.ts', import.meta.url);
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  test('a thread serves the calls that come while it waits, and ends once it has waited idleMs', async () => {
    const run = workerPool<typeof ThreadWorker>(threadWorker, { idleMs: 500 });
    const first = await run('threadOf', null);
    await pause(100);
    expect(await run('threadOf', null)).toBe(first);
    // Bounded: the thread ends within a few idle periods, and the next call starts another.
    let next = first;
    for (let attempt = 0; attempt < 20 && next === first; attempt++) {
      await pause(500);
      next = await run('threadOf', null);
    }
    expect(next).not.toBe(first);
  });
});

describe('a thread that ends or fails', () => {
  const failing = new URL('./fixtures/failing-worker.ts', import.meta.url);

  const refusal = async (call: Promise<unknown>) => {
    const error = await call.then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(Problem);
    return error as Problem;
  };

  test('a thread that exits during a call fails that call with a retryable 503; the next call gets a new thread', async () => {
    const run = workerPool<typeof FailingWorker>(failing);
    const problem = await refusal(run('exitThread', null));
    expect(problem).toMatchObject({ code: 'service_unavailable', status: 503, headers: { 'Retry-After': '1' } });
    expect(problem.message).toMatch(/worker thread .* ended before it finished/);
    expect(await run('double', 21)).toBe(42);
  });

  test("a function's own errors pass through, and its thread goes on", async () => {
    const run = workerPool<typeof FailingWorker>(failing);
    const error = await run('throwNow', null).catch((reason: unknown) => reason);
    expect(error).not.toBeInstanceOf(Problem);
    expect(String(error)).toContain('a refusal of the function');
    expect(await run('double', 1)).toBe(2);
  });
});

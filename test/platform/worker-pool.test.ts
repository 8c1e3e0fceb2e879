import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { workerPool } from '../../src/platform/worker-pool.ts';
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

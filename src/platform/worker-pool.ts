// A pool of worker threads (piscina) for work whose cost grows with its input, so that it does not hold the event
// loop every other request is served on. Made on first use; one thread fewer than the cores (the event loop has
// one); a thread idle for WORKER_IDLE_MS ends, and none keeps the process alive. The threads run at the lowest CPU
// priority (nice 19, a per-thread setting on Linux): when the cores are busy, the event loop, which serves every
// tenant's requests, is scheduled before one tenant's long text.
//
// A thread that ends during a call (it exited, or Node stopped it at its heap limit) fails the calls it was running
// (one, or up to `concurrentTasksPerWorker`) with a retryable `503 service_unavailable`; the next call gets a new
// thread. The heap limit bounds what one thread may hold; Node cannot always stop a thread before an allocation over
// it fails, and such a failure ends the process.
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { Problem } from './problems.ts';

/** The most heap (old generation) one worker thread may use. */
export const WORKER_HEAP_MB = 1024;

/**
 * How long a thread waits idle before it ends. A thread's start holds the event loop too: Node starts it at the
 * process's priority before piscina lowers it, and it builds its heap again (the tokenizer's tables, the document
 * and extraction libraries). A minute keeps the threads of a workload that pauses between bursts, and still gives
 * their memory back once it is over.
 */
export const WORKER_IDLE_MS = 60_000;

/** What a call whose thread ended is answered with. */
function threadEnded(): Problem {
  return new Problem(
    'service_unavailable',
    'The worker thread that worked on this request ended before it finished; retry the request.',
    { headers: { 'Retry-After': '1' } },
  );
}

/**
 * Whether piscina rejected a call because its thread ended, not because the function threw: a thread out of its heap
 * (`ERR_WORKER_OUT_OF_MEMORY`), or one that exited (piscina's "worker exited with code: N").
 */
function endedThread(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return (
    (error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY' || error.message.startsWith('worker exited with')
  );
}

interface PoolOptions {
  /** How many calls a thread runs at once: 1, or more for work that mostly waits (a fetch). */
  concurrentTasksPerWorker?: number;
  /** How long a thread waits idle before it ends (WORKER_IDLE_MS). */
  idleMs?: number;
}

/**
 * The `run` of a pool of threads of `workerFile` (a module whose exported functions take one cloneable argument):
 * `run(name, input)` calls the function `name` in a thread. A thread runs one call at a time, or up to
 * `concurrentTasksPerWorker` for work that mostly waits (a fetch).
 */
export function workerPool<Worker extends Record<string, (input: never) => unknown>>(
  workerFile: URL,
  { concurrentTasksPerWorker = 1, idleMs = WORKER_IDLE_MS }: PoolOptions = {},
): <K extends keyof Worker & string>(
  name: K,
  input: Parameters<Worker[K]>[0],
) => Promise<Awaited<ReturnType<Worker[K]>>> {
  let pool: Piscina | undefined;
  return (name, input) => {
    pool ??= new Piscina({
      filename: workerFile.href,
      minThreads: 0,
      maxThreads: Math.max(1, availableParallelism() - 1),
      idleTimeout: idleMs,
      niceIncrement: 19,
      concurrentTasksPerWorker,
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
    });
    return pool.run(input, { name }).catch((error: unknown) => {
      throw endedThread(error) ? threadEnded() : error;
    });
  };
}

// A pool of worker threads (piscina) for work whose cost grows with its input, so that it does not hold the event
// loop every other request is served on. Made on first use; one thread fewer than the cores (the event loop has
// one); idle threads end and never keep the process alive. The threads run at the lowest CPU priority (nice 19, a
// per-thread setting on Linux): when the cores are busy, the event loop, which serves every tenant's requests, is
// scheduled before one tenant's long text.
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';

/**
 * The `run` of a pool of threads of `workerFile` (a module whose exported functions take one cloneable argument):
 * `run(name, input)` calls the function `name` in a thread. A thread runs one call at a time, or up to
 * `concurrentTasksPerWorker` for work that mostly waits (a fetch).
 */
export function workerPool<Worker extends Record<string, (input: never) => unknown>>(
  workerFile: URL,
  { concurrentTasksPerWorker = 1 }: { concurrentTasksPerWorker?: number } = {},
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
      idleTimeout: 10_000,
      niceIncrement: 19,
      concurrentTasksPerWorker,
    });
    return pool.run(input, { name });
  };
}

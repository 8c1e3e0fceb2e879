// How V8's garbage collector runs in the server, set once at the start before the modules load (V8 reads both flags
// at each collection); an operator's own choice of either flag (`node --heap-growing-percent=N`,
// `--[no-]concurrent-marking`) is kept.
//
// - Heap growth: how far the old generation may grow past what the last full collection left live before the next
//   one starts. V8 picks a factor between 1.1 and 4 from how fast it collects, and 1.1 after a collection that
//   reduced memory (the one after the start, start-memory.ts), which the following collections keep close to. The
//   server's live heap is large (its modules, the validators, the tokenizer's tables), and a factor near 1.1 leaves a
//   few megabytes of room: under one tenant's large bodies full collections come one after another, each with
//   marking that every tenant's requests wait for. Allowed to double, the old generation is collected far less often;
//   the heap may hold as much again in garbage under load (the worker threads' heaps too: the flag is the process's).
// - Marking on one core: V8 marks a full collection's live objects in threads of its own beside the event loop.
//   When the process has one core (its CPU affinity, or a container's CPU quota where Node reads it), those threads
//   take the core from the event loop in time slices of the scheduler's choosing, and what they have not marked by
//   the time the heap needs it is marked on the event loop's thread at once: long steps that requests wait behind.
//   Without them V8 marks on the event loop's thread in small steps between its tasks; with two cores or more the
//   threads run beside it and stay on.
// - No memory reducer (COMMAND_LINE_FLAGS): V8 compacts the whole heap to give memory back when it judges the
//   program idle, from how little its event loop's thread allocates. A server whose long work runs in worker threads
//   allocates little on that thread while it is busiest: under one tenant's large bodies V8 takes it for idle and
//   runs these collections mid-load, the longest pauses of its event loop there. The start's memory is given back by
//   the collection start-memory.ts asks for; after that the heap is collected as it fills. V8 reads this flag only
//   when it makes the heap, before any module runs: `npm start` passes it on the command line.
import { availableParallelism } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { startedWithFlag } from './v8-flags.ts';

/** The old generation's growth between full collections, in percent of what the last one left live. */
export const HEAP_GROWING_PERCENT = 100;

/** The V8 flags `npm start` passes on the command line (package.json), which V8 reads only when it makes the heap. */
export const COMMAND_LINE_FLAGS = ['--no-memory-reducer'] as const;

/** The V8 flags `tuneCollector` sets on a process with `cores` cores that was started with none of them. */
export function collectorFlags(cores: number): string[] {
  const flags: string[] = [];
  if (!startedWithFlag('heap-growing-percent')) flags.push(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  if (cores === 1 && !startedWithFlag('concurrent-marking')) flags.push('--no-concurrent-marking');
  return flags;
}

/** Sets this process's collector flags (collectorFlags), for the cores it may run on. */
export function tuneCollector(cores = availableParallelism()): void {
  for (const flag of collectorFlags(cores)) setFlagsFromString(flag);
}

// How far V8 lets the old generation grow past what its last full collection left live before it starts the next
// one. By default V8 picks a factor between 1.1 and 4 from how fast it collects, and 1.1 after a collection that
// reduced memory (the one after the start, start-memory.ts), which the following collections keep close to. The
// server's live heap is large (its modules, the validators, the tokenizer's tables), and a factor near 1.1 leaves a
// few megabytes of room: under one tenant's large bodies full collections come one after another, and on a busy core
// their marking runs on the event loop's thread, in steps that every tenant's requests wait for. Allowed to double,
// the old generation is collected far less often; the heap may hold as much again in garbage under load (the worker
// threads' heaps too: the flag is the process's).
import { setFlagsFromString } from 'node:v8';
import { startedWithFlag } from './v8-flags.ts';

/** The old generation's growth between full collections, in percent of what the last one left live. */
export const HEAP_GROWING_PERCENT = 100;

/**
 * Sets V8's heap growth for this process (read by V8 at each full collection), unless the process was started with a
 * choice of its own (`node --heap-growing-percent=N`).
 */
export function setHeapGrowth(): void {
  if (!startedWithFlag('heap-growing-percent')) setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}

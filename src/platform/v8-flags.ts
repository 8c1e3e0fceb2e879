// V8 flags the process sets for itself (the collector's, collector.ts; bytecode flushing while a collection runs)
// give way to an operator's: whether the process was started with one.

/**
 * Whether the process was started with V8's flag `name` (`heap-growing-percent`), in either of V8's spellings
 * (`--heap-growing-percent`, `--heap_growing_percent`) and with or without `no-`.
 */
export function startedWithFlag(name: string): boolean {
  return `${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`.replaceAll('_', '-').includes(name);
}

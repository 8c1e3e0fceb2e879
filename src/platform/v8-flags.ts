// V8 flags the process sets for itself (the collector's, collector.ts; bytecode flushing while a collection runs)
// give way to an operator's: whether the process was started with one.

/**
 * Whether the process was started with V8's flag `name` (`heap-growing-percent`), in either of V8's spellings
 * (`--heap-growing-percent`, `--heap_growing_percent`), with or without `no` (`--no-name`, `--noname`) and a value.
 * Only that flag: `--trace-concurrent-marking` is not `concurrent-marking`.
 */
export function startedWithFlag(name: string): boolean {
  const spellings = new Set([`--${name}`, `--no-${name}`, `--no${name}`]);
  return [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((argument) =>
    spellings.has(argument.replaceAll('_', '-').split('=')[0]!),
  );
}

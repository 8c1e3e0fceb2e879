/** Merges the events of several producers in the order they come. */
export async function* merge<T>(sources: AsyncIterable<T>[], onStop?: () => void): AsyncGenerator<T> {
  if (sources.length === 1) return yield* sources[0]!;
  const iterators = sources.map((source) => source[Symbol.asyncIterator]());
  const pending = new Map<number, Promise<{ index: number; step: IteratorResult<T> }>>();
  const pull = (index: number) => {
    const next = iterators[index]!.next().then((step) => ({ index, step }));
    // A reader that stops early leaves this pull unawaited: its failure must not be an unhandled rejection.
    next.catch(() => {});
    pending.set(index, next);
  };
  iterators.forEach((_, index) => {
    pull(index);
  });
  let finished = false;
  try {
    while (pending.size > 0) {
      const { index, step } = await Promise.race(pending.values());
      if (step.done) pending.delete(index);
      else {
        pull(index);
        yield step.value;
      }
    }
    finished = true;
  } finally {
    // The reader stopped early: the producers still running are stopped rather than waited for (a `return()` waits
    // for a producer's next event).
    if (!finished) onStop?.();
    await Promise.allSettled(iterators.map((iterator) => iterator.return?.()));
  }
}

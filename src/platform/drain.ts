// How a process stops without leaving work half done: what is in flight (every operation's handler, and the producer
// of every stream, which settles its call's usage, spend reservation and stored thread after the client is gone) is
// tracked, so that the database closes only once it has finished; and the shutdown deadline ends the streams still
// open with an `event: error` instead of a reset connection.
import { Problem } from './problems.ts';

/** What a stream still open at the shutdown deadline ends with, in its last `event: error`. */
export function serverStopping(): Problem {
  return new Problem(
    'service_unavailable',
    'The server is restarting and ended this stream before it was complete; retry the request.',
    { headers: { 'Retry-After': '1' } },
  );
}

export class Drain {
  readonly #deadline = new AbortController();
  readonly #pending = new Set<Promise<unknown>>();

  /** Aborted at the shutdown deadline (SHUTDOWN_TIMEOUT_MS): every request still running is told to end. */
  get deadline(): AbortSignal {
    return this.#deadline.signal;
  }

  /** The shutdown deadline is reached: the streams still open end with serverStopping(), other work is aborted. */
  endAll(): void {
    this.#deadline.abort(serverStopping());
  }

  /** Keeps `work` among what must finish before the process releases its database; returns it. */
  track<T>(work: Promise<T>): Promise<T> {
    this.#pending.add(work);
    const done = () => this.#pending.delete(work);
    work.then(done, done);
    return work;
  }

  /** Resolves when everything tracked has finished, or after `timeoutMs` (what is left then is abandoned). */
  async settled(timeoutMs: number): Promise<{ abandoned: number }> {
    const deadline = Date.now() + timeoutMs;
    while (this.#pending.size > 0) {
      const left = deadline - Date.now();
      if (left <= 0) return { abandoned: this.#pending.size };
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...this.#pending]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, left);
        }),
      ]);
      clearTimeout(timer);
    }
    return { abandoned: 0 };
  }
}

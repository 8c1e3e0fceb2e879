// SQLite's write-ahead log (WAL) is copied into the database file by a checkpoint. By default the connection whose
// commit makes the log pass 1,000 pages runs it, in that commit: with node:sqlite, on the event loop, where a checkpoint
// of a few megabytes (a long document and its versions) holds every other request for a hundred milliseconds and
// more. The server's connection turns that off (`wal_autocheckpoint = 0`), and a thread of its own checkpoints the
// log in the background instead (checkpointer.ts), so that a commit costs what it writes.
import { Worker } from 'node:worker_threads';

/** How often the thread checkpoints the log. */
export const CHECKPOINT_INTERVAL_MS = 1000;

export interface Checkpoints {
  /** Stops the thread (after a checkpoint it is running); the last connection's close checkpoints what is left. */
  stop(): Promise<void>;
}

/** Starts the checkpoints of the database file at `path` in a thread that never keeps the process alive. */
export function startCheckpoints(path: string, intervalMs = CHECKPOINT_INTERVAL_MS): Checkpoints {
  const worker = new Worker(new URL('./checkpointer.ts', import.meta.url), { workerData: { path, intervalMs } });
  worker.unref();
  // A thread that fails (its file removed) leaves the log to grow until the process closes its connection, which
  // checkpoints it: the database stays whole.
  worker.on('error', () => {});
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return {
    async stop() {
      // Held while it stops: a process that awaits this and has nothing else to do must not end before it has.
      worker.ref();
      worker.postMessage('stop');
      await exited;
    },
  };
}

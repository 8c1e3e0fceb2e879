// SQLite's write-ahead log (WAL) is copied into the database file by a checkpoint. By default the connection whose
// commit makes the log pass 1,000 pages runs it, in that commit: with node:sqlite, on the event loop, where a checkpoint
// of a few megabytes (a long document and its versions) holds every other request for a hundred milliseconds and
// more. The server's connection turns that off (`wal_autocheckpoint = 0`), and one thread of the process checkpoints
// every SQLite file the process has open, in the background (checkpointer.ts), so that a commit costs what it writes.
// The thread is started with the first file and kept (a thread costs a start of its own, which a process that opens
// databases one after another, as the tests do, should pay once); it never keeps the process alive.
import { Worker } from 'node:worker_threads';
import type { CheckpointerMessage } from './checkpointer.ts';

/** How often the thread checkpoints each file. */
export const CHECKPOINT_INTERVAL_MS = 1000;

export interface Checkpoints {
  /** Stops checkpointing the file: resolves when the thread has closed its connection (if no other storage uses it). */
  stop(): Promise<void>;
}

let thread: { worker: Worker; replies: Map<number, () => void>; next: number } | undefined;

function checkpointer() {
  if (thread) return thread;
  const worker = new Worker(new URL('./checkpointer.ts', import.meta.url), {
    workerData: { intervalMs: CHECKPOINT_INTERVAL_MS },
  });
  worker.unref();
  const started = { worker, replies: new Map<number, () => void>(), next: 0 };
  worker.on('message', (id: number) => {
    started.replies.get(id)?.();
    started.replies.delete(id);
  });
  // A thread that fails leaves the logs to grow until the process closes its connections, which checkpoint them: the
  // databases stay whole. The next file opened starts a new one.
  const gone = () => {
    if (thread === started) thread = undefined;
    for (const reply of started.replies.values()) reply();
    started.replies.clear();
  };
  worker.on('error', gone);
  worker.on('exit', gone);
  thread = started;
  return started;
}

/** Checkpoints the database file at `path` in the process's checkpoint thread until `stop()`. */
export function startCheckpoints(path: string): Checkpoints {
  const used = checkpointer();
  used.worker.postMessage({ kind: 'add', path } satisfies CheckpointerMessage);
  return {
    stop() {
      if (thread !== used) return Promise.resolve();
      const id = used.next++;
      // Held while it answers: a process that awaits this and has nothing else to do must not end first.
      used.worker.ref();
      return new Promise<void>((resolve) => {
        used.replies.set(id, () => {
          if (used.replies.size <= 1) used.worker.unref();
          resolve();
        });
        used.worker.postMessage({ kind: 'remove', path, id } satisfies CheckpointerMessage);
      });
    },
  };
}

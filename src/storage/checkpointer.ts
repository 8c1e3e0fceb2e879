// The thread that checkpoints the SQLite databases of its process (sqlite-checkpoints.ts starts it, once): for each
// database file it is given, a connection of its own and, every `intervalMs`, a PASSIVE checkpoint, which copies what
// the write-ahead log holds into the database file without waiting for readers or writers and without blocking them.
// It runs at the lowest CPU priority (on Linux the nice value is per thread): the event loop's queries come first.
import { setPriority } from 'node:os';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

/** What the process asks: checkpoint a file from now on (`add`), or no longer (`remove`, answered with its id). */
export type CheckpointerMessage = { kind: 'add'; path: string } | { kind: 'remove'; path: string; id: number };

const { intervalMs } = workerData as { intervalMs: number };

try {
  setPriority(19);
} catch {
  // A platform that cannot lower a thread's priority runs it at the process's.
}

interface Checkpointed {
  database: DatabaseSync;
  checkpoint: StatementSync;
  /** How many storages of the process have the file open. */
  users: number;
}

const files = new Map<string, Checkpointed>();

setInterval(() => {
  for (const file of files.values()) {
    try {
      file.checkpoint.get();
    } catch {
      // The file busy or gone for a moment (a restore, a test removing it): the next turn tries again.
    }
  }
}, intervalMs);

parentPort!.on('message', (message: CheckpointerMessage) => {
  if (message.kind === 'add') {
    const known = files.get(message.path);
    if (known) {
      known.users++;
      return;
    }
    try {
      const database = new DatabaseSync(message.path);
      database.exec('PRAGMA busy_timeout = 5000;');
      files.set(message.path, { database, checkpoint: database.prepare('PRAGMA wal_checkpoint(PASSIVE)'), users: 1 });
    } catch {
      // A file it cannot open is left to the process's own connection, whose close checkpoints it.
    }
    return;
  }
  const file = files.get(message.path);
  if (file && --file.users === 0) {
    files.delete(message.path);
    file.database.close();
  }
  parentPort!.postMessage(message.id);
});

// The thread that checkpoints a SQLite database's write-ahead log (WAL) for its process (sqlite-checkpoints.ts starts
// it): on its own connection to the file, every `intervalMs`, a PASSIVE checkpoint, which copies what the log holds
// into the database file without waiting for readers or writers and without blocking them. It runs at the lowest
// CPU priority (on Linux the nice value is per thread): the event loop's queries come first.
import { setPriority } from 'node:os';
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

const { path, intervalMs } = workerData as { path: string; intervalMs: number };

try {
  setPriority(19);
} catch {
  // A platform that cannot lower a thread's priority runs it at the process's.
}

const database = new DatabaseSync(path);
database.exec('PRAGMA busy_timeout = 5000;');
const checkpoint = database.prepare('PRAGMA wal_checkpoint(PASSIVE)');

const timer = setInterval(() => {
  try {
    checkpoint.get();
  } catch {
    // The file busy or gone for a moment (a restore, a test removing it): the next turn tries again.
  }
}, intervalMs);

parentPort!.on('message', (message: unknown) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  database.close();
  parentPort!.close();
});

// Whether the PostgreSQL server of DATABASE_URL refuses this server outright. `npm start` asks while it loads the
// server's modules, so that a database that cannot be used stops the start at once, not after everything has loaded.
// Only a definite answer counts: nothing listens at the address, the host does not exist, the login or the database
// is refused. A connection that is slow or silent is left to the pool, whose timeout (DATABASE_POOL_TIMEOUT_MS)
// decides once the server opens it: the module loading holds the event loop, so a timer here could fire before an
// answer that had come was read. SQLite has nothing to reach.
import pg from 'pg';

/** Connection errors that no retry mends; PostgreSQL's class 28 (the login) and 3D000 (no such database). */
const REFUSALS = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH']);

function refused(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (REFUSALS.has(code) || code.startsWith('28') || code === '3D000');
}

/** Rejects with the database's refusal; resolves when it took the connection, or gave no definite answer. */
export async function reachDatabase(url: string): Promise<void> {
  if (!/^postgres(ql)?:\/\//.test(url)) return;
  const client = new pg.Client({ connectionString: url });
  // A connection that fails after connect() settled emits 'error'; without a listener that would end the process.
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    if (refused(error)) throw error;
    return;
  }
  await client.end().catch(() => {});
}

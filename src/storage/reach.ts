// Whether the PostgreSQL server of DATABASE_URL takes a connection. `npm start` asks while it loads the server's
// modules, so that an unreachable database (or a refused login, a missing database) stops the start in one line at
// once, not after everything has loaded. SQLite has nothing to reach.
import pg from 'pg';

export async function reachDatabase(url: string, timeoutMs: number): Promise<void> {
  if (!/^postgres(ql)?:\/\//.test(url)) return;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  // A connection that fails after connect() settled emits 'error'; without a listener that would end the process.
  client.on('error', () => {});
  await client.connect();
  await client.end();
}

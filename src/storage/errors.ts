// What a database error means, apart from the drivers: a process that only reports a failure (an entry point that
// cannot start) reads this without loading Kysely, pg or node:sqlite.

/**
 * Whether a query failed because the database could not be reached or its connection was lost (as opposed to the
 * query's own fault): PostgreSQL restarting, failing over, refusing more clients or terminating the connection; no
 * free connection in the pool in time; SQLite's file locked by another process beyond busy_timeout. Such a failure
 * is worth a retry later: the API answers it with 503 and Retry-After instead of a 500.
 */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    // PostgreSQL's SQLSTATE classes 08 (connection exception) and 57P (operator intervention: terminated, shutting
    // down, cannot connect now), and 53300 (too many connections).
    if (/^08|^57P0[1-4]$|^53300$/.test(code)) return true;
    if (
      [
        'ECONNREFUSED',
        'ECONNRESET',
        'EPIPE',
        'ETIMEDOUT',
        'EHOSTUNREACH',
        'ENETUNREACH',
        'ENOTFOUND',
        'EAI_AGAIN',
      ].includes(code)
    )
      return true;
    // postgres.js (the workflow runtime's client) names its own.
    if (['CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT'].includes(code))
      return true;
    if (code === 'ERR_SQLITE_ERROR' && /database is locked|SQLITE_BUSY/i.test(error.message)) return true;
  }
  // pg's own errors carry no code.
  return /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Client was closed and is not queryable)/.test(
    error.message,
  );
}

/**
 * Whether a query failed for a reason that passes: a connection error (isConnectionError), or PostgreSQL ending the
 * transaction to undo a deadlock (40P01) or a serialisation conflict (40001). Nothing of the transaction was kept, and
 * the same work is expected to succeed when tried again.
 */
export function isTransientError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return isConnectionError(error) || code === '40P01' || code === '40001';
}

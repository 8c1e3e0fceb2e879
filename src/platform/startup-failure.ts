// What a process that cannot start prints: one line for what an operator can fix (a setting, an unreachable
// database), the stack for anything else (a bug).
import { ConfigError } from '../config.ts';
import { isConnectionError } from '../storage/errors.ts';

/** The database URL without its password, to name in a message. */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

export function startupFailure(error: unknown, databaseUrl?: string): string {
  if (error instanceof ConfigError) return `configuration: ${error.message}`;
  const sqlState = (error as { code?: unknown })?.code;
  // PostgreSQL refused the login (class 28) or has no such database (3D000): the URL is wrong, not the code.
  const refused = typeof sqlState === 'string' && /^(28|3D000$)/.test(sqlState);
  if (isConnectionError(error) || refused) {
    const code = (error as { code?: string }).code;
    const where = databaseUrl ? ` at ${redactedUrl(databaseUrl)}` : '';
    return `database: cannot reach the database${where}: ${(error as Error).message || code}`;
  }
  return (error as Error)?.stack ?? String(error);
}

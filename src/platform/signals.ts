// How a process of ours stops: on SIGTERM or SIGINT it runs its `stop` (drain, finish work, close the database),
// then exits 0, or 1 when stopping failed; and what it does not stop for.
import type { Logger } from 'pino';
import { isConnectionError } from '../storage/errors.ts';

/**
 * A lost database connection fails only the work on it: a library's query that nobody awaited (the workflow
 * runtime's, when PostgreSQL ends its connections) rejects with nothing to handle it, which would end the process.
 * Such a rejection is logged; any other unhandled rejection still ends the process, as it would without this.
 */
export function surviveLostConnections(logger: Logger): void {
  process.on('unhandledRejection', (reason) => {
    if (!isConnectionError(reason)) throw reason;
    logger.warn({ err: reason }, 'a database connection was lost under work nothing waited for');
  });
}

export function stopOnSignals(logger: Logger, stopping: string, stop: () => Promise<void>): void {
  const shutdown = (signal: string) => {
    logger.info({ signal }, stopping);
    stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'stopping failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

// How a process of ours stops: on SIGTERM or SIGINT it runs its `stop` (drain, finish work, close the database),
// then exits 0, or 1 when stopping failed.
import type { Logger } from 'pino';

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

// `npm run worker`: the background workers (webhook delivery, the job runner) as their own process, configured from
// the environment like the server (DATABASE_URL, WEBHOOKS_ALLOW_LOOPBACK, LOG_LEVEL). Run any number of them beside
// servers started with WEBHOOKS_WORKER=false (or not: workers in servers and on their own share the work the same way).
import { ConfigError, loadConfig } from './config.ts';
import { features } from './features/index.ts';
import { systemClock } from './platform/clock.ts';
import { createLogger } from './platform/logging.ts';
import { Metrics } from './platform/metrics.ts';
import { stopOnSignals } from './platform/signals.ts';
import { startTelemetry } from './platform/telemetry.ts';
import { startWorkers } from './platform/workers.ts';
import { createEngine, engineProviders } from './services.ts';
import { migrate, openStorage } from './storage/database.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  const providers = engineProviders(config);
  const logger = createLogger(config.logLevel);
  // Before the storage: its queries are spans when traces are exported.
  const telemetry = startTelemetry(config.environment, logger);
  const storage = openStorage(config.databaseUrl, {
    onIdleError: (error) => logger.warn({ err: error }, 'an idle database connection failed; it is replaced'),
  });
  await migrate(storage.db, features);
  // Recorded but not served: a worker process has no HTTP port (its deliveries and provider calls are not scraped).
  const metrics = new Metrics({ logger });
  const engine = createEngine({ providers, db: storage.db, logger, clock: systemClock, metrics });
  const workers = await startWorkers(features, {
    config,
    db: storage.db,
    kind: storage.kind,
    clock: systemClock,
    logger,
    engine,
    metrics,
  });
  // The workers' poll timers are unref'd (a server must be able to exit), and on SQLite nothing else holds the event
  // loop: without this the process would exit as soon as it is idle. It runs until a signal.
  const keepAlive = setInterval(() => {}, 60_000);
  logger.info({ database: storage.kind, workers: [...workers.keys()] }, 'background workers running');

  stopOnSignals(logger, 'stopping: finishing the work in flight', async () => {
    clearInterval(keepAlive);
    await Promise.all([...workers.values()].map((worker) => worker.stop()));
    await storage.close();
    await telemetry.shutdown();
  });
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof ConfigError ? `configuration: ${error.message}` : ((error as Error).stack ?? String(error))}\n`,
  );
  process.exit(1);
});

// `npm run worker`: the background work as its own process, configured from the environment like the server
// (DATABASE_URL, REDIS_URL, WEBHOOKS_ALLOW_LOOPBACK, LOG_LEVEL): webhook delivery, the job runner and the workflow
// runs. Run any number of them beside servers started with WEBHOOKS_WORKER=false (or not: workers in servers and on
// their own share the work the same way). A workflow step that changes a document opens it live here, as a server
// does; with REDIS_URL, editors connected to the servers see the change at once (as between two servers).
// Node's module compile cache is turned on before the rest loads (platform/compile-cache.ts, the one module this file
// imports statically, as src/main.ts does), so that the modules below are read from it after the first start.
import { performance } from 'node:perf_hooks';
import type { KeyCacheOfPlatform } from './platform/auth.ts';
import { enableCompileCache, flushCompileCache } from './platform/compile-cache.ts';

enableCompileCache();
const [
  { loadConfig },
  { features },
  { systemClock },
  { Drain },
  { KeyCache },
  { createLogger, RequestLogWriter },
  { Metrics },
  { createRateLimitStore },
  { stopOnSignals, surviveLostConnections },
  { redactedUrl, startupFailure },
  { querySpans, startTelemetry },
  { startWorkers },
  { createServices, engineProviders },
  { migrate, openStorage },
] = await Promise.all([
  import('./config.ts'),
  import('./features/index.ts'),
  import('./platform/clock.ts'),
  import('./platform/drain.ts'),
  import('./platform/key-cache.ts'),
  import('./platform/logging.ts'),
  import('./platform/metrics.ts'),
  import('./platform/rate-limit.ts'),
  import('./platform/signals.ts'),
  import('./platform/startup-failure.ts'),
  import('./platform/telemetry.ts'),
  import('./platform/workers.ts'),
  import('./services.ts'),
  import('./storage/database.ts'),
]);

async function main(): Promise<void> {
  // A worker process carries out workflow runs whatever WEBHOOKS_WORKER says: that is what it is for.
  const config = { ...loadConfig(), webhooksWorker: true };
  const providers = engineProviders(config);
  const logger = createLogger(config.logLevel);
  surviveLostConnections(logger);
  // Before the storage: its queries are spans when traces are exported.
  const telemetry = await startTelemetry(config.environment, logger);
  // A part of the platform that no request reads here: the servers learn of key changes from the database itself.
  const keyCache: KeyCacheOfPlatform = new KeyCache(config.authCacheMs);
  const storage = openStorage(config.databaseUrl, {
    onIdleError: (error) => logger.warn({ err: error }, 'an idle database connection failed; it is replaced'),
    poolMax: config.databasePoolMax,
    poolTimeoutMs: config.databasePoolTimeoutMs,
    queryLog: querySpans,
  });
  const applied = await migrate(storage.db, features);
  logger.info(
    { database: storage.kind, url: redactedUrl(config.databaseUrl), applied },
    applied.length > 0 ? `database migrated: ${applied.length} migrations applied` : 'database up to date',
  );
  // Recorded but not served: a worker process has no HTTP port (its deliveries and provider calls are not scraped).
  const metrics = new Metrics({ logger });
  // No request is served here: the rate limit and the request log are the platform's parts, unused.
  const rateLimitStore = createRateLimitStore(undefined);
  const { platform, ...services } = createServices(
    {
      config,
      storage,
      db: storage.db,
      clock: systemClock,
      logger,
      rateLimitStore,
      requestLog: new RequestLogWriter(storage.db, logger),
      keyCache,
      metrics,
      features,
      drain: new Drain(),
    },
    providers,
  );
  await services.start();
  const workers = await startWorkers(features, {
    config,
    db: storage.db,
    kind: storage.kind,
    clock: systemClock,
    logger,
    engine: platform.services.engine,
    metrics,
  });
  // The workers' poll timers are unref'd (a server must be able to exit), and on SQLite nothing else holds the event
  // loop: without this the process would exit as soon as it is idle. It runs until a signal.
  const keepAlive = setInterval(() => {}, 60_000);
  const ms = Math.round(performance.now());
  logger.info(
    { ms, database: storage.kind, workers: [...workers.keys(), 'workflow-runs'] },
    `background workers running, ready in ${ms} ms`,
  );
  // What this start compiled is kept now, for the next start, whether or not this process ever exits by itself.
  flushCompileCache();

  stopOnSignals(logger, 'stopping: finishing the work in flight', async () => {
    clearInterval(keepAlive);
    await services.stop();
    await Promise.all([...workers.values()].map((worker) => worker.stop()));
    await services.dispose();
    await rateLimitStore.close();
    await storage.close();
    await telemetry.shutdown();
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${startupFailure(error, process.env.DATABASE_URL)}\n`);
  process.exit(1);
});

// Builds and runs the server: the HTTP port first (src/platform/listener.ts), then storage (migrated), rate-limit store,
// logger, app, background work and what requests would otherwise load on first use, and a shutdown that drains
// in-flight requests before it closes anything. main.ts, the tests and the benchmark all start the server through here.
import { once } from 'node:events';
import {
  createServer,
  get,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { type AppOptions, createApp } from './app.ts';
import type { Config } from './config.ts';
import { features } from './features/index.ts';
import type { KeyCacheOfPlatform } from './platform/auth.ts';
import { answerClientErrors } from './platform/client-errors.ts';
import { type Clock, systemClock } from './platform/clock.ts';
import type { Platform } from './platform/context.ts';
import { Drain } from './platform/drain.ts';
import type { BackgroundWorker } from './platform/jobs/claim-loop.ts';
import { KeyCache } from './platform/key-cache.ts';
import { type Listener, listen } from './platform/listener.ts';
import { createLogger, RequestLogWriter } from './platform/logging.ts';
import { Metrics, registerGauges } from './platform/metrics.ts';
import { createRateLimitStore } from './platform/rate-limit.ts';
import { startRetention } from './platform/retention.ts';
import { recordServedAddress } from './platform/served-addresses.ts';
import { redactedUrl } from './platform/startup-failure.ts';
import { querySpans, startTelemetry } from './platform/telemetry.ts';
import { startWorkers } from './platform/workers.ts';
import { createServices, engineProviders } from './services.ts';
import { migrate, openStorage } from './storage/database.ts';

/** How long connections may take to end after the shutdown deadline told their requests to. */
const FORCED_CLOSE_MS = 2000;
/** How long the requests' work after their answers may take at shutdown before the database closes under it. */
const SETTLE_TIMEOUT_MS = 10_000;
/** How often a stop that takes long logs what it still waits for. */
const STOP_PROGRESS_MS = 5000;

export interface RunningServer {
  url: string;
  platform: Platform;
  server: Server;
  /** The background workers of this process by name (`webhook-delivery`, `jobs`); none with WEBHOOKS_WORKER=false. */
  workers: Map<string, BackgroundWorker>;
  /** Stops accepting connections, waits for in-flight requests, stops background work, closes the database. */
  close(): Promise<void>;
}

export interface StartOptions extends AppOptions {
  clock?: Clock;
  logger?: Logger;
  /** Prefix of the rate-limit keys in Redis; tests use their own so they do not share budgets. */
  rateLimitKeyPrefix?: string;
  /** The port, already bound (src/main.ts binds it before it loads this module); else bound here, first. */
  listener?: Listener;
  /** false: leave what first calls load (Feature.preload) to the first calls. The tests start servers so, in a fresh
   *  module graph per test file, most of which make no call that needs it. */
  preload?: boolean;
}

export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const providers = engineProviders(config);
  const listener = options.listener ?? (await listen(config));
  try {
    return await start(config, options, providers, listener);
  } catch (error) {
    // The start failed after the port was bound: free it (a test that expects the failure goes on in this process).
    listener.server.close();
    listener.server.closeAllConnections();
    throw error;
  }
}

async function start(
  config: Config,
  options: StartOptions,
  providers: ReturnType<typeof engineProviders>,
  listener: Listener,
): Promise<RunningServer> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const keyCache: KeyCacheOfPlatform = new KeyCache(config.authCacheMs);
  // Before the storage: its queries are spans when traces are exported.
  const telemetry = await startTelemetry(config.environment, logger);
  const storage = openStorage(config.databaseUrl, {
    onIdleError: (error) => logger.warn({ err: error }, 'an idle database connection failed; it is replaced'),
    poolMax: config.databasePoolMax,
    poolTimeoutMs: config.databasePoolTimeoutMs,
    queryLog: querySpans,
    wrapDialect: (dialect) => keyCache.wrapDialect(dialect),
  });
  const applied = await migrate(storage.db, features);
  logger.info(
    { database: storage.kind, url: redactedUrl(config.databaseUrl), applied },
    applied.length > 0 ? `database migrated: ${applied.length} migrations applied` : 'database up to date',
  );
  const stopWatchingKeys = await keyCache.watch(storage, config.databaseUrl, logger);
  const rateLimitStore = createRateLimitStore(config.redisUrl, options.rateLimitKeyPrefix);
  // Until Redis is connected, requests are counted in this process only and /readyz answers 503: the start waits for it
  // (bounded). An unreachable Redis does not stop the start: /readyz reports it, the insurance limiter counts.
  await rateLimitStore.ready?.(5000);
  const { platform, ...services } = createServices(
    {
      config,
      storage,
      db: storage.db,
      clock: options.clock ?? systemClock,
      logger,
      rateLimitStore,
      requestLog: new RequestLogWriter(storage.db, logger),
      keyCache,
      metrics: new Metrics({ logger, nodeMetrics: config.metricsToken !== null }),
      features,
      drain: new Drain(),
    },
    providers,
  );
  registerGauges(platform);
  if (options.preload !== false) await preload(platform, logger);
  // Declared before the server listens: an upgrade or a request can arrive as soon as it does, while the start still
  // awaits its background work below.
  let draining = false;
  const app = createApp(platform, options);
  const { server, url } = listener;
  answerClientErrors(server, platform);
  const upgrades = platform.features.flatMap((feature) => feature.upgrades?.(platform) ?? []);
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    const endpoint = upgrades.find((candidate) => candidate.matches(pathname));
    if (endpoint && !draining) return endpoint.handle(req, socket, head);
    socket.end(
      `HTTP/1.1 ${draining ? '503 Service Unavailable' : '404 Not Found'}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
    );
  };
  // On a port picked at start (PORT=0) the configured default names port 0; the address it listens on is the one.
  const reachedAt = config.port === 0 && config.publicBaseUrl === 'http://localhost:0' ? url : config.publicBaseUrl;
  await recordServedAddress(storage.db, config.region, reachedAt, (options.clock ?? systemClock).now());
  await services.start();
  const stopRetention = startRetention(storage.db, platform.clock, logger, features);
  const workers = config.webhooksWorker
    ? await startWorkers(features, {
        config,
        db: storage.db,
        kind: storage.kind,
        clock: platform.clock,
        logger,
        engine: platform.services.engine,
        metrics: platform.metrics,
      })
    : new Map<string, BackgroundWorker>();
  if (!config.webhooksWorker)
    logger.info(
      'WEBHOOKS_WORKER=false: webhook delivery, jobs and workflow runs are left to `npm run worker` processes',
    );

  // While draining, a keep-alive connection is closed as soon as its response is done. server.close() closes only the
  // connections idle at that moment, so one whose request finished later stayed open (keep-alive) and close() waited
  // for the full shutdown timeout, warning about requests that had long finished.
  // Before the app's listener, so that even an answer sent synchronously is seen.
  server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
    if (draining && !res.headersSent) res.setHeader('Connection', 'close');
    res.once('finish', () => {
      if (draining) setImmediate(() => server.closeIdleConnections());
    });
  });

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      draining = true;
      // A stop that takes long says what it waits for: a supervisor that kills the process meanwhile leaves that in
      // the log. Past the shutdown timeout, when the requests have been told to end, it is a warning.
      const stopStarted = Date.now();
      let waitingFor = 'services';
      const progress = setInterval(() => {
        const elapsed = Date.now() - stopStarted;
        const level = elapsed > config.shutdownTimeoutMs ? 'warn' : 'info';
        logger[level]({ waiting_for: waitingFor, elapsed_ms: elapsed }, 'still stopping');
      }, STOP_PROGRESS_MS).unref();
      try {
        // No new connection from here on (resolves once the connections still open have ended).
        const drained = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        // At the timeout, counted from the signal, the requests still running are told to end: a stream ends with its
        // `event: error` (service_unavailable), other work is aborted. A connection that has not ended a moment later
        // is closed.
        let forced: NodeJS.Timeout | undefined;
        const timeout = setTimeout(() => {
          logger.warn(
            { timeout_ms: config.shutdownTimeoutMs },
            'requests still running at the shutdown timeout; ending them',
          );
          platform.drain.endAll();
          forced = setTimeout(() => server.closeAllConnections(), FORCED_CLOSE_MS);
        }, config.shutdownTimeoutMs);
        // Work in flight of the services (a workflow step) ends meanwhile, then the upgraded sockets, which are not the
        // HTTP server's any more: their sessions are saved and closed.
        await services.stop();
        waitingFor = 'connections';
        await drained;
        clearTimeout(timeout);
        clearTimeout(forced);
        // The answers are out; what the requests do after them (a stream's usage, spend reservation, notices and
        // stored thread, settled when its producer closes) finishes before the database closes.
        waitingFor = 'work after answers';
        const { abandoned } = await platform.drain.settled(SETTLE_TIMEOUT_MS);
        if (abandoned > 0) logger.error({ abandoned }, 'requests still settling their work when the database closed');
        waitingFor = 'retention';
        await stopRetention();
        // No request runs any more: the log's last rows go in before the workers, which may take their grace to stop.
        waitingFor = 'request log';
        await platform.requestLog.flush();
        // Work in flight is finished and recorded (a webhook attempt within 15 s), so a restart does none of it twice.
        waitingFor = 'workers';
        await Promise.all([...workers.values()].map((worker) => worker.stop()));
        waitingFor = 'services disposal';
        await services.dispose();
        waitingFor = 'rate limit store';
        await rateLimitStore.close();
        waitingFor = 'key watch';
        await stopWatchingKeys();
        waitingFor = 'database';
        await storage.close();
        // Last: the spans of everything above (the workers' last attempts, the final queries) go out with it.
        waitingFor = 'telemetry';
        await telemetry.shutdown();
      } finally {
        clearInterval(progress);
      }
    })());

  await answersOnce(app);
  // Ready: the requests that came during the start, then every request, go to the app.
  listener.serve(app, upgrade);
  return { url, platform, server, workers, close };
}

/**
 * Sends the app one request (GET /healthz) on a loopback port of its own before any caller's: what the app builds on
 * its first request (the contract validator reads its document then) is built before the server says it is ready.
 */
async function answersOnce(app: RequestListener): Promise<void> {
  const probe = createServer(app).listen(0, '127.0.0.1');
  try {
    await once(probe, 'listening');
    const response = await new Promise<IncomingMessage>((resolve, reject) =>
      get(`http://127.0.0.1:${(probe.address() as AddressInfo).port}/healthz`, resolve).once('error', reject),
    );
    response.resume();
    await once(response, 'end');
  } finally {
    probe.close();
    probe.closeAllConnections();
  }
}

/**
 * Loads what the features' requests would otherwise load on their first call (the engine's tokenizer), so that the
 * first call is as fast as the second. Before the server says it is ready, after it listens.
 */
async function preload(platform: Platform, logger: Logger): Promise<void> {
  const started = performance.now();
  const loaded: string[] = [];
  for (const feature of platform.features) {
    if (!feature.preload) continue;
    await feature.preload(platform);
    loaded.push(feature.name);
  }
  logger.info(
    { features: loaded, ms: Math.round(performance.now() - started) },
    'loaded what first calls would wait for',
  );
}

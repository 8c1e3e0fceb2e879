// A step of the benchmark's cost budget (bench/run.ts, "layers"): Express 5 with the platform's own middleware added in
// turn, in the order app.ts runs it, answering the benchmark's routes with the bodies the real server gave and no
// database work of the handler. Each step of the budget is one process of this file with more LAYERS:
//
//   validator  routing (resolveOperation) and the contract validator: request and JSON response validated
//   auth       + the API key looked up in the database, region and role checks
//   ratelimit  + the per-key rate limit (memory store, as in the benchmark's real server)
//   logging    + the request id, the access log and the request log's batched rows
//
// The last step of the budget is the real server (`src/main.ts`), which adds the handlers and their database queries.
// PORT, BARE_BODIES (as bench/bare.ts), DATABASE_URL (the seeded benchmark database) and LAYERS come from the
// environment.
import { readFileSync } from 'node:fs';
import express, { type NextFunction, type Request, type Response } from 'express';
import { loadConfig } from '../src/config.ts';
import { features } from '../src/features/index.ts';
import { authenticate, type KeyCacheOfPlatform } from '../src/platform/auth.ts';
import { systemClock } from '../src/platform/clock.ts';
import { locals } from '../src/platform/context.ts';
import { Drain } from '../src/platform/drain.ts';
import { problemHandler } from '../src/platform/errors.ts';
import { newId } from '../src/platform/ids.ts';
import { KeyCache } from '../src/platform/key-cache.ts';
import { accessLog, accessRecord, createLogger, RequestLogWriter } from '../src/platform/logging.ts';
import { Metrics } from '../src/platform/metrics.ts';
import { createRateLimitStore, rateLimit } from '../src/platform/rate-limit.ts';
import { resolveOperation } from '../src/platform/routes.ts';
import { contractValidator } from '../src/platform/validation.ts';
import { createServices, engineProviders } from '../src/services.ts';
import { openStorage } from '../src/storage/database.ts';

const layers = new Set((process.env.LAYERS ?? '').split(',').filter(Boolean));
for (const layer of layers)
  if (!['validator', 'auth', 'ratelimit', 'logging'].includes(layer)) throw new Error(`unknown layer ${layer}`);
const bodies = JSON.parse(readFileSync(process.env.BARE_BODIES ?? '', 'utf8')) as {
  workspace: unknown;
  apiKeys: unknown;
  apiKeys100: unknown;
};
const config = loadConfig();
const keyCache: KeyCacheOfPlatform = new KeyCache(config.authCacheMs);
const storage = openStorage(config.databaseUrl, { wrapDialect: (dialect) => keyCache.wrapDialect(dialect) });
const logger = createLogger(config.logLevel);
await keyCache.watch(storage, config.databaseUrl, logger);
const { platform } = createServices(
  {
    config,
    storage,
    db: storage.db,
    clock: systemClock,
    logger,
    rateLimitStore: createRateLimitStore(undefined),
    requestLog: new RequestLogWriter(storage.db, logger),
    keyCache,
    metrics: new Metrics({ logger }),
    features,
    drain: new Drain(),
  },
  engineProviders(config),
);

const app = express();
app.disable('x-powered-by');
app.disable('etag');
app.set('query parser', 'simple');
app.use((req: Request, res: Response, next: NextFunction) => {
  const state = locals(res);
  state.receivedAt = platform.clock.now();
  state.startedAt = process.hrtime.bigint();
  if (layers.has('logging')) {
    state.requestId = newId('req', state.receivedAt);
    res.setHeader('X-Request-Id', state.requestId);
    res.on('close', () => platform.requestLog.add(accessRecord(req, res)));
  }
  next();
});
if (layers.has('logging')) app.use(accessLog(logger));
app.use(resolveOperation);
const auth = authenticate(platform);
const limit = rateLimit(platform.rateLimitStore);
const proceed = () => {};
app.use(async (req: Request, res: Response, next: NextFunction) => {
  if (layers.has('auth')) await auth(req, res, proceed);
  if (layers.has('ratelimit')) await limit(req, res, proceed);
  next();
});
if (layers.has('validator'))
  app.use(express.json({ strict: false, limit: config.bodyLimitBytes }), ...contractValidator());
app.get('/v1/workspace', (_req, res) => {
  res.json(bodies.workspace);
});
app.get('/v1/api-keys', (req, res) => {
  res.json(req.query.limit === '100' ? bodies.apiKeys100 : bodies.apiKeys);
});
app.use(problemHandler({ logger }));

const server = app.listen(config.port, '127.0.0.1');
process.once('SIGTERM', () =>
  server.close(
    () =>
      void platform.requestLog
        .flush()
        .then(() => storage.close())
        .then(() => process.exit(0)),
  ),
);

// The HTTP application: the platform's middleware in the order every request meets it, then the operations.
//
//   request id → access log → route (404/405) → auth (401/421) → rate limit (429) → role (403) → not built (501)
//   → body parsing (400/413) → contract validation (415/422) → Idempotency-Key → handler → response validation (500)
//
// Authentication comes before body parsing so that a caller without a valid key learns nothing about the body.
import express, { type NextFunction, type Request, type Response } from 'express';
import { operationTable, type OperationId } from '../generated/operations.ts';
import { notImplemented } from './handlers.ts';
import { authenticate, identifyKey } from './platform/auth.ts';
import { atLeast, locals, type Platform } from './platform/context.ts';
import { problemHandler } from './platform/errors.ts';
import { collectByKey } from './platform/feature.ts';
import { newId } from './platform/ids.ts';
import { accessLog, accessRecord } from './platform/logging.ts';
import { metricsEndpoint } from './platform/metrics.ts';
import { bindOperation, type OperationHandler } from './platform/operations.ts';
import { Problem } from './platform/problems.ts';
import { rateLimit } from './platform/rate-limit.ts';
import { traceRequests } from './platform/telemetry.ts';
import { yamlBody } from './platform/yaml-body.ts';
import { resolveOperation } from './platform/routes.ts';
import { contractValidator } from './platform/validation.ts';

/**
 * TEST SEAM, for tests only (test/support/server.ts passes one when a test asks; main.ts never does, and without it
 * every handler is bound directly and an operation not built answers 501 before anything else): replacements for the handlers of operations, looked up on every
 * request so that a test can set and remove one while the server runs (a handler that fails, that breaks its response
 * schema, that waits, or that streams). An operation in `notImplemented` with a replacement is served by it instead of
 * answering 501, so that the platform's seams for features not built yet (a streamed chat completion) can be tested.
 * Everything around the handler (auth, rate limit, validation, Idempotency-Key, problem documents) stays the real code.
 */
export type HandlerOverrides = Map<OperationId, OperationHandler>;

export interface AppOptions {
  onResponseValidationError?: (details: { operationId: string | undefined; error: unknown }) => void;
  /** Test seam; see HandlerOverrides. */
  handlerOverrides?: HandlerOverrides;
}

const notBuilt = new Set<OperationId>(notImplemented);
/** Operations whose contract accepts bodies up to 7 MB (BODY_LIMIT_BYTES applies to the others). */
const LARGE_BODY_OPERATIONS = new Set<OperationId>(['addKnowledgeBaseSource', 'createEmbedding']);
const LARGE_BODY_BYTES = 7 * 1024 * 1024;

function operationOf(res: Response): (typeof operationTable)[OperationId] {
  return operationTable[locals(res).operationId!];
}

/** Headers a browser may send and read across origins: the API's own (keys travel as headers, never cookies). */
const CORS_REQUEST_HEADERS = 'Authorization, Content-Type, Idempotency-Key, X-Embed-Key, Accept';
const CORS_EXPOSED_HEADERS = 'Location, Link, Retry-After, RateLimit, RateLimit-Policy, X-Request-Id, Idempotent-Replayed';

/**
 * CORS (the contract's introduction): every answer may be read from any origin, since credentials are API keys sent
 * as headers, never cookies; a preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered 204 here.
 */
function cors(req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Access-Control-Expose-Headers', CORS_EXPOSED_HEADERS);
  if (req.method === 'OPTIONS' && req.get('access-control-request-method')) {
    res.setHeader('Access-Control-Allow-Methods', 'GET, POST, PUT, PATCH, DELETE');
    res.setHeader('Access-Control-Allow-Headers', CORS_REQUEST_HEADERS);
    res.setHeader('Access-Control-Max-Age', '86400');
    res.status(204).end();
    return;
  }
  next();
}

export function createApp(platform: Platform, options: AppOptions = {}): express.Express {
  const problemShapes = collectByKey(platform.features, 'problemShapes');
  const authenticators = collectByKey(platform.features, 'authenticators');
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('trust proxy', platform.config.trustProxy);
  app.set('query parser', 'simple');

  app.use((req: Request, res: Response, next: NextFunction) => {
    const state = locals(res);
    state.receivedAt = platform.clock.now();
    state.startedAt = process.hrtime.bigint();
    state.requestId = newId('req', state.receivedAt);
    res.setHeader('X-Request-Id', state.requestId);
    res.on('close', () => {
      platform.requestLog.add(accessRecord(req, res));
      // The operation, never the path: paths carry ids, and a label per id would grow without bound.
      platform.metrics.request(state.operationId ?? 'none', req.method, res.statusCode, Number(process.hrtime.bigint() - state.startedAt) / 1e9);
    });
    next();
  });
  app.use(traceRequests());
  app.use(accessLog(platform.logger));
  app.use(cors);
  // The operators' endpoint (Prometheus), outside the contract; without METRICS_TOKEN it passes on to the 404.
  app.use(metricsEndpoint(platform.metrics, platform.config.metricsToken));
  // The features' pages (dashboard, editor, widget, approvals) are all outside /v1/: the API's requests skip their
  // routers instead of being matched against every page's route.
  const pages = express.Router();
  for (const feature of platform.features) if (feature.pages) pages.use(feature.pages(platform));
  app.use((req: Request, res: Response, next: NextFunction) => (req.path.startsWith('/v1/') ? next() : pages(req, res, next)));
  app.use(async (req: Request, res: Response, next: NextFunction) => {
    try {
      resolveOperation(req, res, () => {});
    } catch (problem) {
      await identifyKey(platform, req, res);
      throw problem;
    }
    // The feature's own problem shape for this operation (OpenAI's `error` on chat completions), for every problem
    // answered from here on.
    locals(res).problemShape = problemShapes[locals(res).operationId!];
    next();
  });
  app.use((req: Request, res: Response, next: NextFunction) => {
    // Every answer to a request that carries an Idempotency-Key says whether it was replayed.
    if (req.get('idempotency-key') !== undefined && ['POST', 'PUT', 'PATCH'].includes(req.method)) res.setHeader('Idempotent-Replayed', 'false');
    next();
  });

  const auth = authenticate(platform);
  const limit = rateLimit(platform.rateLimitStore);
  const proceed = () => {};
  app.use(async (req: Request, res: Response, next: NextFunction) => {
    const operation = operationOf(res);
    if (operation.auth === 'embedKey') {
      // The scheme's feature checks it (the chatbots feature: Feature.authenticators).
      const authenticator = authenticators.embedKey;
      if (!authenticator) throw new Problem('not_implemented', 'The embedKey security scheme is not available on this server yet.');
      await authenticator(req, res, platform);
    } else if (operation.auth === 'bearer') {
      await auth(req, res, proceed);
      await limit(req, res, proceed);
    }
    next();
  });
  const overrides = options.handlerOverrides;
  app.use((_req: Request, res: Response, next: NextFunction) => {
    const operation = operationOf(res);
    const { caller, operationId } = locals(res);
    if (caller && operation.minimumRole && !atLeast(caller.role, operation.minimumRole)) {
      throw new Problem('insufficient_role', `This operation needs the ${operation.minimumRole} role or higher; the key's role is ${caller.role}.`);
    }
    if (notBuilt.has(operationId!) && !overrides?.has(operationId!)) {
      throw new Problem('not_implemented', `${operationId!} is specified but not available on this server yet.`);
    }
    next();
  });

  // strict: false parses any JSON value. With strict, well-formed JSON that is not an object or array (`42`, `null`)
  // was 400 invalid_json ("not well-formed JSON"), which it is not; now the validator answers 422 "must be object".
  // The operations the contract lets take larger bodies (a knowledge-base file of 5 MB, base64: 7 MB) parse theirs
  // here; express.json leaves a body already parsed alone.
  const largeJson = express.json({ strict: false, limit: Math.max(platform.config.bodyLimitBytes, LARGE_BODY_BYTES), type: ['application/json', 'application/*+json'] });
  app.use((req: Request, res: Response, next: NextFunction) => (LARGE_BODY_OPERATIONS.has(locals(res).operationId!) ? largeJson(req, res, next) : next()));
  app.use(express.json({ strict: false, limit: platform.config.bodyLimitBytes, type: ['application/json', 'application/*+json'] }));
  app.use(yamlBody(platform.config.bodyLimitBytes));
  app.use(contractValidator());

  const implemented = collectByKey(platform.features, 'handlers') as Partial<Record<OperationId, OperationHandler>>;
  // Routing already chose the operation (resolveOperation), so one dispatcher hands the request to its handler: with
  // an Express route per operation, every request was matched against the routes before its own, one by one.
  // Operations not built get a handler only for the test seam (the 501 above answers them otherwise).
  const bound = new Map<OperationId, ReturnType<typeof bindOperation>>();
  for (const id of [...Object.keys(implemented), ...(overrides ? notImplemented : [])] as OperationId[]) {
    const handler = implemented[id];
    const notBuiltYet: OperationHandler = async () => {
      throw new Problem('not_implemented', `${id} is specified but not available on this server yet.`);
    };
    bound.set(id, bindOperation(platform, id, overrides ? (request, context) => (overrides.get(id) ?? handler ?? notBuiltYet)(request, context) : handler!));
  }
  app.use((req: Request, res: Response, next: NextFunction) => {
    const { operationId, pathParams } = locals(res);
    const handler = bound.get(operationId!);
    if (!handler) return next();
    // Decoded here, after the contract validator has refused a malformed percent-encoding.
    const params: Record<string, string> = {};
    for (const [name, value] of Object.entries(pathParams ?? {})) params[name] = decodeURIComponent(value);
    req.params = params;
    return handler(req, res, next);
  });

  app.use(problemHandler({ logger: platform.logger, onResponseValidationError: options.onResponseValidationError }));
  return app;
}

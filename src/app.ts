// The HTTP application: the platform's middleware in the order every request meets it (the `pipeline` list of
// createApp, one named function a step), then the operation's handler:
//
//   request id → trace (traceparent in, traceresponse out) → access log → CORS → metrics endpoint → pages
//   → route (404/405) → auth (401/421) → rate limit (429) → role (403) → not built (501) → body parsing (400/413)
//   → contract validation (415/422) → handler, with Idempotency-Key → response validation (500) → problem documents
//
// Authentication comes before body parsing so that a caller without a valid key learns nothing about the body.
import express, {
  type ErrorRequestHandler,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import { type OperationId, operationTable } from '../generated/operations.ts';
import { authenticate, identifyKey } from './platform/auth.ts';
import { verifyJson } from './platform/body-encoding.ts';
import { atLeast, callerRole, locals, type Platform } from './platform/context.ts';
import { problemHandler } from './platform/errors.ts';
import { collectByKey } from './platform/feature.ts';
import { newId } from './platform/ids.ts';
import { largeBodyTurns } from './platform/large-bodies.ts';
import { accessLog, accessRecord } from './platform/logging.ts';
import { metricsEndpoint } from './platform/metrics.ts';
import { bindOperation, type OperationHandler, type OperationHandlers } from './platform/operations.ts';
import { Problem } from './platform/problems.ts';
import { rateLimit } from './platform/rate-limit.ts';
import { resolveOperation } from './platform/routes.ts';
import { traceRequests } from './platform/telemetry.ts';
import { contractValidator } from './platform/validation.ts';
import { yamlBody } from './platform/yaml-body.ts';

export interface AppOptions {
  onResponseValidationError?: (details: { operationId: string | undefined; error: unknown }) => void;
  /**
   * The handlers to bind instead of the features' own. Tests pass theirs here (test/support/server.ts, a seam that
   * lets a test replace a handler while the server runs); production binds the features' handlers.
   */
  handlers?: OperationHandlers;
}

export function createApp(platform: Platform, options: AppOptions = {}): express.Express {
  const handlers = options.handlers ?? (collectByKey(platform.features, 'handlers') as OperationHandlers);
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('trust proxy', platform.config.trustProxy);
  app.set('query parser', 'simple');

  // A workspace's large bodies are read and checked one at a time (platform/large-bodies.ts).
  const largeBodies = largeBodyTurns();
  const pipeline: Array<RequestHandler | ErrorRequestHandler> = [
    requestIdentity(platform),
    traceRequests(),
    accessLog(platform.logger),
    cors,
    // The operators' endpoint (Prometheus), outside the contract; without METRICS_TOKEN it passes on to the 404.
    metricsEndpoint(platform.metrics, platform.config.metricsToken),
    featurePages(platform),
    route(platform),
    authenticateCaller(platform),
    rateLimitCaller(platform),
    checkRole,
    refuseNotBuilt(handlers),
    largeBodies.take,
    ...parseBody(platform.config.bodyLimitBytes),
    ...contractValidator(),
    largeBodies.give,
    dispatch(platform, handlers),
    problemHandler({ logger: platform.logger, onResponseValidationError: options.onResponseValidationError }),
  ];
  app.use(pipeline);
  return app;
}

function operationOf(res: Response): (typeof operationTable)[OperationId] {
  return operationTable[locals(res).operationId!];
}

/**
 * The request's id (X-Request-Id) and clock; when its connection closes, its row of the request log and its metrics
 * (by operation, never by path: paths carry ids, and a label per id would grow without bound).
 */
function requestIdentity(platform: Platform): RequestHandler {
  return function requestIdentity(req, res, next) {
    const state = locals(res);
    state.receivedAt = platform.clock.now();
    state.startedAt = process.hrtime.bigint();
    state.requestId = newId('req', state.receivedAt);
    res.setHeader('X-Request-Id', state.requestId);
    res.on('close', () => {
      platform.requestLog.add(accessRecord(req, res));
      platform.metrics.request(
        state.operationId ?? 'none',
        req.method,
        res.statusCode,
        Number(process.hrtime.bigint() - state.startedAt) / 1e9,
      );
    });
    next();
  };
}

/** Headers a browser may send and read across origins: the API's own (keys travel as headers, never cookies). */
const CORS_REQUEST_HEADERS = 'Authorization, Content-Type, Idempotency-Key, X-Embed-Key, Accept';
const CORS_EXPOSED_HEADERS =
  'Location, Link, Retry-After, RateLimit, RateLimit-Policy, X-Request-Id, traceresponse, Idempotent-Replayed';

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

/**
 * The features' pages (dashboard, editor, widget, approvals), all outside /v1/: the API's requests skip their routers
 * instead of being matched against every page's route.
 */
function featurePages(platform: Platform): RequestHandler {
  const pages = express.Router();
  for (const feature of platform.features) if (feature.pages) pages.use(feature.pages(platform));
  return function featurePages(req, res, next) {
    if (req.path.startsWith('/v1/')) return next();
    return pages(req, res, next);
  };
}

/**
 * The operation of the request (routes.ts), or 404/405; a refused request's key is still noted for its request log.
 * From here on every problem takes the operation's feature's shape (OpenAI's `error` on chat completions), and every
 * answer to a request with an Idempotency-Key says whether it was replayed.
 */
function route(platform: Platform): RequestHandler {
  const problemShapes = collectByKey(platform.features, 'problemShapes');
  return async function route(req, res, next) {
    try {
      resolveOperation(req, res, () => {});
    } catch (problem) {
      await identifyKey(platform, req, res);
      throw problem;
    }
    const state = locals(res);
    state.problemShape = problemShapes[state.operationId!];
    if (IDEMPOTENT_METHODS.has(req.method) && req.get('idempotency-key') !== undefined)
      res.setHeader('Idempotent-Replayed', 'false');
    next();
  };
}

const IDEMPOTENT_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * The caller, by the operation's security scheme: a bearer API key (auth.ts), a person's session cookie instead of a
 * key (the sessions feature), or another scheme's authenticator from its feature (the chatbots' embed key); public
 * operations pass.
 */
function authenticateCaller(platform: Platform): RequestHandler {
  const bearer = authenticate(platform);
  const authenticators = collectByKey(platform.features, 'authenticators');
  return async function authenticateCaller(req, res, next) {
    const scheme = operationOf(res).auth;
    if (scheme === 'bearer') {
      // Every operation a key may call also takes a person's session (the contract's `sessionCookie` scheme).
      const session = authenticators.sessionCookie;
      if (!session || req.get('authorization') !== undefined) return bearer(req, res, next);
      await session(req, res, platform);
      return next();
    }
    if (scheme === 'embedKey') {
      const authenticator = authenticators.embedKey;
      if (!authenticator)
        throw new Problem('not_implemented', 'The embedKey security scheme is not available on this server yet.');
      await authenticator(req, res, platform);
    }
    next();
  };
}

/** The per-key rate limit of bearer callers (the embed key's limits are its feature's). */
function rateLimitCaller(platform: Platform): RequestHandler {
  const limit = rateLimit(platform.rateLimitStore);
  return function rateLimitCaller(req, res, next) {
    if (operationOf(res).auth !== 'bearer') return next();
    return limit(req, res, next);
  };
}

/** The minimum role of the operation (its contract's security requirement). */
function checkRole(_req: Request, res: Response, next: NextFunction): void {
  const { minimumRole } = operationOf(res);
  const { caller } = locals(res);
  if (caller && minimumRole && !atLeast(caller.role, minimumRole)) {
    throw new Problem(
      'insufficient_role',
      `This operation needs the ${minimumRole} role or higher; ${callerRole(caller)}.`,
    );
  }
  next();
}

/** An operation of the contract without a handler (src/handlers.ts `notImplemented`) answers 501 before its body is read. */
function refuseNotBuilt(handlers: OperationHandlers): RequestHandler {
  return function refuseNotBuilt(_req, res, next) {
    const { operationId } = locals(res);
    if (!handlers[operationId!])
      throw new Problem('not_implemented', `${operationId!} is specified but not available on this server yet.`);
    next();
  };
}

/** Operations whose contract accepts bodies up to 7 MB (BODY_LIMIT_BYTES applies to the others). */
const LARGE_BODY_OPERATIONS = new Set<OperationId>(['addKnowledgeBaseSource', 'createEmbedding']);
const LARGE_BODY_BYTES = 7 * 1024 * 1024;
const JSON_TYPES = ['application/json', 'application/*+json'];

/**
 * The body, JSON or YAML. `strict: false` parses any JSON value: well-formed JSON that is not an object (`42`, `null`)
 * is not malformed, and the validator answers it 422 "must be object" where an object is due. The operations the
 * contract lets take larger bodies (a knowledge-base file of 5 MB, base64: 7 MB) parse theirs first; express.json
 * leaves a body already parsed alone.
 */
function parseBody(limitBytes: number): RequestHandler[] {
  const options = { strict: false, type: JSON_TYPES, verify: verifyJson };
  const largeJson = express.json({ ...options, limit: Math.max(limitBytes, LARGE_BODY_BYTES) });
  const largeBody: RequestHandler = function largeBody(req, res, next) {
    if (!LARGE_BODY_OPERATIONS.has(locals(res).operationId!)) return next();
    return largeJson(req, res, next);
  };
  return [largeBody, express.json({ ...options, limit: limitBytes }), yamlBody(limitBytes)];
}

/**
 * Hands the request to its operation's handler (operations.ts: typed request, Idempotency-Key, typed answer). Routing
 * already chose the operation, so one dispatcher serves them all instead of an Express route per operation.
 */
function dispatch(platform: Platform, handlers: OperationHandlers): RequestHandler {
  const bound = new Map<OperationId, ReturnType<typeof bindOperation>>();
  for (const [id, handler] of Object.entries(handlers) as Array<[OperationId, OperationHandler]>)
    bound.set(id, bindOperation(platform, id, handler));
  return function dispatch(req, res, next) {
    const { operationId, pathParams } = locals(res);
    const handler = bound.get(operationId!);
    if (!handler) return next();
    // Decoded here, after the contract validator has refused a malformed percent-encoding.
    const params: Record<string, string> = {};
    for (const [name, value] of Object.entries(pathParams ?? {})) params[name] = decodeURIComponent(value);
    req.params = params;
    return handler(req, res, next);
  };
}

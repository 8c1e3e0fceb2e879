// The HTTP application: the platform's middleware in the order every request meets it, then the operations.
//
//   request id → access log → route (404/405) → auth (401/421) → rate limit (429) → role (403) → not built (501)
//   → body parsing (400/413) → contract validation (415/422) → Idempotency-Key → handler → response validation (500)
//
// Authentication comes before body parsing so that a caller without a valid key learns nothing about the body.
import express, { type NextFunction, type Request, type Response } from 'express';
import { operationTable, type OperationId } from '../generated/operations.ts';
import { handlers, notImplemented } from './handlers.ts';
import { authenticate, identifyKey } from './platform/auth.ts';
import { atLeast, type Caller, type Platform } from './platform/context.ts';
import { problemHandler } from './platform/errors.ts';
import { newId } from './platform/ids.ts';
import { accessLog, accessRecord } from './platform/logging.ts';
import { bindOperation, type OperationHandler } from './platform/operations.ts';
import { Problem } from './platform/problems.ts';
import { rateLimit } from './platform/rate-limit.ts';
import { resolveOperation } from './platform/routes.ts';
import { contractValidator } from './platform/validation.ts';

/**
 * TEST SEAM, for tests only (main.ts never fills it): replacements for the handlers of implemented operations, looked
 * up on every request so that a test can set and remove one while the server runs (a handler that fails, that
 * breaks its response schema, or that waits). Everything around the handler (auth, rate limit, validation,
 * Idempotency-Key, problem documents) stays the real code.
 */
export type HandlerOverrides = Map<OperationId, OperationHandler>;

export interface AppOptions {
  onResponseValidationError?: (details: { operationId: string | undefined; error: unknown }) => void;
  /** Test seam; see HandlerOverrides. */
  handlerOverrides?: HandlerOverrides;
}

const notBuilt = new Set<OperationId>(notImplemented);

function operationOf(res: Response): (typeof operationTable)[OperationId] {
  return operationTable[res.locals.operationId as OperationId];
}

export function createApp(platform: Platform, options: AppOptions = {}): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('trust proxy', platform.config.trustProxy);
  app.set('query parser', 'simple');

  app.use((req: Request, res: Response, next: NextFunction) => {
    res.locals.receivedAt = platform.clock.now();
    res.locals.startedAt = process.hrtime.bigint();
    res.locals.requestId = newId('req', res.locals.receivedAt as Date);
    res.setHeader('X-Request-Id', res.locals.requestId as string);
    res.on('close', () => platform.requestLog.add(accessRecord(req, res)));
    next();
  });
  app.use(accessLog(platform.logger));
  app.use(async (req: Request, res: Response, next: NextFunction) => {
    try {
      resolveOperation(req, res, next);
    } catch (problem) {
      await identifyKey(platform, req, res);
      throw problem;
    }
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
      // Embed keys belong to chatbots; until that feature is built there is no embed key to check.
      if (!req.get('x-embed-key')) throw new Problem('invalid_embed_key', "Send the chatbot's embed key in the X-Embed-Key header.");
    } else if (operation.auth === 'bearer') {
      await auth(req, res, proceed);
      await limit(req, res, proceed);
    }
    next();
  });
  app.use((_req: Request, res: Response, next: NextFunction) => {
    const operation = operationOf(res);
    const caller = res.locals.caller as Caller | undefined;
    if (caller && operation.minimumRole && !atLeast(caller.role, operation.minimumRole)) {
      throw new Problem('insufficient_role', `This operation needs the ${operation.minimumRole} role or higher; the key's role is ${caller.role}.`);
    }
    if (notBuilt.has(res.locals.operationId as OperationId)) {
      throw new Problem('not_implemented', `${res.locals.operationId as string} is specified but not available on this server yet.`);
    }
    next();
  });

  // strict: false parses any JSON value. With strict, well-formed JSON that is not an object or array (`42`, `null`)
  // was 400 invalid_json ("not well-formed JSON"), which it is not; now the validator answers 422 "must be object".
  app.use(express.json({ strict: false, limit: platform.config.bodyLimitBytes, type: ['application/json', 'application/*+json'] }));
  app.use(contractValidator());

  const overrides = options.handlerOverrides;
  for (const [id, handler] of Object.entries(handlers) as Array<[OperationId, OperationHandler]>) {
    const operation = operationTable[id];
    const path = operation.path.replace(/\{([^}]+)\}/g, ':$1');
    const bound: OperationHandler = overrides ? (request, context) => (overrides.get(id) ?? handler)(request, context) : handler;
    // Express picks the first registered path that matches; the operation is the one resolveOperation chose (a
    // concrete path before a templated one), so a route of another operation passes the request on.
    const ours = (_req: Request, res: Response, next: NextFunction) => (res.locals.operationId === id ? next() : next('route'));
    app[operation.method](path, ours, bindOperation(platform, id, bound));
  }

  app.use(problemHandler({ logger: platform.logger, onResponseValidationError: options.onResponseValidationError }));
  return app;
}

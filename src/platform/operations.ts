// Binds the typed handler map to Express: builds each handler's typed request from the validated HTTP request,
// applies Idempotency-Key around it, and sends its typed response (which the validator then checks): a JSON body, or
// for `text/event-stream` its events as Server-Sent Events (streams.ts).
import type { NextFunction, Request, Response } from 'express';
import {
  type OperationId,
  type OperationRequest,
  operationTable,
  type ServerSentEvent,
} from '../../generated/operations.ts';
import { type Caller, type EmbedCaller, locals, type Platform, type RequestContext } from './context.ts';
import {
  beginIdempotentRequest,
  completeIdempotentRequest,
  releaseIdempotentRequest,
  requestFingerprint,
} from './idempotency.ts';
import { clientIp } from './logging.ts';
import { Problem, problemResponseBody, sendProblem } from './problems.ts';
import { headerParameters } from './spec.ts';
import { EVENT_STREAM, type OpenedStream, openStream, sendStream } from './streams.ts';

export interface HandlerResult {
  status: number;
  headers?: Record<string, string | undefined>;
  contentType?: string;
  body?: unknown;
  /** For `text/event-stream`: the events to send (see streams.ts). */
  events?: AsyncIterable<ServerSentEvent<unknown>>;
}
/**
 * A handler as the binding sees it: the request of its operation, typed by the contract (generated/operations.ts), in;
 * a status, headers and body (or events) out. The features' handlers are typed more narrowly still (Handlers, with
 * the contract's answers), and are handlers of this kind.
 */
export type OperationHandler<K extends OperationId = OperationId> = (
  request: OperationRequest<K>,
  context: RequestContext,
) => Promise<HandlerResult>;
/** A handler for each operation that has one. */
export type OperationHandlers = { [K in OperationId]?: OperationHandler<K> };

/**
 * The context a handler gets. A class, so that what most handlers never read (the URL, the client's address, the
 * abort signal) is computed on first use by getters shared by every request, not defined again on each one.
 */
class OperationContext implements RequestContext {
  readonly platform: Platform;
  readonly requestId: string;
  readonly now: Date;
  readonly userAgent: string | null;
  readonly yamlBody: RequestContext['yamlBody'];
  readonly #req: Request;
  readonly #res: Response;
  #url: URL | undefined;
  #controller: AbortController | undefined;

  constructor(platform: Platform, req: Request, res: Response) {
    const state = locals(res);
    this.platform = platform;
    this.requestId = state.requestId;
    this.now = state.receivedAt;
    this.userAgent = req.get('user-agent')?.slice(0, 512) ?? null;
    this.yamlBody = state.yamlBody;
    this.#req = req;
    this.#res = res;
  }

  get url(): URL {
    this.#url ??= new URL(this.#req.originalUrl, `${this.platform.config.publicBaseUrl}/`);
    return this.#url;
  }

  // It walks X-Forwarded-For when proxies are trusted.
  get ip(): string {
    return clientIp(this.#req);
  }

  accepts(...types: string[]): string | false {
    return this.#req.accepts(types);
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      const made = new AbortController();
      this.#controller = made;
      const res = this.#res;
      const abort = () => made.abort(new Error('the client closed the connection'));
      if (res.destroyed || res.writableFinished) {
        if (!res.writableFinished) abort();
      } else {
        // The shutdown deadline ends the request's work as a client's leaving does (streams.ts tells the client).
        const { deadline } = this.platform.drain;
        const stop = () => made.abort(deadline.reason);
        if (deadline.aborted) stop();
        else deadline.addEventListener('abort', stop, { once: true });
        res.once('close', () => {
          deadline.removeEventListener('abort', stop);
          if (!res.writableFinished) abort();
        });
      }
    }
    return this.#controller.signal;
  }

  onFinished(callback: () => void): void {
    const res = this.#res;
    if (res.destroyed || res.writableFinished) callback();
    else res.once('close', callback);
  }

  get caller(): Caller {
    const state = locals(this.#res);
    if (!state.caller)
      throw new Error(`operation ${String(state.operationId)} read the caller of an unauthenticated request`);
    return state.caller;
  }

  get embed(): EmbedCaller {
    const state = locals(this.#res);
    if (!state.embed)
      throw new Error(`operation ${String(state.operationId)} read the embed caller of a request without an embed key`);
    return state.embed;
  }
}

/**
 * The request of operation `id`, from the HTTP request the contract's validator has let through: its path, query,
 * header parameters and body are what the contract says they are, which is what the cast states.
 */
function typedRequest<K extends OperationId>(id: K, req: Request): OperationRequest<K> {
  const headers: Record<string, string> = {};
  for (const name of headerParameters[id] ?? []) {
    const value = req.get(name);
    if (value !== undefined) headers[name] = value;
  }
  const contentType = req.is(operationTable[id].requestContentTypes as unknown as string[]) || undefined;
  return {
    path: { ...req.params },
    query: { ...(req.query as object) },
    headers,
    body: req.body,
    contentType,
  } as unknown as OperationRequest<K>;
}

function send(res: Response, result: HandlerResult): void {
  for (const [name, value] of Object.entries(result.headers ?? {})) if (value !== undefined) res.setHeader(name, value);
  res.status(result.status);
  if (result.body === undefined) {
    res.end();
    return;
  }
  if (result.contentType) res.type(result.contentType);
  // A text answer (the public document's HTML page) is sent as it is; everything else is JSON.
  if (typeof result.body === 'string' && result.contentType && !/json/.test(result.contentType)) res.send(result.body);
  else res.json(result.body);
}

/**
 * Runs the handler; for a streamed answer also waits for its first event, so that a failure before anything was
 * sent is still an ordinary problem document (and an ordinary stored or released Idempotency-Key).
 */
async function run<K extends OperationId>(
  handler: OperationHandler<K>,
  request: OperationRequest<K>,
  context: RequestContext,
): Promise<{ result: HandlerResult; stream?: OpenedStream }> {
  const result = await handler(request, context);
  if (!result.events) return { result };
  return { result, stream: await openStream(result.events, context.signal) };
}

const IDEMPOTENT_METHODS = new Set(['POST', 'PUT', 'PATCH']);

export function bindOperation<K extends OperationId>(platform: Platform, id: K, handler: OperationHandler<K>) {
  const handle = bindHandler(platform, id, handler);
  // Shutdown waits for every handler (and what it writes after its answer) before the database closes.
  return (req: Request, res: Response, next: NextFunction): Promise<void> =>
    platform.drain.track(handle(req, res, next));
}

function bindHandler<K extends OperationId>(platform: Platform, id: K, handler: OperationHandler<K>) {
  return async (req: Request, res: Response, _next: NextFunction): Promise<void> => {
    const context = new OperationContext(platform, req, res);
    const request = typedRequest(id, req);
    // A public operation (no key, no embed key) has no workspace to keep an Idempotency-Key in: it runs as sent.
    const keyed = locals(res).caller !== undefined || locals(res).embed !== undefined;
    const idempotencyKey = IDEMPOTENT_METHODS.has(req.method) && keyed ? req.get('idempotency-key') : undefined;
    if (!idempotencyKey) {
      const { result, stream } = await run(handler, request, context);
      if (stream) await sendStream(res, result, stream, context);
      else send(res, result);
      return;
    }

    // A widget request (embed key) is keyed to its chatbot, an API request to its key.
    const embed = locals(res).embed;
    const workspaceId = embed ? embed.workspace.id : context.caller.workspace.id;
    // The calling API key is part of "the same request": keys are scoped to the workspace, but a replay must not hand
    // one key the answer of another (an admin key replaying an owner key's createApiKey would get the new owner secret,
    // past the handler's role check, which a replay does not run).
    const fingerprint = requestFingerprint(
      req.method,
      req.path,
      req.body,
      embed ? `embed:${embed.chatbotId}` : context.caller.apiKey.id,
    );
    const outcome = await beginIdempotentRequest(platform.db, workspaceId, idempotencyKey, fingerprint, context.now);
    if (outcome.kind === 'replay') {
      const { status, headers, body } = outcome.response;
      res.setHeader('Idempotent-Replayed', 'true');
      for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
      res.status(status);
      if (body === null) {
        res.end();
        return;
      }
      if (headers['content-type']?.startsWith(EVENT_STREAM)) {
        // A stored stream is sent again as it was, at once.
        res.setHeader('Cache-Control', 'no-cache');
        res.end(body);
        return;
      }
      const parsed = JSON.parse(body) as { code?: unknown };
      if (status >= 400 && typeof parsed.code === 'string') locals(res).errorCode = parsed.code;
      res.json(parsed);
      return;
    }
    // From here the key's record is this request's. Any 5xx answer releases it, so that a retry with the key runs the
    // request again: a handler that throws, and also an answer that fails response validation after it was stored
    // (kept, it would be replayed as another 500 for 24 hours). The error handler calls this.
    const release = () => releaseIdempotentRequest(platform.db, workspaceId, idempotencyKey, fingerprint, context.now);
    locals(res).releaseIdempotencyKey = release;
    let ran: Awaited<ReturnType<typeof run>>;
    try {
      ran = await run(handler, request, context);
    } catch (error) {
      if (error instanceof Problem && error.status < 500) {
        // A problem the handler raised on purpose (404, 409, 422…) is this request's answer: keep it for the key.
        const body = problemResponseBody(error, req.originalUrl, context.requestId, locals(res).problemShape);
        await completeIdempotentRequest(platform.db, workspaceId, idempotencyKey, fingerprint, context.now, {
          status: error.status,
          headers: { ...error.headers, 'content-type': 'application/problem+json' },
          body: JSON.stringify(body),
        });
        sendProblem(res, error);
        return;
      }
      // A failure on our side: the error handler releases the key before it answers.
      throw error;
    }
    const { result, stream } = ran;
    if (stream) {
      // The key is kept only for a stream that ended normally, with every event it sent; a stream cut by the client
      // or failing midway is released, so that a retry runs anew (docs/server.md, Streams).
      locals(res).releaseIdempotencyKey = undefined;
      const releaseKey = () =>
        release().catch((error: unknown) =>
          platform.logger.error({ err: error, request_id: context.requestId }, 'could not release the Idempotency-Key'),
        );
      let sent: Awaited<ReturnType<typeof sendStream>>;
      try {
        sent = await sendStream(
          res,
          result,
          stream,
          context,
          (text) =>
            completeIdempotentRequest(platform.db, workspaceId, idempotencyKey, fingerprint, context.now, {
              status: result.status,
              headers: { ...result.headers, 'content-type': `${EVENT_STREAM}; charset=utf-8` },
              body: text,
            }),
          // Released before the `error` event ends the stream, so that a retry on seeing it runs anew.
          releaseKey,
        );
      } catch (error) {
        // Storing the finished stream failed (the database went away): a key neither stored nor released would answer
        // 409 to every retry until it is abandoned.
        await releaseKey();
        throw error;
      }
      if (sent === 'cut') await releaseKey();
      return;
    }
    await completeIdempotentRequest(platform.db, workspaceId, idempotencyKey, fingerprint, context.now, {
      status: result.status,
      headers: { ...result.headers, 'content-type': result.contentType },
      body: result.body === undefined ? null : JSON.stringify(result.body),
    });
    send(res, result);
  };
}

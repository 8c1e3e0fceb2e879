// One record per request: the structured access log line and, for requests made with a key of a
// workspace, the row of that workspace's request log (GET /v1/request-logs). Never a secret, a header or a body.
import type { NextFunction, Request, Response } from 'express';
import type { CompiledQuery, Insertable, Kysely } from 'kysely';
import { type Logger, pino } from 'pino';
import { isTransientError } from '../storage/errors.ts';
import type { Database, RequestLogEntriesTable } from '../storage/schema.ts';
import { iso } from './clock.ts';
import { locals } from './context.ts';

export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'content-service' }, timestamp: pino.stdTimeFunctions.isoTime });
}

/** The request-log row, with the request id under its own name and the key and workspace unknown for some requests. */
export type AccessRecord = Omit<RequestLogEntriesTable, 'id' | 'api_key_id' | 'workspace_id'> & {
  request_id: string;
  api_key_id: string | null;
  workspace_id: string | null;
};

export function accessRecord(req: Request, res: Response): AccessRecord {
  const state = locals(res);
  if (state.accessRecord) return state.accessRecord;
  const record: AccessRecord = {
    request_id: state.requestId,
    method: req.method,
    path: fullPath(req).slice(0, 2048),
    operation_id: state.operationId ?? null,
    status: res.statusCode,
    error_code: state.errorCode ?? null,
    duration_ms: Math.round(Number(process.hrtime.bigint() - state.startedAt) / 1e6),
    ip: clientIp(req),
    user_agent: req.get('user-agent')?.slice(0, 512) ?? null,
    api_key_id: state.apiKeyId ?? null,
    workspace_id: state.workspaceId ?? null,
    created_at: iso(state.receivedAt),
  };
  state.accessRecord = record;
  return record;
}

/**
 * The request's path from the root: `req.path` is relative to the router a request is in, and a router mounted under
 * a prefix (SCIM's, under /scim) is still handling it when the answer is sent.
 */
function fullPath(req: Request): string {
  if (req.url === req.originalUrl) return req.path;
  const query = req.originalUrl.indexOf('?');
  return query === -1 ? req.originalUrl : req.originalUrl.slice(0, query);
}

export function clientIp(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? '0.0.0.0';
}

/**
 * Whose fault an answer is decides its level: a client error (4xx) is the client's and is `info`, like a success;
 * `501 not_implemented` is an operation of the contract this server does not have yet, a known gap rather than a
 * failure, and is `warn`; any other 5xx is ours and is `error`.
 */
export function accessLogLevel(status: number): 'info' | 'warn' | 'error' {
  if (status === 501) return 'warn';
  return status >= 500 ? 'error' : 'info';
}

/**
 * The access log: one line per answered request, when it is sent (or when the connection closes first), at the level
 * accessLogLevel gives, with the access record and never a header or a body. No child logger per request, and no
 * line built when its level is off: the production level (warn) logs no 2xx line, and costs nothing for one.
 */
export function accessLog(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    let logged = false;
    const done = () => {
      if (logged) return;
      logged = true;
      const status = res.statusCode;
      const level = accessLogLevel(status);
      if (!logger.isLevelEnabled(level)) return;
      const access = accessRecord(req, res);
      // The trace's id (when traces are exported) under the name log tooling joins logs and traces on.
      const traced = locals(res).traceId === undefined ? { access } : { access, trace_id: locals(res).traceId };
      // A failure of ours carries an error, so that log tooling counts it as one; a 501 is an answer, not a failure.
      const fields = level === 'error' ? { ...traced, err: new Error(`failed with status code ${status}`) } : traced;
      logger[level](fields, `${req.method} ${access.path} ${status}`);
    };
    res.once('finish', done);
    res.once('close', done);
    next();
  };
}

/** The columns of a request log row, in the order of the compiled insert's parameters. */
const LOG_COLUMNS = [
  'id',
  'workspace_id',
  'api_key_id',
  'method',
  'path',
  'operation_id',
  'status',
  'error_code',
  'duration_ms',
  'ip',
  'user_agent',
  'created_at',
] as const satisfies ReadonlyArray<keyof Insertable<RequestLogEntriesTable>>;

/**
 * Writes request log rows in batches: one insert per batch instead of one per request keeps the log off the
 * latency of every request. A crash loses at most the last `flushIntervalMs` of log rows, never data.
 */
export class RequestLogWriter {
  #queue: Insertable<RequestLogEntriesTable>[] = [];
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();
  readonly #db: Kysely<Database>;
  readonly #logger: Logger;
  readonly #flushIntervalMs: number;
  readonly #inserts = new Map<number, CompiledQuery>();

  constructor(db: Kysely<Database>, logger: Logger, flushIntervalMs = 200) {
    this.#db = db;
    this.#logger = logger;
    this.#flushIntervalMs = flushIntervalMs;
  }

  add(record: AccessRecord): void {
    if (!record.workspace_id || !record.api_key_id) return;
    this.#queue.push({
      id: record.request_id,
      workspace_id: record.workspace_id,
      api_key_id: record.api_key_id,
      method: record.method,
      path: record.path,
      operation_id: record.operation_id,
      status: record.status,
      error_code: record.error_code,
      duration_ms: record.duration_ms,
      ip: record.ip,
      user_agent: record.user_agent,
      created_at: record.created_at,
    });
    if (this.#queue.length >= 200) void this.flush();
    else this.#timer ??= setTimeout(() => void this.flush(), this.#flushIntervalMs);
  }

  /**
   * The insert of `count` rows, built and compiled once per count: building an insert of 80 rows of 12 values with
   * Kysely cost more than SQLite's work to store them. Its parameters are the rows' values in LOG_COLUMNS order.
   */
  #insertOf(count: number): CompiledQuery {
    let compiled = this.#inserts.get(count);
    if (!compiled) {
      const placeholder = Object.fromEntries(
        LOG_COLUMNS.map((column) => [column, null]),
      ) as unknown as Insertable<RequestLogEntriesTable>;
      compiled = this.#db
        .insertInto('request_log_entries')
        .values(Array.from({ length: count }, () => placeholder))
        .compile();
      this.#inserts.set(count, compiled);
    }
    return compiled;
  }

  /** Writes what is queued; resolves when it is in the database. */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const batch = this.#queue.splice(0);
    this.#flushing = this.#flushing.then(async () => {
      // 12 columns a row: 80 rows stay under SQLite's and PostgreSQL's parameter limits.
      for (let i = 0; i < batch.length; i += 80) {
        const rows = batch.slice(i, i + 80);
        // A lost connection or a deadlock PostgreSQL undid passes: the rows are written again, a few times.
        for (let attempt = 1; ; attempt++) {
          try {
            await this.#db.executeQuery({
              ...this.#insertOf(rows.length),
              parameters: rows.flatMap((row) => LOG_COLUMNS.map((column) => row[column])),
            });
            break;
          } catch (error) {
            // The attempt before committed, and its connection was lost before it could say so.
            if (attempt > 1 && (error as { code?: string }).code === '23505') break;
            if (isTransientError(error) && attempt < 4) {
              await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
              continue;
            }
            this.#logger.error({ err: error, rows: rows.length }, 'could not write request log rows');
            break;
          }
        }
      }
    });
    return this.#flushing;
  }
}

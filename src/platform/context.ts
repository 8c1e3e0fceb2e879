// What the platform hands every operation handler: the request's identity and the services it may use; and the
// typed state that the middleware keeps for one request (`locals(res)`).
import type { Response } from 'express';
import type { Kysely, Selectable } from 'kysely';
import type { Logger } from 'pino';
import type { components } from '../../generated/openapi.ts';
import type { OperationId } from '../../generated/operations.ts';
import type { Config } from '../config.ts';
import type { Storage } from '../storage/database.ts';
import type { ApiKeysTable, Database, WorkspacesTable } from '../storage/schema.ts';
import type { KeyCacheOfPlatform } from './auth.ts';
import type { Clock } from './clock.ts';
import type { Drain } from './drain.ts';
import type { Feature, ProblemShaper } from './feature.ts';
import type { AccessRecord, RequestLogWriter } from './logging.ts';
import type { Metrics } from './metrics.ts';
import type { RateLimitStore } from './rate-limit.ts';
import type { YamlBody } from './yaml-body.ts';

/** The contract's Role: owner > admin > editor > viewer. */
export type Role = components['schemas']['Role'];
export type WorkspaceRow = Selectable<WorkspacesTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;

/** The long-lived parts of the server, built once at start-up. */
/**
 * The long-lived services that features share: the content engine, the documents' real-time sessions, the workflows'
 * runtime. The platform knows none of them: each feature declares its own here (`declare module`, as its tables on
 * Database), and src/services.ts builds them once at start and releases them at shutdown.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging (`declare module`), which a type alias cannot take
export interface Services {}

export interface Platform {
  config: Config;
  storage: Storage;
  db: Kysely<Database>;
  clock: Clock;
  logger: Logger;
  rateLimitStore: RateLimitStore;
  requestLog: RequestLogWriter;
  /** The keys that authenticated lately (src/platform/key-cache.ts); its plugin must be on `db`. */
  keyCache: KeyCacheOfPlatform;
  /** The server's metrics (GET /metrics): features and the engine record into it. */
  metrics: Metrics;
  /** The registered features (src/features/index.ts), handed down by the entry point that built this platform. */
  features: readonly Feature[];
  services: Services;
  /** What is in flight, tracked so that shutdown waits for it; its deadline ends the streams still open. */
  drain: Drain;
}

/** The API key that made the request (a key's, or a session's own), and its workspace. */
export interface Caller {
  workspace: WorkspaceRow;
  apiKey: ApiKeyRow;
  role: Role;
  /** The member the key acts on behalf of (`usr_…`); null for a service key. */
  userId: string | null;
  /**
   * The person's session (`ses_…`) when the request came with the session cookie instead of a key (the sessions
   * feature): `apiKey` is then the session's own key.
   */
  sessionId?: string;
}

/** The chatbot whose embed key authenticated a request of the public widget (the `embedKey` scheme). */
export interface EmbedCaller {
  workspace: WorkspaceRow;
  chatbotId: string;
}

export interface RequestContext {
  platform: Platform;
  requestId: string;
  /** The instant the request was received; one value for everything the request writes. */
  now: Date;
  /** The request's public URL (PUBLIC_BASE_URL and the path and query), for `Link` headers. */
  url: URL;
  ip: string;
  userAgent: string | null;
  /** Content negotiation: the first of `types` that the request's Accept header prefers, or false (Express's req.accepts). */
  accepts(...types: string[]): string | false;
  /**
   * Aborted when the client goes away before the answer is complete (it closed the connection, or the server is
   * shutting down and closed it): long work, a streamed answer above all, stops when it fires.
   */
  signal: AbortSignal;
  /** Runs `callback` once the response is over, sent whole or cut off (what the request held is given back then). */
  onFinished(callback: () => void): void;
  /** Present on every operation that needs a key; reading it on a public operation is a bug and throws. */
  readonly caller: Caller;
  /** The request's body when it was sent as YAML, with the places of its nodes (yaml-body.ts). */
  readonly yamlBody?: YamlBody;
  /** Present on the widget's operations (embed key); reading it elsewhere is a bug and throws. */
  readonly embed: EmbedCaller;
}

export const roleRank: Record<Role, number> = { viewer: 0, editor: 1, admin: 2, owner: 3 };
/** Every role, highest first (the keys of roleRank, which the compiler holds to the contract's Role). */
export const ROLES = (Object.keys(roleRank) as Role[]).sort((a, b) => roleRank[b] - roleRank[a]);

export function atLeast(role: Role, minimum: Role): boolean {
  return roleRank[role] >= roleRank[minimum];
}

/**
 * The caller's role as a refusal names it: a signed-in person acts through their session's own key, which they never
 * saw, so the role is theirs; a key's caller is told the key's.
 */
export function callerRole(caller: Caller): string {
  return caller.sessionId === undefined ? `the key's role is ${caller.role}` : `your role is ${caller.role}`;
}

/** The caller as a refusal's sentence begins with it: `An admin key`, or `A signed-in admin` (see callerRole). */
export function callerName(caller: Caller): string {
  if (caller.sessionId !== undefined) return `A signed-in ${caller.role}`;
  return `${/^[aeiou]/.test(caller.role) ? 'An' : 'A'} ${caller.role} key`;
}

/**
 * What the middleware knows of one request, kept on `res.locals` and read through `locals(res)`, so that every
 * reader and writer agrees on the names and types (Express types `res.locals` as `Record<string, any>`).
 */
export interface RequestLocals {
  receivedAt: Date;
  startedAt: bigint;
  requestId: string;
  /** The trace of the request's span, when traces are exported (src/platform/telemetry.ts). */
  traceId?: string;
  /** The operation routing resolved; unset for 404/405. */
  operationId?: OperationId;
  /** Its path parameters by name, as sent (percent-encoded): the contract validator refuses a malformed one first. */
  pathParams?: Record<string, string>;
  /** The feature's problem shape of that operation (Feature.problemShapes). */
  problemShape?: ProblemShaper;
  /** Set by authentication. */
  caller?: Caller;
  /** Set by the embed key's authentication (the chatbots feature). */
  embed?: EmbedCaller;
  /** Known as soon as a key is recognised, even when it is then refused: the request log needs them. */
  apiKeyId?: string;
  workspaceId?: string;
  /** The `code` of the problem answered, for the logs. */
  errorCode?: string;
  /** Set while a request holds an Idempotency-Key; the error handler calls it on a 5xx (operations.ts). */
  releaseIdempotencyKey?: () => Promise<void>;
  accessRecord?: AccessRecord;
  /** A body sent as YAML, parsed (yaml-body.ts): errors about its fields say where they are in the text. */
  yamlBody?: YamlBody;
  /** Ends the workspace's turn of reading a large body, when the request holds it (large-bodies.ts). */
  largeBodyTurn?: () => void;
}

export function locals(res: Response): RequestLocals {
  return res.locals as RequestLocals;
}

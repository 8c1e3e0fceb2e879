// What the platform hands every operation handler: the request's identity and the services it may use.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Database } from '../storage/schema.ts';
import type { Storage } from '../storage/database.ts';
import type { Clock } from './clock.ts';
import type { RequestLogWriter } from './logging.ts';
import type { RateLimitStore } from './rate-limit.ts';
import type { Selectable } from 'kysely';
import type { ApiKeysTable, WorkspacesTable } from '../storage/schema.ts';

export type Role = 'owner' | 'admin' | 'editor' | 'viewer';
export type WorkspaceRow = Selectable<WorkspacesTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;

/** The long-lived parts of the server, built once at start-up. */
export interface Platform {
  config: Config;
  storage: Storage;
  db: Kysely<Database>;
  clock: Clock;
  logger: Logger;
  rateLimitStore: RateLimitStore;
  requestLog: RequestLogWriter;
}

/** The API key that made the request, and its workspace. */
export interface Caller {
  workspace: WorkspaceRow;
  apiKey: ApiKeyRow;
  role: Role;
  /** The member the key acts on behalf of (`usr_…`); null for a service key. */
  userId: string | null;
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
  /** Present on every operation that needs a key; reading it on a public operation is a bug and throws. */
  readonly caller: Caller;
}

export const roleRank: Record<Role, number> = { viewer: 0, editor: 1, admin: 2, owner: 3 };

export function atLeast(role: Role, minimum: Role): boolean {
  return roleRank[role] >= roleRank[minimum];
}

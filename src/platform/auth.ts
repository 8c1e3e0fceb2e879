// API keys: secrets, hashing, and the middleware that turns `Authorization: Bearer …` into a caller.
import { createHash, randomBytes } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { CompiledQuery, Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';
import { iso } from './clock.ts';
import { type ApiKeyRow, type Caller, locals, type Platform, type WorkspaceRow } from './context.ts';
import type { KeyCache } from './key-cache.ts';
import { Problem } from './problems.ts';

const SECRET_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A new secret: `cs_live_` (an API key's; a directory token's is `cs_scim_`) and 40 base62 characters (238 bits). */
export function newSecret(prefix = 'cs_live_'): string {
  const bytes = randomBytes(40);
  let out = prefix;
  // 256 % 62 leaves a bias of under 2% on some characters, which costs a fraction of a bit of the 238.
  for (const byte of bytes) out += SECRET_ALPHABET[byte % 62];
  return out;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export type KeyStatus = 'active' | 'expired' | 'revoked';

export function keyStatus(key: Pick<ApiKeyRow, 'revoked_at' | 'expires_at'>, now: Date): KeyStatus {
  if (key.revoked_at) return 'revoked';
  if (key.expires_at && key.expires_at <= iso(now)) return 'expired';
  return 'active';
}

/**
 * The query of findKeyBySecret, built and compiled once per database handle: every authenticated request runs it, and
 * building it with Kysely, then looking its freshly made SQL text up among the prepared statements, cost more than
 * running it. Its two parameters are both the secret's hash.
 */
const keyLookups = new WeakMap<Kysely<Database>, ReturnType<typeof compileKeyLookup>>();
function compileKeyLookup(db: Kysely<Database>) {
  return db
    .selectFrom('api_keys')
    .innerJoin('workspaces', 'workspaces.id', 'api_keys.workspace_id')
    .selectAll('api_keys')
    .select([
      'workspaces.name as workspace_name',
      'workspaces.region as workspace_region',
      'workspaces.created_at as workspace_created_at',
      'workspaces.updated_at as workspace_updated_at',
      'workspaces.event_sequence as workspace_event_sequence',
    ])
    .where((eb) => eb.or([eb('api_keys.secret_hash', '=', ''), eb('api_keys.previous_secret_hash', '=', '')]))
    .compile();
}
type KeyLookupRow = ReturnType<typeof compileKeyLookup> extends CompiledQuery<infer Row> ? Row : never;
function keyLookup(db: Kysely<Database>): ReturnType<typeof compileKeyLookup> {
  let compiled = keyLookups.get(db);
  if (!compiled) keyLookups.set(db, (compiled = compileKeyLookup(db)));
  return compiled;
}

/** A key as authentication finds it: the key with its workspace. What the key cache remembers. */
export interface FoundKey {
  key: ApiKeyRow;
  workspace: WorkspaceRow;
}

/** What the platform's key cache (src/platform/key-cache.ts) remembers by a secret's hash. */
export type KeyCacheOfPlatform = KeyCache<FoundKey>;

/**
 * The key whose current or previous secret is `secret`, whatever its status, from the cache when it remembers it.
 * `secretValid` is false for a previous secret past its grace period: the request is refused but still belongs to the
 * key's request log. It is decided here, at `now`, also for a remembered key.
 */
export async function findKeyBySecret(
  db: Kysely<Database>,
  secret: string,
  now: Date,
  cache?: { keys: KeyCacheOfPlatform; requestBegan: bigint },
): Promise<(FoundKey & { secretValid: boolean }) | undefined> {
  const hash = hashSecret(secret);
  let found = cache?.keys.get(hash, cache.requestBegan);
  if (!found) {
    const token = cache?.keys.token();
    const row = (await db.executeQuery<KeyLookupRow>({ ...keyLookup(db), parameters: [hash, hash] })).rows[0];
    if (!row) return undefined;
    const {
      workspace_name,
      workspace_region,
      workspace_created_at,
      workspace_updated_at,
      workspace_event_sequence,
      ...key
    } = row;
    const workspace: WorkspaceRow = {
      id: row.workspace_id,
      name: workspace_name,
      region: workspace_region,
      created_at: workspace_created_at,
      updated_at: workspace_updated_at,
      event_sequence: workspace_event_sequence,
    };
    found = { key, workspace };
    cache?.keys.set(hash, found, token!);
  }
  const { key } = found;
  const secretValid =
    key.secret_hash === hash || (key.previous_secret_expires_at !== null && key.previous_secret_expires_at > iso(now));
  return { ...found, secretValid };
}

const BEARER = /^Bearer[ \t]+([\x21-\x7E]{1,512})[ \t]*$/i;

/**
 * Notes the key of a request that no operation will handle (404 route_not_found, 405), so that the request still
 * reaches its workspace's request log with `operation_id: null`. Refuses nothing.
 */
export async function identifyKey(platform: Platform, req: Request, res: Response): Promise<void> {
  const match = BEARER.exec(req.get('authorization') ?? '');
  if (!match) return;
  const state = locals(res);
  const found = await findKeyBySecret(platform.db, match[1]!, state.receivedAt, {
    keys: platform.keyCache,
    requestBegan: state.startedAt,
  });
  if (!found) return;
  locals(res).apiKeyId = found.key.id;
  locals(res).workspaceId = found.workspace.id;
}

/**
 * Authenticates the request and checks its workspace's region. Sets `locals(res).caller`; also `apiKeyId` and
 * `workspaceId` as soon as the key is known, so that even a refused request of a known key reaches its request log.
 */
export function authenticate(platform: Platform) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const match = BEARER.exec(req.get('authorization') ?? '');
    if (!match) throw new Problem('unauthenticated', 'Send a valid API key as Authorization: Bearer <key>.');
    const state = locals(res);
    const now = state.receivedAt;
    const found = await findKeyBySecret(platform.db, match[1]!, now, {
      keys: platform.keyCache,
      requestBegan: state.startedAt,
    });
    if (!found) throw new Problem('unauthenticated', 'The API key is not valid.');
    const { key, workspace } = found;
    state.apiKeyId = key.id;
    state.workspaceId = workspace.id;
    const status = keyStatus(key, now);
    if (status !== 'active') throw new Problem('unauthenticated', `The API key is ${status}.`);
    if (!found.secretValid)
      throw new Problem(
        'unauthenticated',
        "The secret was rotated and its 24-hour grace period is over; use the key's new secret.",
      );
    if (workspace.region !== platform.config.region) {
      const baseUrl = platform.config.regionBaseUrls[workspace.region];
      throw new Problem('wrong_region', `Workspace ${workspace.id} is homed in ${workspace.region}.`, {
        extra: { region: workspace.region, base_url: baseUrl },
      });
    }
    const caller: Caller = { workspace, apiKey: key, role: key.role, userId: key.user_id };
    state.caller = caller;
    void touchLastUsed(platform, key, now);
    next();
  };
}

// `last_used_at` is kept to the minute, so a busy key costs one write a minute, not one per request. The key may be
// the cache's: it is told the minute too (the only change of a remembered key that does not drop the cache), so that
// its next requests in that minute write nothing. The write is not awaited and may land after the answer, when the key
// may have been revoked since it was read; a revoked key does not change any more (revoking it again answers the same
// key), so the write then skips it. The promise resolves once the write is done or skipped, and never rejects (a
// failure is logged).
export function touchLastUsed(platform: Platform, key: ApiKeyRow, now: Date): Promise<void> {
  const minute = iso(new Date(Math.floor(now.getTime() / 60_000) * 60_000));
  if (key.last_used_at !== null && key.last_used_at >= minute) return Promise.resolve();
  key.last_used_at = minute;
  return platform.db
    .updateTable('api_keys')
    .set({ last_used_at: minute })
    .where('id', '=', key.id)
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', minute)]))
    .execute()
    .then(
      () => undefined,
      (error: unknown) => platform.logger.warn({ err: error, api_key_id: key.id }, 'could not record last_used_at'),
    );
}

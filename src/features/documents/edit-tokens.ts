// Edit tokens: `edt_` + a JWT (HS256, jose) naming the document, its workspace, the permission, the API key that
// asked for it and the member its edits are attributed to. Signed, not stored: any server process on the same
// database verifies it with the key kept there (document_token_keys), created by the first process that needs it.
import { randomBytes } from 'node:crypto';
import { errors, type JWTPayload, jwtVerify, SignJWT } from 'jose';
import type { Kysely } from 'kysely';
import { iso } from '../../platform/clock.ts';
import { isCanonicalBase64url } from '../../platform/signed-links.ts';
import type { Database } from '../../storage/schema.ts';

export type EditPermission = 'edit' | 'read';

export interface EditClaims {
  documentId: string;
  workspaceId: string;
  permission: EditPermission;
  apiKeyId: string;
  userId: string | null;
}

/** Why a token was refused; the realtime channel sends it as the Auth message's reason (AsyncAPI document). */
export type TokenRefusal = 'token_invalid' | 'token_expired' | 'token_wrong_document';

export class TokenRefused extends Error {
  readonly reason: TokenRefusal;
  constructor(reason: TokenRefusal) {
    super(reason);
    this.reason = reason;
  }
}

const PREFIX = 'edt_';
const KEY_ID = 'edit-token';
const keys = new WeakMap<Kysely<Database>, Map<string, Promise<Uint8Array>>>();

/**
 * A signing key of this database by purpose (`edit-token`; the chatbots' `transcript-link`), created on first use (a
 * race between processes keeps the first row). The table is the documents feature's, named for its first purpose.
 */
export function storedSigningKey(db: Kysely<Database>, id: string, now: Date): Promise<Uint8Array> {
  let ofDb = keys.get(db);
  if (!ofDb) keys.set(db, (ofDb = new Map()));
  let key = ofDb.get(id);
  if (!key) {
    key = (async () => {
      await db
        .insertInto('document_token_keys')
        .values({ id, secret: randomBytes(32).toString('base64url'), created_at: iso(now) })
        .onConflict((conflict) => conflict.column('id').doNothing())
        .execute();
      const row = await db
        .selectFrom('document_token_keys')
        .select('secret')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      return new Uint8Array(Buffer.from(row.secret, 'base64url'));
    })();
    key.catch(() => ofDb.delete(id));
    ofDb.set(id, key);
  }
  return key;
}

export async function signEditToken(
  db: Kysely<Database>,
  claims: EditClaims,
  now: Date,
  expiresAt: Date,
): Promise<string> {
  const jwt = await new SignJWT({
    wsp: claims.workspaceId,
    perm: claims.permission,
    key: claims.apiKeyId,
    usr: claims.userId,
  })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(claims.documentId)
    .setIssuedAt(Math.floor(now.getTime() / 1000))
    .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
    .sign(await storedSigningKey(db, KEY_ID, now));
  return PREFIX + jwt;
}

/** The claims of a valid token for `documentId`; throws TokenRefused otherwise. */
export async function verifyEditToken(
  db: Kysely<Database>,
  token: string,
  documentId: string,
  now: Date,
): Promise<EditClaims> {
  // jose decodes the signature leniently; a token works only as the server wrote it (src/platform/signed-links.ts).
  const signature = token.split('.')[2];
  if (!token.startsWith(PREFIX) || signature === undefined || !isCanonicalBase64url(signature))
    throw new TokenRefused('token_invalid');
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token.slice(PREFIX.length), await storedSigningKey(db, KEY_ID, now), {
      algorithms: ['HS256'],
      currentDate: now,
    }));
  } catch (error) {
    if (error instanceof errors.JWTExpired) throw new TokenRefused('token_expired');
    if (error instanceof errors.JOSEError) throw new TokenRefused('token_invalid');
    throw error;
  }
  const { sub, wsp, perm, key, usr } = payload as Record<string, unknown>;
  if (
    typeof sub !== 'string' ||
    typeof wsp !== 'string' ||
    (perm !== 'edit' && perm !== 'read') ||
    typeof key !== 'string'
  )
    throw new TokenRefused('token_invalid');
  if (sub !== documentId) throw new TokenRefused('token_wrong_document');
  return {
    documentId: sub,
    workspaceId: wsp,
    permission: perm,
    apiKeyId: key,
    userId: typeof usr === 'string' ? usr : null,
  };
}

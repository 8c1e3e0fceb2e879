// A SCIM request's directory token: `Authorization: Bearer cs_scim_…`, current or in its rotation's grace period, not
// revoked, and of the workspace the path names. Every refusal is the same 401, so that the answer tells nothing about
// which workspaces or tokens exist.
import type { Request } from 'express';
import type { Kysely } from 'kysely';
import { hashSecret } from '../../../platform/auth.ts';
import { iso } from '../../../platform/clock.ts';
import type { Database } from '../../../storage/schema.ts';
import type { DirectoryTokenRow } from '../presenters.ts';
import { scimError } from './scimmy.ts';

const BEARER = /^Bearer[ \t]+([\x21-\x7E]{1,512})[ \t]*$/i;
/** last_used_at is kept to the minute: a busy directory writes it once a minute, not once a request. */
const LAST_USED_RESOLUTION_MS = 60_000;

export async function authenticateDirectory(
  db: Kysely<Database>,
  req: Request,
  workspaceId: string,
  now: Date,
): Promise<DirectoryTokenRow> {
  const refused = scimError(401, null, 'Send a directory token of this workspace as Authorization: Bearer <token>.');
  const secret = BEARER.exec(req.get('authorization') ?? '')?.[1];
  if (!secret) throw refused;
  const hash = hashSecret(secret);
  const token = await db
    .selectFrom('directory_tokens')
    .selectAll()
    .where((eb) => eb.or([eb('secret_hash', '=', hash), eb('previous_secret_hash', '=', hash)]))
    .executeTakeFirst();
  if (!token || token.revoked_at !== null || token.workspace_id !== workspaceId) throw refused;
  const current = token.secret_hash === hash;
  if (!current && !(token.previous_secret_expires_at !== null && token.previous_secret_expires_at > iso(now)))
    throw refused;
  const lastUsed = token.last_used_at ? Date.parse(token.last_used_at) : 0;
  if (now.getTime() - lastUsed >= LAST_USED_RESOLUTION_MS) {
    const minute = new Date(Math.floor(now.getTime() / LAST_USED_RESOLUTION_MS) * LAST_USED_RESOLUTION_MS);
    await db
      .updateTable('directory_tokens')
      .set({ last_used_at: iso(minute) })
      .where('id', '=', token.id)
      .execute();
  }
  return token;
}

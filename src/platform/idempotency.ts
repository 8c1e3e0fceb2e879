// Idempotency-Key (DESIGN.md): the same key and the same request get the stored answer again; the same key with a
// different request is 422 idempotency_key_reused; while the first is still running, 409 idempotency_key_in_use.
// Keys are scoped to the workspace and kept 24 hours. The record lives in the database, so every server process
// sees it and a restart forgets nothing.
//
// The stored answer can hold a secret (createApiKey, rotateApiKey), and secrets are kept only hashed. So the table
// holds a hash of the Idempotency-Key, and the answer encrypted (AES-256-GCM) with a key derived from the
// Idempotency-Key itself, which the client has and the database does not: reading the table reveals no answer.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';
import { iso } from './clock.ts';
import { Problem } from './problems.ts';

export const IDEMPOTENCY_RETENTION_HOURS = 24;
/**
 * A request that has been "running" this long was cut off (the process died). Its key is then free again rather
 * than answering 409 for the rest of the 24 hours. Longer than any request may take.
 */
export const IDEMPOTENCY_LEASE_MS = 5 * 60_000;

/** The headers of a stored answer that a replay repeats. */
const REPLAYED_HEADERS = ['location', 'content-type', 'link'];

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string | null;
}

/** What the `key` column holds: a hash of the client's Idempotency-Key. */
export function storedKey(key: string): string {
  return createHash('sha256').update(`idempotency-key\n${key}`).digest('hex');
}

function answerKey(workspaceId: string, key: string): Buffer {
  return createHash('sha256').update(`idempotency-answer\n${workspaceId}\n${key}`).digest();
}

function sealAnswer(workspaceId: string, key: string, body: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', answerKey(workspaceId, key), iv);
  const sealed = Buffer.concat([cipher.update(body, 'utf8'), cipher.final()]);
  return [iv, cipher.getAuthTag(), sealed].map((part) => part.toString('base64')).join('.');
}

function openAnswer(workspaceId: string, key: string, stored: string): string {
  const [iv, tag, sealed] = stored.split('.').map((part) => Buffer.from(part, 'base64'));
  const decipher = createDecipheriv('aes-256-gcm', answerKey(workspaceId, key), iv!);
  decipher.setAuthTag(tag!);
  return Buffer.concat([decipher.update(sealed!), decipher.final()]).toString('utf8');
}

export type IdempotencyOutcome = { kind: 'proceed' } | { kind: 'replay'; response: StoredResponse };

export function requestFingerprint(method: string, path: string, body: unknown, apiKeyId: string): string {
  return createHash('sha256')
    .update(`${apiKeyId}\n${method} ${path}\n`)
    .update(body === undefined ? '' : JSON.stringify(body))
    .digest('hex');
}

export async function beginIdempotentRequest(
  db: Kysely<Database>,
  workspaceId: string,
  clientKey: string,
  fingerprint: string,
  now: Date,
): Promise<IdempotencyOutcome> {
  const key = storedKey(clientKey);
  for (let attempt = 0; attempt < 3; attempt++) {
    const inserted = await db
      .insertInto('idempotency_keys')
      .values({
        workspace_id: workspaceId,
        key,
        fingerprint,
        state: 'running',
        response_status: null,
        response_headers: null,
        response_body: null,
        created_at: iso(now),
        expires_at: iso(new Date(now.getTime() + IDEMPOTENCY_RETENTION_HOURS * 3_600_000)),
      })
      .onConflict((oc) => oc.columns(['workspace_id', 'key']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1) return { kind: 'proceed' };

    const existing = await db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('key', '=', key)
      .executeTakeFirst();
    if (!existing) continue; // removed meanwhile: try to take it again
    const abandoned =
      existing.state === 'running' && existing.created_at <= iso(new Date(now.getTime() - IDEMPOTENCY_LEASE_MS));
    if (existing.expires_at <= iso(now) || abandoned) {
      // Forget it only if it is still the record we looked at, so two requests cannot both take over.
      await db
        .deleteFrom('idempotency_keys')
        .where('workspace_id', '=', workspaceId)
        .where('key', '=', key)
        .where('created_at', '=', existing.created_at)
        .where('state', '=', existing.state)
        .execute();
      continue;
    }
    if (existing.fingerprint !== fingerprint) {
      throw new Problem(
        'idempotency_key_reused',
        'This Idempotency-Key was used with a different request in the last 24 hours; use a new key for a new request.',
      );
    }
    if (existing.state === 'running') {
      throw new Problem(
        'idempotency_key_in_use',
        'A request with this Idempotency-Key is still running; retry after it has finished.',
        { headers: { 'Retry-After': '1' } },
      );
    }
    return {
      kind: 'replay',
      response: {
        status: existing.response_status!,
        headers: JSON.parse(existing.response_headers ?? '{}'),
        body: existing.response_body === null ? null : openAnswer(workspaceId, clientKey, existing.response_body),
      },
    };
  }
  throw new Problem(
    'idempotency_key_in_use',
    'A request with this Idempotency-Key is being processed; retry in a moment.',
    { headers: { 'Retry-After': '1' } },
  );
}

/**
 * Stores the answer in the record this request made (its fingerprint and start). A request that was cut off (see
 * IDEMPOTENCY_LEASE_MS) and ends after all finds another request's record, or none: it stores nothing, so the key
 * keeps replaying the answer of the request that took it over.
 */
export async function completeIdempotentRequest(
  db: Kysely<Database>,
  workspaceId: string,
  clientKey: string,
  fingerprint: string,
  startedAt: Date,
  response: { status: number; headers: Record<string, string | number | string[] | undefined>; body: string | null },
): Promise<void> {
  const key = storedKey(clientKey);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (REPLAYED_HEADERS.includes(name.toLowerCase()) && value !== undefined)
      headers[name.toLowerCase()] = String(value);
  }
  await db
    .updateTable('idempotency_keys')
    .set({
      state: 'completed',
      response_status: response.status,
      response_headers: JSON.stringify(headers),
      response_body: response.body === null ? null : sealAnswer(workspaceId, clientKey, response.body),
    })
    .where('workspace_id', '=', workspaceId)
    .where('key', '=', key)
    .where('fingerprint', '=', fingerprint)
    .where('created_at', '=', iso(startedAt))
    .execute();
}

/**
 * The request failed on our side (5xx): forget the key so that a retry with it runs the request again. Only the
 * record this request made (its fingerprint and start), whether still running or already completed with an answer
 * that then failed response validation.
 */
export async function releaseIdempotentRequest(
  db: Kysely<Database>,
  workspaceId: string,
  clientKey: string,
  fingerprint: string,
  startedAt: Date,
): Promise<void> {
  const key = storedKey(clientKey);
  await db
    .deleteFrom('idempotency_keys')
    .where('workspace_id', '=', workspaceId)
    .where('key', '=', key)
    .where('fingerprint', '=', fingerprint)
    .where('created_at', '=', iso(startedAt))
    .execute();
}

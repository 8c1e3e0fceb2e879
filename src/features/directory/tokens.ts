// Directory tokens: an owner creates one for a directory (the secret shown once, kept as its SHA-256 hash, like an
// API key's), lists, rotates (the previous secret works 24 hours more) and revokes them; each change is audited.
import type { Handlers } from '../../../generated/operations.ts';
import { byRequest, recordAudit } from '../../platform/audit.ts';
import { hashSecret, newSecret } from '../../platform/auth.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem } from '../../platform/problems.ts';
import { type DirectoryTokenRow, presentDirectoryToken } from './presenters.ts';

export const TOKEN_PREFIX = 'cs_scim_';
const ROTATION_GRACE_MS = 24 * 3_600_000;

function tokensOf(context: RequestContext) {
  return context.platform.db
    .selectFrom('directory_tokens')
    .selectAll()
    .where('workspace_id', '=', context.caller.workspace.id);
}

async function findToken(context: RequestContext, id: string): Promise<DirectoryTokenRow> {
  const token = await tokensOf(context).where('id', '=', id).executeTakeFirst();
  if (!token) throw notFound('directory token', id);
  return token;
}

function present(context: RequestContext, token: DirectoryTokenRow) {
  const { config } = context.platform;
  return presentDirectoryToken(token, config.regionBaseUrls[context.caller.workspace.region], context.now);
}

export const directoryTokenHandlers = {
  async listDirectoryTokens(request, context) {
    const page = pageRequest(request.query);
    let query = tokensOf(context);
    if (request.query.status === 'active') query = query.where('revoked_at', 'is', null);
    if (request.query.status === 'revoked') query = query.where('revoked_at', 'is not', null);
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const { body, headers } = toPage(
      rows,
      page,
      (row) => ({ id: row.id }),
      (row) => present(context, row),
      context.url,
    );
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async createDirectoryToken(request, context) {
    const { name, directory } = request.body;
    const secret = newSecret(TOKEN_PREFIX);
    const token: DirectoryTokenRow = {
      id: newId('dtk', context.now),
      workspace_id: context.caller.workspace.id,
      name,
      directory,
      secret_hash: hashSecret(secret),
      last4: secret.slice(-4),
      previous_secret_hash: null,
      previous_secret_expires_at: null,
      created_by_api_key_id: context.caller.apiKey.id,
      created_by_user_id: context.caller.userId,
      created_at: iso(context.now),
      updated_at: iso(context.now),
      last_used_at: null,
      rotated_at: null,
      revoked_at: null,
    };
    await context.platform.db.transaction().execute(async (trx) => {
      await trx.insertInto('directory_tokens').values(token).execute();
      await recordAudit(trx, byRequest(context), {
        action: 'directory_token.created',
        target: { type: 'directory_token', id: token.id, display_name: name },
        details: { name, directory },
      });
    });
    return {
      status: 201,
      contentType: 'application/json',
      headers: { Location: `/v1/directory-tokens/${token.id}` },
      body: { ...present(context, token), secret },
    };
  },

  async getDirectoryToken(request, context) {
    const token = await findToken(context, request.path.id);
    return { status: 200, contentType: 'application/json', body: present(context, token) };
  },

  async rotateDirectoryToken(request, context) {
    const current = await findToken(context, request.path.id);
    if (current.revoked_at) {
      throw new Problem(
        'directory_token_inactive',
        `Directory token ${current.id} is revoked; create a new token instead.`,
      );
    }
    const secret = newSecret(TOKEN_PREFIX);
    const graceEnds = iso(new Date(context.now.getTime() + ROTATION_GRACE_MS));
    const rotated = await context.platform.db.transaction().execute(async (trx) => {
      // Applies only to the secret it read: of two rotations at once, the second finds it changed and answers 409.
      const row = await trx
        .updateTable('directory_tokens')
        .set({
          secret_hash: hashSecret(secret),
          last4: secret.slice(-4),
          previous_secret_hash: current.secret_hash,
          previous_secret_expires_at: graceEnds,
          rotated_at: iso(context.now),
          updated_at: iso(context.now),
        })
        .where('id', '=', current.id)
        .where('secret_hash', '=', current.secret_hash)
        .where('revoked_at', 'is', null)
        .returningAll()
        .executeTakeFirst();
      if (!row) return undefined;
      await recordAudit(trx, byRequest(context), {
        action: 'directory_token.rotated',
        target: { type: 'directory_token', id: current.id, display_name: current.name },
        details: { directory: current.directory, previous_secret_expires_at: graceEnds },
      });
      return row;
    });
    if (!rotated) throw new Problem('conflict', `Directory token ${current.id} changed meanwhile; retry.`);
    return { status: 200, contentType: 'application/json', body: { ...present(context, rotated), secret } };
  },

  async revokeDirectoryToken(request, context) {
    const token = await findToken(context, request.path.id);
    if (token.revoked_at) return { status: 200, contentType: 'application/json', body: present(context, token) };
    const revoked = await context.platform.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('directory_tokens')
        .set({
          revoked_at: iso(context.now),
          updated_at: iso(context.now),
          previous_secret_hash: null,
          previous_secret_expires_at: null,
        })
        .where('id', '=', token.id)
        .where('revoked_at', 'is', null)
        .returningAll()
        .executeTakeFirst();
      // Revoked by a concurrent request: the answer is the same.
      if (!row) return undefined;
      await recordAudit(trx, byRequest(context), {
        action: 'directory_token.revoked',
        target: { type: 'directory_token', id: token.id, display_name: token.name },
        details: { directory: token.directory },
      });
      return row;
    });
    return {
      status: 200,
      contentType: 'application/json',
      body: present(context, revoked ?? (await findToken(context, token.id))),
    };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  'listDirectoryTokens' | 'createDirectoryToken' | 'getDirectoryToken' | 'rotateDirectoryToken' | 'revokeDirectoryToken'
>;

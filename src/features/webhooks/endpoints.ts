// Webhook endpoints: where a workspace's events go. The signing secret is shown at creation and rotation only;
// a rotation keeps the previous secret signing for 24 hours. Disabling or deleting an endpoint ends its pending
// deliveries (`failed`). URLs pass the SSRF policy (url-policy.ts) whenever they are set.
import { randomBytes } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { Handlers } from '../../../generated/operations.ts';
import { byRequest, recordAudit } from '../../platform/audit.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { lockOwned } from '../../platform/owned.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem } from '../../platform/problems.ts';
import { forUpdate } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';
import { presentEndpoint, presentEndpointWithSecret } from './presenters.ts';
import { checkWebhookUrl } from './url-policy.ts';

export const MAX_ENDPOINTS_PER_WORKSPACE = 20;
export const SECRET_GRACE_MS = 24 * 3600_000;

/** `whsec_` and 43 characters: 32 random bytes, base64url. */
function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

function endpointsOf(db: RequestContext['platform']['db'] | Transaction<Database>, workspaceId: string) {
  return db.selectFrom('webhook_endpoints').selectAll().where('workspace_id', '=', workspaceId);
}

/** Ends every pending delivery of the endpoint: nothing more is sent to it. */
async function failPendingDeliveries(trx: Transaction<Database>, endpointId: string): Promise<void> {
  await trx
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', next_attempt_at: null })
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'pending')
    .execute();
}

export const endpointHandlers = {
  async listWebhookEndpoints(request, context) {
    const page = pageRequest(request.query);
    let query = endpointsOf(context.platform.db, context.caller.workspace.id);
    if (request.query.enabled !== undefined) query = query.where('enabled', '=', request.query.enabled ? 1 : 0);
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const { body, headers } = toPage(
      rows,
      page,
      (row) => ({ id: row.id }),
      (row) => presentEndpoint(row, context.now),
      context.url,
    );
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async createWebhookEndpoint(request, context) {
    const { url, event_types, description = null, enabled = true, metadata = {} } = request.body;
    await checkWebhookUrl(url, context.platform.config);
    const workspaceId = context.caller.workspace.id;
    const row = await context.platform.db.transaction().execute(async (trx) => {
      // The workspace's lock serialises concurrent creations, so the limit holds.
      await forUpdate(trx.selectFrom('workspaces').select('id').where('id', '=', workspaceId), trx).execute();
      const { count } = await trx
        .selectFrom('webhook_endpoints')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirstOrThrow();
      if (Number(count) >= MAX_ENDPOINTS_PER_WORKSPACE) {
        throw new Problem(
          'webhook_endpoint_limit_reached',
          `The workspace already has ${MAX_ENDPOINTS_PER_WORKSPACE} webhook endpoints; delete one first.`,
        );
      }
      const values = {
        id: newId('whe', context.now),
        workspace_id: workspaceId,
        url,
        description,
        event_types: JSON.stringify(event_types),
        enabled: enabled ? 1 : 0,
        metadata: JSON.stringify(metadata),
        secret: newSigningSecret(),
        previous_secret: null,
        previous_secret_expires_at: null,
        created_at: iso(context.now),
        updated_at: iso(context.now),
      };
      await trx.insertInto('webhook_endpoints').values(values).execute();
      await recordAudit(trx, byRequest(context), {
        action: 'webhook_endpoint.created',
        target: { type: 'webhook_endpoint', id: values.id, display_name: url },
        details: { url },
      });
      return values;
    });
    return {
      status: 201,
      contentType: 'application/json',
      headers: { Location: `/v1/webhooks/endpoints/${row.id}` },
      body: presentEndpointWithSecret(row, context.now),
    };
  },

  async getWebhookEndpoint(request, context) {
    const row = await endpointsOf(context.platform.db, context.caller.workspace.id)
      .where('id', '=', request.path.id)
      .executeTakeFirst();
    if (!row) throw notFound('webhook endpoint', request.path.id);
    return { status: 200, contentType: 'application/json', body: presentEndpoint(row, context.now) };
  },

  async updateWebhookEndpoint(request, context) {
    const changes = request.body;
    if (changes.url !== undefined) await checkWebhookUrl(changes.url, context.platform.config);
    const row = await context.platform.db.transaction().execute(async (trx) => {
      const existing = await lockOwned(
        trx,
        endpointsOf(trx, context.caller.workspace.id).where('id', '=', request.path.id),
        'webhook endpoint',
        request.path.id,
      );
      const updated = {
        ...existing,
        ...(changes.url !== undefined ? { url: changes.url } : {}),
        ...(changes.event_types !== undefined ? { event_types: JSON.stringify(changes.event_types) } : {}),
        ...(changes.description !== undefined ? { description: changes.description } : {}),
        ...(changes.enabled !== undefined ? { enabled: changes.enabled ? 1 : 0 } : {}),
        ...(changes.metadata !== undefined ? { metadata: JSON.stringify(changes.metadata) } : {}),
        updated_at: iso(context.now),
      };
      await trx.updateTable('webhook_endpoints').set(updated).where('id', '=', existing.id).execute();
      if (existing.enabled === 1 && updated.enabled === 0) await failPendingDeliveries(trx, existing.id);
      await recordAudit(trx, byRequest(context), {
        action: 'webhook_endpoint.updated',
        target: { type: 'webhook_endpoint', id: existing.id, display_name: updated.url },
        details: { changed: Object.keys(changes).sort().join(','), url: updated.url, enabled: updated.enabled === 1 },
      });
      return updated;
    });
    return { status: 200, contentType: 'application/json', body: presentEndpoint(row, context.now) };
  },

  async deleteWebhookEndpoint(request, context) {
    await context.platform.db.transaction().execute(async (trx) => {
      const existing = await lockOwned(
        trx,
        endpointsOf(trx, context.caller.workspace.id).where('id', '=', request.path.id),
        'webhook endpoint',
        request.path.id,
      );
      await failPendingDeliveries(trx, existing.id);
      await trx.deleteFrom('webhook_endpoints').where('id', '=', existing.id).execute();
      await recordAudit(trx, byRequest(context), {
        action: 'webhook_endpoint.deleted',
        target: { type: 'webhook_endpoint', id: existing.id, display_name: existing.url },
        details: { url: existing.url },
      });
    });
    return { status: 204 };
  },

  async rotateWebhookEndpointSecret(request, context) {
    const row = await context.platform.db.transaction().execute(async (trx) => {
      const existing = await lockOwned(
        trx,
        endpointsOf(trx, context.caller.workspace.id).where('id', '=', request.path.id),
        'webhook endpoint',
        request.path.id,
      );
      // The secret being replaced signs for 24 hours more; one still in its grace period from an earlier rotation
      // retires now: never more than two secrets sign.
      const updated = {
        ...existing,
        secret: newSigningSecret(),
        previous_secret: existing.secret,
        previous_secret_expires_at: iso(new Date(context.now.getTime() + SECRET_GRACE_MS)),
        updated_at: iso(context.now),
      };
      await trx
        .updateTable('webhook_endpoints')
        .set({
          secret: updated.secret,
          previous_secret: updated.previous_secret,
          previous_secret_expires_at: updated.previous_secret_expires_at,
          updated_at: updated.updated_at,
        })
        .where('id', '=', existing.id)
        .execute();
      await recordAudit(trx, byRequest(context), {
        action: 'webhook_endpoint.secret_rotated',
        target: { type: 'webhook_endpoint', id: existing.id, display_name: existing.url },
      });
      return updated;
    });
    return { status: 200, contentType: 'application/json', body: presentEndpointWithSecret(row, context.now) };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  | 'listWebhookEndpoints'
  | 'createWebhookEndpoint'
  | 'getWebhookEndpoint'
  | 'updateWebhookEndpoint'
  | 'deleteWebhookEndpoint'
  | 'rotateWebhookEndpointSecret'
>;

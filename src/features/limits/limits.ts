// GET/POST /v1/spend-limits, GET/PATCH/DELETE /v1/spend-limits/{id}: the workspace's spend limits, each shown with
// what its scope has spent in the current period (spend.ts) and when the period resets. A scope has at most one limit
// per period (a unique index backs the 409). The engine middleware (middleware.ts) enforces them.

import type { Kysely, Transaction } from 'kysely';
import type { Handlers } from '../../../generated/operations.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { audited, lockOwned } from '../../platform/owned.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem } from '../../platform/problems.ts';
import { forUpdate } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';
import { presentSpendLimit } from './presenters.ts';
import type { SpendLimitsTable } from './schema.ts';
import { periodOf, spentUsd } from './spend.ts';

type Db = Kysely<Database> | Transaction<Database>;

function limitsOf(db: Db, workspaceId: string) {
  return db.selectFrom('spend_limits').selectAll().where('workspace_id', '=', workspaceId);
}

async function present(db: Db, row: SpendLimitsTable, now: Date) {
  const period = periodOf(row.period, now);
  return presentSpendLimit(row, await spentUsd(db, row, period), period);
}

/** Refuses a scope that is not the workspace itself or one of its projects or API keys. */
async function checkScope(
  db: Db,
  workspaceId: string,
  scope: { type: SpendLimitsTable['scope_type']; id: string },
): Promise<void> {
  const missing = (what: string) =>
    new Problem('not_found', `No ${what} ${scope.id} in this workspace.`, {
      errors: [
        {
          pointer: '/scope/id',
          detail: `is not ${what === 'workspace' ? 'this workspace' : `a ${what} of this workspace`}`,
        },
      ],
    });
  if (scope.type === 'workspace') {
    if (scope.id !== workspaceId) throw missing('workspace');
  } else if (scope.type === 'project') {
    const found = await db
      .selectFrom('projects')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', scope.id)
      .executeTakeFirst();
    if (!found) throw missing('project');
  } else {
    const found = await db
      .selectFrom('api_keys')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', scope.id)
      .executeTakeFirst();
    if (!found) throw missing('API key');
  }
}

/** The 409 of a second limit of a scope and period. Call in the transaction, after the workspace's lock. */
async function refuseTaken(
  trx: Transaction<Database>,
  row: Pick<SpendLimitsTable, 'workspace_id' | 'scope_type' | 'scope_id' | 'period'>,
  exceptId?: string,
): Promise<void> {
  let query = limitsOf(trx, row.workspace_id)
    .where('scope_type', '=', row.scope_type)
    .where('scope_id', '=', row.scope_id)
    .where('period', '=', row.period);
  if (exceptId) query = query.where('id', '!=', exceptId);
  const taken = await query.executeTakeFirst();
  if (taken)
    throw new Problem(
      'conflict',
      `The ${row.scope_type} ${row.scope_id} already has a ${row.period === 'day' ? 'daily' : 'monthly'} limit, ${taken.id}; change that one.`,
    );
}

/** Serialises the workspace's creations and changes of limits, so that the check above holds until the commit. */
async function lockWorkspace(trx: Transaction<Database>, workspaceId: string): Promise<void> {
  await forUpdate(trx.selectFrom('workspaces').select('id').where('id', '=', workspaceId), trx).execute();
}

const periodWord = (period: SpendLimitsTable['period']) => (period === 'day' ? 'daily' : 'monthly');

export const limitHandlers = {
  async listSpendLimits(request, context) {
    const page = pageRequest(request.query);
    const db = context.platform.db;
    const rows = await paginate(limitsOf(db, context.caller.workspace.id), { id: 'id' }, page).execute();
    const spent = new Map<string, number>();
    for (const row of rows) spent.set(row.id, await spentUsd(db, row, periodOf(row.period, context.now)));
    const { body, headers } = toPage(
      rows,
      page,
      (row) => ({ id: row.id }),
      (row) => presentSpendLimit(row, spent.get(row.id)!, periodOf(row.period, context.now)),
      context.url,
    );
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async createSpendLimit(request, context) {
    const { scope, amount_usd, period, soft_threshold = 0.8 } = request.body;
    const workspaceId = context.caller.workspace.id;
    const db = context.platform.db;
    await checkScope(db, workspaceId, scope);
    const row = await audited(context, async (trx) => {
      const values: SpendLimitsTable = {
        id: newId('lim', context.now),
        workspace_id: workspaceId,
        scope_type: scope.type,
        scope_id: scope.id,
        amount_usd,
        period,
        soft_threshold,
        created_at: iso(context.now),
        updated_at: iso(context.now),
      };
      await lockWorkspace(trx, workspaceId);
      await refuseTaken(trx, values);
      await trx.insertInto('spend_limits').values(values).execute();
      return [
        values,
        {
          action: 'spend_limit.created',
          target: {
            type: 'spend_limit',
            id: values.id,
            display_name: `${periodWord(period)} limit of ${scope.type} ${scope.id}`,
          },
          details: { scope_type: scope.type, scope_id: scope.id, amount_usd, period },
        },
      ];
    });
    return {
      status: 201,
      contentType: 'application/json',
      headers: { Location: `/v1/spend-limits/${row.id}` },
      body: await present(db, row, context.now),
    };
  },

  async getSpendLimit(request, context) {
    const db = context.platform.db;
    const row = await limitsOf(db, context.caller.workspace.id).where('id', '=', request.path.id).executeTakeFirst();
    if (!row) throw notFound('spend limit', request.path.id);
    return { status: 200, contentType: 'application/json', body: await present(db, row, context.now) };
  },

  async updateSpendLimit(request, context) {
    const changes = request.body;
    const workspaceId = context.caller.workspace.id;
    const db = context.platform.db;
    const row = await audited(context, async (trx) => {
      await lockWorkspace(trx, workspaceId);
      const existing = await lockOwned(
        trx,
        limitsOf(trx, workspaceId).where('id', '=', request.path.id),
        'spend limit',
        request.path.id,
      );
      const updated: SpendLimitsTable = {
        ...existing,
        ...(changes.amount_usd !== undefined ? { amount_usd: changes.amount_usd } : {}),
        ...(changes.period !== undefined ? { period: changes.period } : {}),
        ...(changes.soft_threshold !== undefined ? { soft_threshold: changes.soft_threshold } : {}),
        updated_at: iso(context.now),
      };
      if (updated.period !== existing.period) await refuseTaken(trx, updated, existing.id);
      await trx.updateTable('spend_limits').set(updated).where('id', '=', existing.id).execute();
      return [
        updated,
        {
          action: 'spend_limit.updated',
          target: {
            type: 'spend_limit',
            id: existing.id,
            display_name: `${periodWord(updated.period)} limit of ${updated.scope_type} ${updated.scope_id}`,
          },
          details: {
            changed: Object.keys(changes).sort().join(','),
            amount_usd: updated.amount_usd,
            period: updated.period,
          },
        },
      ];
    });
    return { status: 200, contentType: 'application/json', body: await present(db, row, context.now) };
  },

  async deleteSpendLimit(request, context) {
    await audited(context, async (trx) => {
      const existing = await lockOwned(
        trx,
        limitsOf(trx, context.caller.workspace.id).where('id', '=', request.path.id),
        'spend limit',
        request.path.id,
      );
      await trx.deleteFrom('spend_limits').where('id', '=', existing.id).execute();
      return [
        undefined,
        {
          action: 'spend_limit.deleted',
          target: {
            type: 'spend_limit',
            id: existing.id,
            display_name: `${periodWord(existing.period)} limit of ${existing.scope_type} ${existing.scope_id}`,
          },
          details: { amount_usd: existing.amount_usd, period: existing.period },
        },
      ];
    });
    return { status: 204 };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  'listSpendLimits' | 'createSpendLimit' | 'getSpendLimit' | 'updateSpendLimit' | 'deleteSpendLimit'
>;

// Spend limits as engine middleware. Before any provider call, `admit` looks up the limits of the call's workspace,
// project and API key; with none it is one indexed query and nothing else. With some, in one transaction that takes
// the limits' row locks (PostgreSQL; SQLite's write transaction excludes every other writer), it refuses the call with
// `402 spend_limit_reached` when a limit's recorded spend in its period plus the reservations of the calls in flight
// reach the amount, and otherwise reserves the most the call may cost. The reservation is released when the call's
// usage is recorded (`settle`); a reservation whose process died stops counting after RESERVATION_TTL_MS. So however
// many calls start together, in one process or several, the spend can pass a limit by at most one call's worth.
// `settle` also sends `usage.limit_approaching` and `usage.limit_reached`, each once per limit and period (a notice
// row recorded with the event in one transaction), and a refusal sends `usage.limit_reached` if it was not sent yet
// (a limit lowered under what was spent).
import type { Kysely } from 'kysely';
import { iso } from '../../platform/clock.ts';
import { newId } from '../../platform/ids.ts';
import { Problem } from '../../platform/problems.ts';
import { forUpdate } from '../../storage/locks.ts';
import { preparedQuery } from '../../storage/prepared-query.ts';
import type { Database } from '../../storage/schema.ts';
import type { Admission, EngineMiddleware, ModelCall } from '../engine/index.ts';
import { recordEvent } from '../webhooks/index.ts';
import { presentSpendLimit } from './presenters.ts';
import type { SpendLimitsTable } from './schema.ts';
import { limitReached, limitsOfCall, periodOf, roundUsd, spentAndReserved, spentUsd } from './spend.ts';

/** Longer than any call takes (the provider's timeout, its retries, a long stream). */
export const RESERVATION_TTL_MS = 15 * 60_000;

const scopeNames = { workspace: 'workspace', project: 'project', api_key: 'API key' } as const;

function refusal(limit: SpendLimitsTable, spent: number, reserved: number, now: Date): Problem {
  const period = periodOf(limit.period, now);
  const who = `The ${scopeNames[limit.scope_type]} ${limit.scope_id}`;
  const inFlight = spent < limit.amount_usd ? ` with the calls in flight (at most ${roundUsd(reserved)} USD more)` : '';
  return new Problem(
    'spend_limit_reached',
    `${who} has spent ${spent} USD${inFlight} of its ${Number(limit.amount_usd)} USD ${limit.period === 'day' ? 'daily' : 'monthly'} limit ${limit.id}; it resets at ${iso(period.end)}.`,
    { extra: { spend_limit: presentSpendLimit(limit, spent, period) } },
  );
}

/** Sends the events of the limits whose thresholds the spend has crossed in the period, each once per period. */
async function sendNotices(
  db: Kysely<Database>,
  call: Pick<ModelCall, 'workspaceId' | 'apiKeyId' | 'projectId' | 'now'>,
  only?: string,
): Promise<void> {
  const limits = await limitsOfCall(db, call).execute();
  for (const limit of limits) {
    if (only && limit.id !== only) continue;
    const period = periodOf(limit.period, call.now);
    const spent = await spentUsd(db, limit, period);
    const kinds: ('approaching' | 'reached')[] = [];
    if (limit.soft_threshold !== null && spent >= limit.soft_threshold * limit.amount_usd) kinds.push('approaching');
    if (spent >= limit.amount_usd) kinds.push('reached');
    for (const kind of kinds) {
      await db.transaction().execute(async (trx) => {
        const inserted = await trx
          .insertInto('spend_limit_notices')
          .values({ spend_limit_id: limit.id, period_start: iso(period.start), kind, created_at: iso(call.now) })
          .onConflict((oc) => oc.columns(['spend_limit_id', 'period_start', 'kind']).doNothing())
          .executeTakeFirst();
        if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) return;
        const data = {
          spend_limit_id: limit.id,
          scope: { type: limit.scope_type, id: limit.scope_id },
          amount_usd: Number(limit.amount_usd),
          soft_threshold: limit.soft_threshold === null ? null : Number(limit.soft_threshold),
          period: limit.period,
          spent_usd: spent,
          period_start: iso(period.start),
          resets_at: iso(period.end),
        };
        if (kind === 'approaching')
          await recordEvent(trx, limit.workspace_id, 'usage.limit_approaching', data, call.now);
        else await recordEvent(trx, limit.workspace_id, 'usage.limit_reached', data, call.now);
      });
    }
  }
}

const limitsOfCallPrepared = preparedQuery(
  (db, call: { workspaceId: string; apiKeyId: string | null; projectId: string | null }) => limitsOfCall(db, call),
);

export function spendLimitMiddleware(db: Kysely<Database>): EngineMiddleware {
  return {
    name: 'spend-limits',
    async precheck(caller) {
      const limits = await limitsOfCallPrepared(db, caller);
      for (const limit of limits) {
        const { spent, reserved } = await spentAndReserved(db, limit, periodOf(limit.period, caller.now), caller.now);
        if (limitReached(limit.amount_usd, spent, reserved)) throw refusal(limit, spent, reserved, caller.now);
      }
    },
    async admit(call): Promise<Admission | null> {
      // The common case, a workspace without limits: one indexed read (compiled once), no transaction.
      const limits = await limitsOfCallPrepared(db, {
        workspaceId: call.workspaceId,
        apiKeyId: call.apiKeyId,
        projectId: call.projectId,
      });
      if (limits.length === 0) return null;
      const reservationId = newId('rsv', call.now);
      const refused = await db.transaction().execute(async (trx) => {
        // Calls under the same limit are admitted one at a time, in every process: each sees the others' reservations.
        const locked = await forUpdate(limitsOfCall(trx, call), trx).execute();
        for (const limit of locked) {
          const { spent, reserved } = await spentAndReserved(trx, limit, periodOf(limit.period, call.now), call.now);
          if (limitReached(limit.amount_usd, spent, reserved)) return { limit, spent, reserved };
        }
        if (locked.length === 0) return null;
        await trx
          .insertInto('spend_reservations')
          .values({
            id: reservationId,
            workspace_id: call.workspaceId,
            api_key_id: call.apiKeyId,
            project_id: call.projectId,
            amount_usd: call.maxCostUsd(),
            expires_at: iso(new Date(call.now.getTime() + RESERVATION_TTL_MS)),
          })
          .execute();
        return null;
      });
      if (refused) {
        if (refused.spent >= refused.limit.amount_usd) await sendNotices(db, call, refused.limit.id);
        throw refusal(refused.limit, refused.spent, refused.reserved, call.now);
      }
      return {
        async settle() {
          await db.deleteFrom('spend_reservations').where('id', '=', reservationId).execute();
          await sendNotices(db, call);
        },
      };
    },
  };
}

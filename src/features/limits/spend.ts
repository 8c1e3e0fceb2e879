// What a limit's scope has spent in a period: the sum of its usage records over the period's UTC days, the query
// GET /v1/usage runs (with `api_key_id` or `project_id` for those scopes), so a limit's `spent_usd` is that report's
// `cost_usd`. And what the calls admitted under a limit and not yet recorded may still cost (their reservations).
import { type Kysely, sql, type Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import { iso } from '../../platform/clock.ts';
import type { Database } from '../../storage/schema.ts';
import type { SpendLimitsTable } from './schema.ts';

type Db = Kysely<Database> | Transaction<Database>;
export type SpendLimitPeriod = components['schemas']['SpendLimitPeriod'];
export type Scope = Pick<SpendLimitsTable, 'workspace_id' | 'scope_type' | 'scope_id'>;

/** A limit's current period: from 00:00 UTC of the day (or of the month's first day) to the next one. */
export interface Period {
  start: Date;
  end: Date;
}

export function periodOf(period: SpendLimitPeriod, now: Date): Period {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  if (period === 'month') return { start: new Date(Date.UTC(y, m, 1)), end: new Date(Date.UTC(y, m + 1, 1)) };
  const d = now.getUTCDate();
  return { start: new Date(Date.UTC(y, m, d)), end: new Date(Date.UTC(y, m, d + 1)) };
}

/** Rounded as GET /v1/usage rounds its sums, to a billionth of a cent. */
export function roundUsd(value: number): number {
  return Math.round(value * 1e11) / 1e11;
}

/** The scope's recorded spend over the period's days. */
export async function spentUsd(db: Db, scope: Scope, period: Period): Promise<number> {
  let rows = db
    .selectFrom('usage_records')
    .where('workspace_id', '=', scope.workspace_id)
    .where('day', '>=', iso(period.start).slice(0, 10))
    .where('day', '<', iso(period.end).slice(0, 10));
  if (scope.scope_type === 'api_key') rows = rows.where('api_key_id', '=', scope.scope_id);
  if (scope.scope_type === 'project') rows = rows.where('project_id', '=', scope.scope_id);
  const { total } = await rows.select(sql<string | number | null>`sum(cost_usd)`.as('total')).executeTakeFirstOrThrow();
  return roundUsd(Number(total ?? 0));
}

/**
 * Whether a limit of `amount` is reached by what was spent and what the calls in flight may still cost. The sum is
 * rounded as the spend is (to a billionth of a cent) before it is compared: added as binary fractions, amounts that
 * reach the limit exactly can fall short of it by a rounding error (0.7 + 0.1 < 0.8), which would admit one call more
 * and let the spend pass the limit by a whole call's worth.
 */
export function limitReached(amount: number, spent: number, reserved: number): boolean {
  // Unrounded too: a limit smaller than the rounding's unit is reached by less than half of it.
  const sum = spent + reserved;
  return sum >= amount || roundUsd(sum) >= amount;
}

/** What the scope's calls in flight may still cost: their reservations that have not expired. */
export async function reservedUsd(db: Db, scope: Scope, now: Date): Promise<number> {
  let rows = db
    .selectFrom('spend_reservations')
    .where('workspace_id', '=', scope.workspace_id)
    .where('expires_at', '>', iso(now));
  if (scope.scope_type === 'api_key') rows = rows.where('api_key_id', '=', scope.scope_id);
  if (scope.scope_type === 'project') rows = rows.where('project_id', '=', scope.scope_id);
  const { total } = await rows
    .select(sql<string | number | null>`sum(amount_usd)`.as('total'))
    .executeTakeFirstOrThrow();
  return Number(total ?? 0);
}

/**
 * A limit's spend in its period and its calls' reservations, as admission compares them. A call that ends records its
 * usage, then deletes its reservation, each committed apart; on PostgreSQL each of these two reads sees what was
 * committed when it began, so reading the spend first could miss such a call in both (its usage not yet committed,
 * its reservation already deleted) and admit one call too many. Read in this order, a call ending meanwhile counts
 * in one of them, or in both.
 */
export async function spentAndReserved(
  db: Db,
  scope: Scope,
  period: Period,
  now: Date,
): Promise<{ spent: number; reserved: number }> {
  const reserved = await reservedUsd(db, scope, now);
  return { spent: await spentUsd(db, scope, period), reserved };
}

/** The limits that apply to a call of this key and project in the workspace. */
export function limitsOfCall(db: Db, call: { workspaceId: string; apiKeyId: string | null; projectId: string | null }) {
  return db
    .selectFrom('spend_limits')
    .selectAll()
    .where('workspace_id', '=', call.workspaceId)
    .where((eb) =>
      eb.or([
        eb('scope_type', '=', 'workspace'),
        ...(call.apiKeyId ? [eb.and([eb('scope_type', '=', 'api_key'), eb('scope_id', '=', call.apiKeyId)])] : []),
        ...(call.projectId ? [eb.and([eb('scope_type', '=', 'project'), eb('scope_id', '=', call.projectId)])] : []),
      ]),
    )
    .orderBy('id');
}

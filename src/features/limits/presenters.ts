import type { components } from '../../../generated/openapi.ts';
import { iso } from '../../platform/clock.ts';
import type { SpendLimitsTable } from './schema.ts';
import type { Period } from './spend.ts';

export type SpendLimit = components['schemas']['SpendLimit'];

export function presentSpendLimit(row: SpendLimitsTable, spentUsd: number, period: Period): SpendLimit {
  return {
    id: row.id,
    object: 'spend_limit',
    scope: { type: row.scope_type, id: row.scope_id },
    amount_usd: Number(row.amount_usd),
    period: row.period,
    soft_threshold: row.soft_threshold === null ? null : Number(row.soft_threshold),
    spent_usd: spentUsd,
    period_start: iso(period.start),
    resets_at: iso(period.end),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

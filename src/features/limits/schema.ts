// The limits feature's tables, declared beside the feature and merged into the platform's Database interface.
declare module '../../storage/schema.ts' {
  interface Database {
    spend_limits: SpendLimitsTable;
    spend_reservations: SpendReservationsTable;
    spend_limit_notices: SpendLimitNoticesTable;
  }
}

/** A hard limit on what a workspace, a project or an API key spends on model calls per UTC day or month. */
export interface SpendLimitsTable {
  id: string;
  workspace_id: string;
  scope_type: 'workspace' | 'project' | 'api_key';
  scope_id: string;
  amount_usd: number;
  period: 'day' | 'month';
  /** Share of amount_usd at which usage.limit_approaching is sent; null for none. */
  soft_threshold: number | null;
  created_at: string;
  updated_at: string;
}

/**
 * A model call admitted under a limit and not yet recorded: the most it may cost. Counted with the recorded spend, so
 * that calls in flight in any process cannot together overspend by more than one call (middleware.ts).
 */
export interface SpendReservationsTable {
  id: string;
  workspace_id: string;
  api_key_id: string | null;
  project_id: string | null;
  amount_usd: number;
  /** A reservation its process never released (it died mid-call) stops counting then. */
  expires_at: string;
}

/** That an event of a limit was sent for a period: each is sent once per limit and period. */
export interface SpendLimitNoticesTable {
  spend_limit_id: string;
  period_start: string;
  kind: 'approaching' | 'reached';
  created_at: string;
}

// The engine's table, declared beside the feature and merged into the platform's Database interface.
declare module '../../storage/schema.ts' {
  interface Database {
    usage_records: UsageRecordsTable;
  }
}

/** One model call: who made it, for which feature, its tokens and what it cost. GET /v1/usage sums them. */
export interface UsageRecordsTable {
  id: string;
  workspace_id: string;
  /** Null for calls no API key made (none yet; background work of later features may). */
  api_key_id: string | null;
  /** The project the call was for (a document's, a chatbot's, a workflow's); null for none. Added by the limits
   *  feature's migration 021, which counts a project's spend from it. */
  project_id: string | null;
  model: string;
  feature: string;
  /** The UTC day of `created_at` (YYYY-MM-DD), the unit of the report's `day` buckets. */
  day: string;
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  created_at: string;
}

// The policy feature's table, merged into the platform's Database interface (see src/features/projects/schema.ts).
declare module '../../storage/schema.ts' {
  interface Database {
    compliance_rules: ComplianceRulesTable;
  }
}

export interface ComplianceRulesTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  kind: 'banned_phrase' | 'regex' | 'personal_data';
  /** JSON array of strings. */
  phrases: string;
  pattern: string | null;
  /** 0 or 1 (SQLite has no boolean). */
  case_sensitive: number;
  /** JSON array of email, phone, payment_card. */
  personal_data_types: string;
  action: 'block' | 'redact';
  replacement: string | null;
  project_id: string | null;
  /** 0 or 1. */
  enabled: number;
  /** JSON object. */
  metadata: string;
  created_at: string;
  updated_at: string;
}

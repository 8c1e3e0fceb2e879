// The projects feature's table, declared beside the feature: merged into the platform's Database interface, so the
// feature's queries are typed without a line in src/storage/schema.ts.
declare module '../../storage/schema.ts' {
  interface Database {
    projects: ProjectsTable;
  }
}

export interface ProjectsTable {
  id: string;
  workspace_id: string;
  name: string;
  /** The name as compared for uniqueness in the workspace (projectNameKey); unique per workspace. */
  name_key: string;
  description: string | null;
  default_voice_id: string | null;
  default_model: string | null;
  /** JSON array of catalogue ids: the fallback models of the chat calls that name the project and no `models`. */
  fallback_models: string;
  /** JSON object. */
  metadata: string;
  created_at: string;
  updated_at: string;
}

// The workflows feature's tables, merged into the platform's Database interface (see src/features/projects/schema.ts).
// The durable engine (openworkflow) keeps its own tables beside these (runtime.ts); these are what the API answers.
declare module '../../storage/schema.ts' {
  interface Database {
    workflows: WorkflowsTable;
    workflow_versions: WorkflowVersionsTable;
    workflow_runs: WorkflowRunsTable;
    workflow_run_steps: WorkflowRunStepsTable;
  }
}

export interface WorkflowsTable {
  id: string;
  workspace_id: string;
  project_id: string | null;
  name: string;
  description: string | null;
  version: number;
  /** JSON: the definition as it was sent (the contract's WorkflowDefinition). */
  definition: string;
  created_at: string;
  updated_at: string;
  last_run_at: string | null;
}

/** Every version of a definition, normalized (as it runs): a run executes the version it started with. */
export interface WorkflowVersionsTable {
  workflow_id: string;
  version: number;
  /** JSON: the normalized definition. */
  definition: string;
  created_at: string;
}

export interface WorkflowRunsTable {
  id: string;
  workspace_id: string;
  workflow_id: string;
  workflow_version: number;
  /** The contract's WorkflowRunStatus. */
  status: string;
  /** JSON objects. */
  inputs: string;
  outputs: string | null;
  /** JSON: WorkflowRunError, or null. */
  error: string | null;
  metadata: string;
  cost_usd: number;
  /** The key that started the run: its model calls are counted against it. */
  api_key_id: string;
  user_id: string | null;
  /** The durable engine's id of the run, once it was handed over. */
  engine_run_id: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export interface WorkflowRunStepsTable {
  run_id: string;
  step_id: string;
  position: number;
  type: string;
  /** The contract's WorkflowRunStepStatus. */
  status: string;
  attempts: number;
  cost_usd: number;
  started_at: string | null;
  finished_at: string | null;
  /** JSON value, or null. */
  output: string | null;
  /** JSON: WorkflowRunStepError, or null. */
  error: string | null;
  /** JSON: WorkflowRunStepApproval, or null. */
  approval: string | null;
}

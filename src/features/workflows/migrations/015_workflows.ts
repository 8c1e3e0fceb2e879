// Workflows, every version of their definitions, their runs and the runs' steps. Deleting a workflow deletes its runs.
import type { Kysely, Migration } from 'kysely';

export const workflows: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('workflows')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('project_id', 'text', (c) => c.references('projects.id').onDelete('set null'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('version', 'integer', (c) => c.notNull())
      .addColumn('definition', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('last_run_at', 'text')
      .execute();
    await db.schema.createIndex('workflows_workspace').on('workflows').columns(['workspace_id', 'id']).execute();
    await db.schema
      .createTable('workflow_versions')
      .addColumn('workflow_id', 'text', (c) => c.notNull().references('workflows.id').onDelete('cascade'))
      .addColumn('version', 'integer', (c) => c.notNull())
      .addColumn('definition', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('workflow_versions_pk', ['workflow_id', 'version'])
      .execute();
    await db.schema
      .createTable('workflow_runs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('workflow_id', 'text', (c) => c.notNull().references('workflows.id').onDelete('cascade'))
      .addColumn('workflow_version', 'integer', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('inputs', 'text', (c) => c.notNull())
      .addColumn('outputs', 'text')
      .addColumn('error', 'text')
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('cost_usd', 'double precision', (c) => c.notNull())
      .addColumn('api_key_id', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text')
      /** The durable engine's id of the run, once it was handed over (runtime.ts). */
      .addColumn('engine_run_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('started_at', 'text')
      .addColumn('finished_at', 'text')
      .execute();
    await db.schema.createIndex('workflow_runs_workflow').on('workflow_runs').columns(['workflow_id', 'id']).execute();
    await db.schema.createIndex('workflow_runs_status').on('workflow_runs').columns(['status', 'created_at']).execute();
    await db.schema
      .createTable('workflow_run_steps')
      .addColumn('run_id', 'text', (c) => c.notNull().references('workflow_runs.id').onDelete('cascade'))
      .addColumn('step_id', 'text', (c) => c.notNull())
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('cost_usd', 'double precision', (c) => c.notNull())
      .addColumn('started_at', 'text')
      .addColumn('finished_at', 'text')
      .addColumn('output', 'text')
      .addColumn('error', 'text')
      .addColumn('approval', 'text')
      .addPrimaryKeyConstraint('workflow_run_steps_pk', ['run_id', 'step_id'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('workflow_run_steps').execute();
    await db.schema.dropTable('workflow_runs').execute();
    await db.schema.dropTable('workflow_versions').execute();
    await db.schema.dropTable('workflows').execute();
  },
};

// Compliance rules: what no generated output of a workspace (or of one of its projects) may contain.
import type { Kysely, Migration } from 'kysely';

export const complianceRules: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('compliance_rules')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('phrases', 'text', (c) => c.notNull())
      .addColumn('pattern', 'text')
      .addColumn('case_sensitive', 'integer', (c) => c.notNull())
      .addColumn('personal_data_types', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('replacement', 'text')
      // A rule of a project that is deleted would apply to nothing: it goes with the project.
      .addColumn('project_id', 'text', (c) => c.references('projects.id').onDelete('cascade'))
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('compliance_rules_workspace')
      .on('compliance_rules')
      .columns(['workspace_id', 'id'])
      .execute();
  },
};

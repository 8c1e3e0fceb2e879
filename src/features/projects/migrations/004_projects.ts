// Projects: named groups of a workspace's documents, workflows and chatbots, with defaults for what is created in
// them. `name_key` is the name as compared for uniqueness (case-folded); the unique index holds the rule even if a
// writer forgot the check. Tables that belong to a project add `project_id references projects(id) on delete set
// null`, so deleting a project detaches them in the same statement.
import type { Kysely, Migration } from 'kysely';

export const projects: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('projects')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('name_key', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('default_voice_id', 'text')
      .addColumn('default_model', 'text')
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('projects_workspace').on('projects').columns(['workspace_id', 'id']).execute();
    await db.schema
      .createIndex('projects_workspace_name')
      .on('projects')
      .columns(['workspace_id', 'name_key'])
      .unique()
      .execute();
  },
};

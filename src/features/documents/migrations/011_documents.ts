// Documents: the document, every version of its content, and the real-time state (the Yjs document) with the
// Markdown it rendered to, so that versions are made only when the text really changed.
import type { Kysely, Migration } from 'kysely';

export const documents: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('documents')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      // A deleted project leaves its documents, out of any project (the contract's deleteProject).
      .addColumn('project_id', 'text', (c) => c.references('projects.id').onDelete('set null'))
      .addColumn('title', 'text', (c) => c.notNull())
      .addColumn('voice_id', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('visibility', 'text', (c) => c.notNull())
      .addColumn('author', 'text')
      .addColumn('published_at', 'text')
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('content', 'text', (c) => c.notNull())
      .addColumn('current_version_id', 'text', (c) => c.notNull())
      .addColumn('version_count', 'integer', (c) => c.notNull())
      .addColumn('yjs_state', 'text')
      .addColumn('yjs_markdown', 'text')
      .addColumn('yjs_version_markdown', 'text')
      .addColumn('live_api_key_id', 'text')
      .addColumn('live_user_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('documents_workspace').on('documents').columns(['workspace_id', 'id']).execute();
    await db.schema
      .createTable('document_versions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('document_id', 'text', (c) => c.notNull().references('documents.id').onDelete('cascade'))
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('number', 'integer', (c) => c.notNull())
      .addColumn('source_kind', 'text', (c) => c.notNull())
      .addColumn('api_key_id', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text')
      .addColumn('command', 'text')
      .addColumn('restored_from_version_id', 'text')
      .addColumn('restored_from_version_number', 'integer')
      .addColumn('content', 'text', (c) => c.notNull())
      .addColumn('word_count', 'integer', (c) => c.notNull())
      .addColumn('character_count', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addUniqueConstraint('document_versions_number', ['document_id', 'number'])
      .execute();
    // The key that signs edit tokens: in the database, so that every server process on it accepts every token.
    await db.schema
      .createTable('document_token_keys')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('secret', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
  },
};

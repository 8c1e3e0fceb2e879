// Saved chat threads and their messages. Deleting a thread deletes its messages for good (the delete handler removes
// them in its transaction; the foreign key's cascade covers a workspace's deletion).
import type { Kysely, Migration } from 'kysely';

export const chatThreads: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('chat_threads')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('title', 'text', (c) => c.notNull())
      .addColumn('model', 'text', (c) => c.notNull())
      .addColumn('voice_id', 'text')
      .addColumn('message_count', 'integer', (c) => c.notNull())
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('chat_threads_workspace').on('chat_threads').columns(['workspace_id', 'id']).execute();
    await db.schema
      .createTable('chat_messages')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('thread_id', 'text', (c) => c.notNull().references('chat_threads.id').onDelete('cascade'))
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('content', 'text')
      .addColumn('refusal', 'text')
      .addColumn('name', 'text')
      .addColumn('model', 'text')
      .addColumn('usage', 'text')
      .addColumn('cost_usd', 'double precision')
      .addColumn('finish_reason', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('chat_messages_thread')
      .on('chat_messages')
      .columns(['thread_id', 'position'])
      .unique()
      .execute();
  },
};

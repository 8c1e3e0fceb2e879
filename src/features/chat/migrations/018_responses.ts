// Stored responses of the Responses API. A response's input and output items are messages of a chat thread (one
// store, one retention, one deletion); this table keeps the rest of the response object and where its messages are
// in the thread. Deleting the thread deletes its responses (the delete handler, and the foreign key's cascade).
import type { Kysely, Migration } from 'kysely';

export const responses: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('chat_responses')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('thread_id', 'text', (c) => c.notNull().references('chat_threads.id').onDelete('cascade'))
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('previous_response_id', 'text')
      .addColumn('model', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('input_position', 'integer', (c) => c.notNull())
      .addColumn('output_position', 'integer', (c) => c.notNull())
      .addColumn('last_position', 'integer', (c) => c.notNull())
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('chat_responses_thread').on('chat_responses').columns(['thread_id']).execute();
  },
};

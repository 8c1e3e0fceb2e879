// People's sessions (a cookie's secret, hashed) and the one-time sign-in links that start them (hashed), and the
// column that marks the API key carrying a session (hidden from the workspace's key list).
import type { Kysely, Migration } from 'kysely';

export const sessions: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('sessions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('api_key_id', 'text', (c) => c.notNull())
      .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
      .addColumn('csrf_token', 'text', (c) => c.notNull())
      .addColumn('method', 'text', (c) => c.notNull())
      .addColumn('ip', 'text')
      .addColumn('user_agent', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('last_seen_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('ended_at', 'text')
      .execute();
    await db.schema.createIndex('sessions_user').on('sessions').columns(['workspace_id', 'user_id', 'id']).execute();

    await db.schema
      .createTable('sign_in_links')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('return_to', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('used_at', 'text')
      .execute();

    await db.schema.alterTable('api_keys').addColumn('session_id', 'text').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.alterTable('api_keys').dropColumn('session_id').execute();
    await db.schema.dropTable('sign_in_links').execute();
    await db.schema.dropTable('sessions').execute();
  },
};

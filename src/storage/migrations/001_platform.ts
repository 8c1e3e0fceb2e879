// The platform's tables: workspaces, access, logs, idempotency keys and the event table.
import type { Kysely, Migration } from 'kysely';

export const platform: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('workspaces')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('region', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('event_sequence', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();

    await db.schema
      .createTable('api_keys')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
      .addColumn('last4', 'text', (c) => c.notNull())
      .addColumn('previous_secret_hash', 'text')
      .addColumn('previous_secret_expires_at', 'text')
      .addColumn('created_by_api_key_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('last_used_at', 'text')
      .addColumn('expires_at', 'text')
      .addColumn('rotated_at', 'text')
      .addColumn('revoked_at', 'text')
      .execute();
    await db.schema
      .createIndex('api_keys_previous_secret_hash')
      .on('api_keys')
      .column('previous_secret_hash')
      .execute();
    await db.schema.createIndex('api_keys_workspace_id').on('api_keys').columns(['workspace_id', 'id']).execute();

    await db.schema
      .createTable('users')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('email', 'text', (c) => c.notNull().unique())
      .addColumn('name', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('members')
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('added_at', 'text', (c) => c.notNull())
      .addColumn('added_by_api_key_id', 'text')
      .addPrimaryKeyConstraint('members_pk', ['workspace_id', 'user_id'])
      .execute();
    await db.schema
      .createIndex('members_workspace_added')
      .on('members')
      .columns(['workspace_id', 'added_at'])
      .execute();

    await db.schema
      .createTable('audit_log_entries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('actor_type', 'text', (c) => c.notNull())
      .addColumn('actor_api_key_id', 'text')
      .addColumn('actor_api_key_name', 'text')
      .addColumn('actor_role', 'text')
      .addColumn('target_type', 'text', (c) => c.notNull())
      .addColumn('target_id', 'text', (c) => c.notNull())
      .addColumn('target_display_name', 'text')
      .addColumn('details', 'text', (c) => c.notNull())
      .addColumn('ip', 'text')
      .addColumn('user_agent', 'text')
      .addColumn('request_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('audit_log_entries_workspace')
      .on('audit_log_entries')
      .columns(['workspace_id', 'id'])
      .execute();

    await db.schema
      .createTable('request_log_entries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('api_key_id', 'text', (c) => c.notNull())
      .addColumn('method', 'text', (c) => c.notNull())
      .addColumn('path', 'text', (c) => c.notNull())
      .addColumn('operation_id', 'text')
      .addColumn('status', 'integer', (c) => c.notNull())
      .addColumn('error_code', 'text')
      .addColumn('duration_ms', 'integer', (c) => c.notNull())
      .addColumn('ip', 'text', (c) => c.notNull())
      .addColumn('user_agent', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('request_log_entries_workspace')
      .on('request_log_entries')
      .columns(['workspace_id', 'id'])
      .execute();
    await db.schema.createIndex('request_log_entries_created').on('request_log_entries').column('created_at').execute();

    await db.schema
      .createTable('idempotency_keys')
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('response_status', 'integer')
      .addColumn('response_headers', 'text')
      .addColumn('response_body', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('idempotency_keys_pk', ['workspace_id', 'key'])
      .execute();
    await db.schema.createIndex('idempotency_keys_expires').on('idempotency_keys').column('expires_at').execute();

    await db.schema
      .createTable('events')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('sequence', 'integer', (c) => c.notNull())
      .addColumn('data', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addUniqueConstraint('events_workspace_sequence', ['workspace_id', 'sequence'])
      .execute();
  },
};

// Directory tokens, and the SCIM Users and Groups that directories keep in a workspace.
import type { Kysely, Migration } from 'kysely';

export const directories: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('directory_tokens')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('directory', 'text', (c) => c.notNull())
      .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
      .addColumn('last4', 'text', (c) => c.notNull())
      .addColumn('previous_secret_hash', 'text')
      .addColumn('previous_secret_expires_at', 'text')
      .addColumn('created_by_api_key_id', 'text', (c) => c.notNull())
      .addColumn('created_by_user_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('last_used_at', 'text')
      .addColumn('rotated_at', 'text')
      .addColumn('revoked_at', 'text')
      .execute();
    await db.schema
      .createIndex('directory_tokens_workspace')
      .on('directory_tokens')
      .columns(['workspace_id', 'id'])
      .execute();
    await db.schema
      .createIndex('directory_tokens_previous_secret')
      .on('directory_tokens')
      .column('previous_secret_hash')
      .execute();

    await db.schema
      .createTable('scim_users')
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('directory', 'text', (c) => c.notNull())
      .addColumn('id', 'text', (c) => c.notNull())
      .addColumn('user_name', 'text', (c) => c.notNull())
      .addColumn('user_name_key', 'text', (c) => c.notNull())
      .addColumn('external_id', 'text')
      .addColumn('active', 'integer', (c) => c.notNull())
      .addColumn('attributes', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      // A person is one directory's user in a workspace: two directories never manage one member.
      .addPrimaryKeyConstraint('scim_users_pk', ['workspace_id', 'id'])
      .execute();
    await db.schema
      .createIndex('scim_users_user_name')
      .on('scim_users')
      .columns(['workspace_id', 'directory', 'user_name_key'])
      .unique()
      .execute();

    await db.schema
      .createTable('scim_groups')
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('directory', 'text', (c) => c.notNull())
      .addColumn('id', 'text', (c) => c.notNull())
      .addColumn('display_name', 'text', (c) => c.notNull())
      .addColumn('external_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('scim_groups_pk', ['workspace_id', 'id'])
      .execute();
    await db.schema
      .createIndex('scim_groups_directory')
      .on('scim_groups')
      .columns(['workspace_id', 'directory', 'id'])
      .execute();

    await db.schema
      .createTable('scim_group_members')
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('group_id', 'text', (c) => c.notNull())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('scim_group_members_pk', ['workspace_id', 'group_id', 'user_id'])
      .execute();
    await db.schema
      .createIndex('scim_group_members_user')
      .on('scim_group_members')
      .columns(['workspace_id', 'user_id'])
      .execute();
  },
};

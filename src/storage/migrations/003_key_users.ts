// API keys act on behalf of a member (`user_id`) or belong to no person (null: a service key).
import { type Kysely, type Migration, sql } from 'kysely';

export const keyUsers: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('api_keys').addColumn('user_id', 'text').execute();
    // Removing a member revokes their keys: that looks the keys up by workspace and user.
    await db.schema
      .createIndex('api_keys_workspace_user')
      .on('api_keys')
      .columns(['workspace_id', 'user_id'])
      .execute();
    // A workspace's first key, created with its first owner member (CLI `workspace create --owner-email`, the demo),
    // was that owner's key: same workspace, no creating key, no adding key, the same instant.
    await sql`
      update api_keys set user_id = (
        select members.user_id from members
        where members.workspace_id = api_keys.workspace_id
          and members.role = 'owner'
          and members.added_by_api_key_id is null
          and members.added_at = api_keys.created_at
        limit 1
      )
      where api_keys.created_by_api_key_id is null and api_keys.role = 'owner'
    `.execute(db);
  },
};

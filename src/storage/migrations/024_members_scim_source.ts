// A member that a directory provisioned through SCIM names the directory (the `directory` of its tokens); null for a
// member added through the API. The API refuses to remove such a member: the directory does.
import type { Kysely, Migration } from 'kysely';

export const membersScimSource: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('members').addColumn('scim_source', 'text').execute();
  },
};

// The request log's equality filters read an index each instead of the workspace's whole log: without them, a
// `status`, `method` or `api_key_id` filter walked back through the workspace's rows in id order until a page of matches was
// found, a scan of the whole log (up to its retention) for a rare value or an absent one. Each index leads with the
// workspace and ends with the id, so the matches come out newest first, in the page's order, and a page reads its 21
// rows. The other filters stay on that walk (logs.ts says why): `path_prefix` and a status class (`4xx`) match many
// rows or few, and an index read of a range would have to sort all the matches to give the newest.
import type { Kysely, Migration } from 'kysely';

export const requestLogIndexes: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createIndex('request_log_entries_status')
      .on('request_log_entries')
      .columns(['workspace_id', 'status', 'id'])
      .execute();
    await db.schema
      .createIndex('request_log_entries_key')
      .on('request_log_entries')
      .columns(['workspace_id', 'api_key_id', 'id'])
      .execute();
    await db.schema
      .createIndex('request_log_entries_method')
      .on('request_log_entries')
      .columns(['workspace_id', 'method', 'id'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('request_log_entries_method').execute();
    await db.schema.dropIndex('request_log_entries_key').execute();
    await db.schema.dropIndex('request_log_entries_status').execute();
  },
};

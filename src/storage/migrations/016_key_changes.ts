// Other servers on the same PostgreSQL database learn at once that a key or a workspace changed, so that their key
// caches (src/platform/key-cache.ts) drop what they remember: a trigger notifies `api_keys_changed` when a statement
// that writes what a caller is made of commits (every column but these two): not `last_used_at` (touched once a minute by every busy key) nor
// `event_sequence` (every event). SQLite needs nothing here: its servers see other connections' commits by
// `PRAGMA data_version`.
import { sql, type Kysely, type Migration } from 'kysely';
import { isPostgres } from '../locks.ts';

export const keyChanges: Migration = {
  async up(db: Kysely<any>) {
    if (!isPostgres(db as never)) return;
    await sql`
      create function notify_api_keys_changed() returns trigger language plpgsql as $$
      begin
        perform pg_notify('api_keys_changed', '');
        return null;
      end $$`.execute(db);
    await sql`
      create trigger api_keys_changed after update of id, workspace_id, user_id, name, role, secret_hash, last4,
        previous_secret_hash, previous_secret_expires_at, created_by_api_key_id, created_at, updated_at, expires_at,
        rotated_at, revoked_at or delete on api_keys
      for each statement execute function notify_api_keys_changed()`.execute(db);
    await sql`
      create trigger workspaces_changed after update of id, name, region, created_at, updated_at or delete on workspaces
      for each statement execute function notify_api_keys_changed()`.execute(db);
  },
  async down(db: Kysely<any>) {
    if (!isPostgres(db as never)) return;
    await sql`drop trigger if exists workspaces_changed on workspaces`.execute(db);
    await sql`drop trigger if exists api_keys_changed on api_keys`.execute(db);
    await sql`drop function if exists notify_api_keys_changed()`.execute(db);
  },
};

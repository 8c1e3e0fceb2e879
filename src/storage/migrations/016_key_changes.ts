// Other servers on the same PostgreSQL database learn at once that a key or a workspace changed, so that their key
// caches (src/platform/key-cache.ts) drop what they remember: a trigger notifies `api_keys_changed` when a write to
// what a caller is made of commits. Every column counts, also ones added later, but `last_used_at` (touched once a
// minute by every busy key) and `event_sequence` (every event). PostgreSQL sends one notification per transaction
// however many rows changed. SQLite needs nothing here: its servers see other connections' commits by
// `PRAGMA data_version`.
import { type Kysely, type Migration, sql } from 'kysely';
import { isPostgres } from '../locks.ts';

export const keyChanges: Migration = {
  async up(db: Kysely<unknown>) {
    if (!isPostgres(db as never)) return;
    await sql`
      create function notify_api_keys_changed() returns trigger language plpgsql as $$
      begin
        perform pg_notify('api_keys_changed', '');
        return null;
      end $$`.execute(db);
    await sql`
      create trigger api_keys_changed after update on api_keys for each row
      when ((to_jsonb(old) - 'last_used_at') is distinct from (to_jsonb(new) - 'last_used_at'))
      execute function notify_api_keys_changed()`.execute(db);
    await sql`create trigger api_keys_deleted after delete on api_keys for each statement execute function notify_api_keys_changed()`.execute(
      db,
    );
    await sql`
      create trigger workspaces_changed after update on workspaces for each row
      when ((to_jsonb(old) - 'event_sequence') is distinct from (to_jsonb(new) - 'event_sequence'))
      execute function notify_api_keys_changed()`.execute(db);
    await sql`create trigger workspaces_deleted after delete on workspaces for each statement execute function notify_api_keys_changed()`.execute(
      db,
    );
  },
  async down(db: Kysely<unknown>) {
    if (!isPostgres(db as never)) return;
    for (const [trigger, table] of [
      ['api_keys_changed', 'api_keys'],
      ['api_keys_deleted', 'api_keys'],
      ['workspaces_changed', 'workspaces'],
      ['workspaces_deleted', 'workspaces'],
    ]) {
      await sql`drop trigger if exists ${sql.id(trigger!)} on ${sql.table(table!)}`.execute(db);
    }
    await sql`drop function if exists notify_api_keys_changed()`.execute(db);
  },
};

// Where each region's servers say they are served (PUBLIC_BASE_URL, else http://localhost:<PORT>), written by every
// server at start, so that the command-line tool, run in a shell without the server's variables, names the address
// clients reach rather than its own defaults (src/platform/served-addresses.ts).
import type { Kysely, Migration } from 'kysely';

export const servedAddresses: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('served_addresses')
      .addColumn('region', 'text', (column) => column.primaryKey())
      .addColumn('base_url', 'text', (column) => column.notNull())
      .addColumn('updated_at', 'text', (column) => column.notNull())
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('served_addresses').execute();
  },
};

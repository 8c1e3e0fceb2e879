// Knowledge chunks keep their vector (float32, little-endian) when the knowledge base's embedding model has a
// configured provider; null otherwise (vectors.ts).
import type { Kysely, Migration } from 'kysely';
import { isPostgres } from '../../../storage/locks.ts';

export const knowledgeVectors: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('knowledge_chunks')
      .addColumn('embedding', isPostgres(db as never) ? 'bytea' : 'blob')
      .execute();
  },
};

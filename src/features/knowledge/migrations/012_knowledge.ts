// Knowledge bases: their sources (a text, a file or a crawl of web pages), processed in the background into chunks
// that full-text search ranks: SQLite's FTS5 (an external-content index kept by triggers) or PostgreSQL's text search
// (a generated tsvector with a GIN index).
import { type Kysely, type Migration, sql } from 'kysely';
import { isPostgres } from '../../../storage/locks.ts';

export const knowledge: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('knowledge_bases')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('embedding_model', 'text', (c) => c.notNull())
      .addColumn('max_chunk_tokens', 'integer', (c) => c.notNull())
      .addColumn('overlap_tokens', 'integer', (c) => c.notNull())
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('knowledge_bases_workspace')
      .on('knowledge_bases')
      .columns(['workspace_id', 'id'])
      .execute();
    await db.schema
      .createTable('knowledge_sources')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('knowledge_base_id', 'text', (c) => c.notNull().references('knowledge_bases.id').onDelete('cascade'))
      .addColumn('workspace_id', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('title', 'text')
      .addColumn('given_title', 'text')
      .addColumn('url', 'text')
      .addColumn('crawl_depth', 'integer')
      .addColumn('max_pages', 'integer')
      .addColumn('page_count', 'integer', (c) => c.notNull())
      .addColumn('file_name', 'text')
      .addColumn('media_type', 'text')
      /** What the job processes: the text, or the file's bytes in base64; cleared once processed. */
      .addColumn('payload', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('error_code', 'text')
      .addColumn('error_message', 'text')
      .addColumn('chunk_count', 'integer', (c) => c.notNull())
      .addColumn('character_count', 'integer', (c) => c.notNull())
      .addColumn('size_bytes', 'integer', (c) => c.notNull())
      .addColumn('processing_id', 'text', (c) => c.notNull())
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('processed_at', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('knowledge_sources_base')
      .on('knowledge_sources')
      .columns(['knowledge_base_id', 'id'])
      .execute();
    const postgres = isPostgres(db as never);
    await db.schema
      .createTable('knowledge_chunks')
      .addColumn('id', postgres ? 'bigserial' : 'integer', (c) => c.primaryKey())
      .addColumn('knowledge_base_id', 'text', (c) => c.notNull().references('knowledge_bases.id').onDelete('cascade'))
      .addColumn('source_id', 'text', (c) => c.notNull().references('knowledge_sources.id').onDelete('cascade'))
      .addColumn('chunk_index', 'integer', (c) => c.notNull())
      .addColumn('title', 'text')
      .addColumn('url', 'text')
      .addColumn('text', 'text', (c) => c.notNull())
      .addColumn('tokens', 'integer', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('knowledge_chunks_source')
      .on('knowledge_chunks')
      .columns(['source_id', 'chunk_index'])
      .execute();
    if (postgres) {
      // The title weighs more than the text (A, then B); 'simple' would miss plurals, 'english' stems them.
      await sql`alter table knowledge_chunks add column search tsvector generated always as (setweight(to_tsvector('english', coalesce(title, '')), 'A') || setweight(to_tsvector('english', text), 'B')) stored`.execute(
        db,
      );
      await sql`create index knowledge_chunks_search on knowledge_chunks using gin (search)`.execute(db);
      await db.schema.createIndex('knowledge_chunks_base').on('knowledge_chunks').column('knowledge_base_id').execute();
    } else {
      await sql`create virtual table knowledge_chunks_fts using fts5(title, text, content='knowledge_chunks', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')`.execute(
        db,
      );
      await sql`create trigger knowledge_chunks_insert after insert on knowledge_chunks begin insert into knowledge_chunks_fts(rowid, title, text) values (new.id, new.title, new.text); end`.execute(
        db,
      );
      await sql`create trigger knowledge_chunks_delete after delete on knowledge_chunks begin insert into knowledge_chunks_fts(knowledge_chunks_fts, rowid, title, text) values ('delete', old.id, old.title, old.text); end`.execute(
        db,
      );
      await db.schema.createIndex('knowledge_chunks_base').on('knowledge_chunks').column('knowledge_base_id').execute();
    }
  },
};

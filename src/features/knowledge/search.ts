// Full-text search over a knowledge base's chunks: SQLite's FTS5 ranked by BM25 (the title weighing twice the text),
// PostgreSQL's text search ranked by ts_rank_cd (title A, text B). A query is its words, any of which may match
// (a question's words rarely all occur in one passage), so a chunk with more and rarer words ranks higher.
// Scores are mapped into 0–1 with x / (1 + x), x the engine's rank: comparable within one search, not across
// databases.
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../storage/schema.ts';
import { isPostgres } from '../../storage/locks.ts';
import type { SourceType } from './schema.ts';

export interface SearchHit {
  source_id: string;
  source_type: SourceType;
  title: string | null;
  url: string | null;
  chunk_index: number;
  text: string;
  score: number;
}

/** English words too common to tell passages apart ("how", "the", "is"): matching them made a question match nearly
 *  every chunk, and SQLite rank all of them (its FTS5 keeps no stop-word list; PostgreSQL's `english` does). */
const STOP_WORDS = new Set(
  'a about above after again against all am an and any are as at be because been before being below between both but by can could did do does doing down during each few for from further had has have having he her here hers him his how i if in into is it its itself just me more most my no nor not now of off on once only or other our ours out over own same she should so some such than that the their them then there these they this those through to too under until up very was we were what when where which while who whom why will with would you your yours'.split(' '),
);

/** The words of a query, lower case, at most 64, without stop words unless it has nothing else: nothing of FTS5's or
 *  tsquery's syntax gets through. */
export function queryWords(query: string): string[] {
  const words = [...new Set(query.normalize('NFKC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
  const telling = words.filter((word) => !STOP_WORDS.has(word));
  return (telling.length > 0 ? telling : words).slice(0, 64);
}

export async function searchChunks(
  db: Kysely<Database>,
  knowledgeBaseId: string,
  query: string,
  options: { topK: number; minScore: number; sourceIds?: string[] },
): Promise<SearchHit[]> {
  const words = queryWords(query);
  if (words.length === 0) return [];
  const sources = options.sourceIds;
  const rows = isPostgres(db)
    ? await sql<Omit<SearchHit, 'score'> & { rank: number }>`
        select c.source_id, s.type as source_type, c.title, c.url, c.chunk_index, c.text, ts_rank_cd(c.search, q.query) as rank
        from knowledge_chunks c join knowledge_sources s on s.id = c.source_id,
             (select to_tsquery('english', ${words.join(' | ')}) as query) q
        where c.knowledge_base_id = ${knowledgeBaseId} and c.search @@ q.query
          ${sources ? sql`and c.source_id in (${sql.join(sources)})` : sql``}
        order by rank desc, c.id limit ${options.topK}`.execute(db)
    : await sql<Omit<SearchHit, 'score'> & { rank: number }>`
        select c.source_id, s.type as source_type, c.title, c.url, c.chunk_index, c.text, -bm25(knowledge_chunks_fts, 2.0, 1.0) as rank
        from knowledge_chunks_fts f join knowledge_chunks c on c.id = f.rowid join knowledge_sources s on s.id = c.source_id
        where knowledge_chunks_fts match ${words.map((word) => `"${word}"`).join(' OR ')} and c.knowledge_base_id = ${knowledgeBaseId}
          ${sources ? sql`and c.source_id in (${sql.join(sources)})` : sql``}
        order by rank desc, c.id limit ${options.topK}`.execute(db);
  return rows.rows
    .map(({ rank, ...hit }) => {
      const x = Math.max(0, Number(rank));
      return { ...hit, chunk_index: Number(hit.chunk_index), score: Math.round((x / (1 + x)) * 1e6) / 1e6 };
    })
    .filter((hit) => hit.score >= options.minScore);
}

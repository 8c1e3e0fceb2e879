// Full-text search over a knowledge base's chunks: SQLite's FTS5 ranked by BM25 (the title weighing twice the text),
// PostgreSQL's text search ranked by ts_rank_cd (title A, text B). A query is its words, any of which may match
// (a question's words rarely all occur in one passage), so a chunk with more and rarer words ranks higher.
// Scores are mapped into 0–1 with x / (1 + x), x the engine's rank: comparable within one search, not across
// databases.
//
// Hybrid: when the knowledge base's embedding model is available here and its chunks have vectors (vectors.ts), the
// query is embedded too (through the engine, billed as `embeddings`), and the candidates of both rankings (the best max(4 × top_k, 50) of each) are scored
// 0.5 × the full-text score + 0.5 × the cosine similarity (below 0 counts as 0). A chunk that shares no word with
// the query (a synonym, a typo) can then be found.
import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';
import type { Engine } from '../engine/index.ts';
import type { SourceType } from './schema.ts';
import { canEmbed, type EmbeddingBilling, embedTexts, hasVectors, nearestChunks } from './vectors.ts';

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
  'a about above after again against all am an and any are as at be because been before being below between both but by can could did do does doing down during each few for from further had has have having he her here hers him his how i if in into is it its itself just me more most my no nor not now of off on once only or other our ours out over own same she should so some such than that the their them then there these they this those through to too under until up very was we were what when where which while who whom why will with would you your yours'.split(
    ' ',
  ),
);

/** The words of a query, lower case, at most 64, without stop words unless it has nothing else: nothing of FTS5's or
 *  tsquery's syntax gets through. */
export function queryWords(query: string): string[] {
  const words = [
    ...new Set(
      query
        .normalize('NFKC')
        .toLowerCase()
        .match(/[\p{L}\p{N}]+/gu) ?? [],
    ),
  ];
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

export interface SearchUsage {
  tokens: number;
  costUsd: number;
}

type HitRow = Omit<SearchHit, 'score'> & { id: number };

/**
 * Full-text search, or hybrid search where the knowledge base has vectors and its embedding model is available here.
 * The query's embedding is billed to `billing` (usage feature `embeddings`).
 */
export async function searchKnowledge(
  engine: Engine,
  db: Kysely<Database>,
  base: { id: string; embedding_model: string },
  query: string,
  options: { topK: number; minScore: number; sourceIds?: string[] },
  billing: EmbeddingBilling,
): Promise<{ hits: SearchHit[]; usage: SearchUsage }> {
  if (!canEmbed(engine, base.embedding_model) || queryWords(query).length === 0 || !(await hasVectors(db, base.id))) {
    return { hits: await searchChunks(db, base.id, query, options), usage: { tokens: 0, costUsd: 0 } };
  }
  const pool = Math.max(options.topK * 4, 50);
  const [textHits, embedded] = await Promise.all([
    searchChunks(db, base.id, query, { ...options, topK: pool, minScore: 0 }),
    embedTexts(engine, base.embedding_model, [query], billing),
  ]);
  const near = await nearestChunks(db, base.id, embedded.vectors[0]!, pool, options.sourceIds);
  const key = (hit: { source_id: string; chunk_index: number }) => `${hit.source_id}:${hit.chunk_index}`;
  const candidates = new Map<string, { hit: Omit<SearchHit, 'score'>; text: number; similarity: number }>();
  for (const { score, ...hit } of textHits) candidates.set(key(hit), { hit, text: score, similarity: 0 });
  if (near.length > 0) {
    const rows = (await db
      .selectFrom('knowledge_chunks as c')
      .innerJoin('knowledge_sources as s', 's.id', 'c.source_id')
      .select(['c.id', 'c.source_id', 's.type as source_type', 'c.title', 'c.url', 'c.chunk_index', 'c.text'])
      .where(
        'c.id',
        'in',
        near.map((hit) => hit.chunkId),
      )
      .execute()) as HitRow[];
    const byId = new Map(rows.map((row) => [Number(row.id), row]));
    for (const { chunkId, similarity } of near) {
      const row = byId.get(chunkId);
      if (!row) continue;
      const { id: _, ...hit } = row;
      const candidate = candidates.get(key(hit)) ?? {
        hit: { ...hit, chunk_index: Number(hit.chunk_index) },
        text: 0,
        similarity: 0,
      };
      candidate.similarity = Math.max(0, similarity);
      candidates.set(key(hit), candidate);
    }
  }
  const hits = [...candidates.values()]
    .map(({ hit, text, similarity }) => ({ ...hit, score: Math.round((0.5 * text + 0.5 * similarity) * 1e6) / 1e6 }))
    .filter((hit) => hit.score >= options.minScore)
    .sort((a, b) => b.score - a.score)
    .slice(0, options.topK);
  return { hits, usage: { tokens: embedded.tokens, costUsd: embedded.costUsd } };
}

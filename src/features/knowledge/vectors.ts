// Vectors for knowledge search, from the knowledge base's embedding model through the content engine (billed with the
// usage feature `embeddings`), when that model is available here: always for the built-in `sandbox-embedding`, OpenAI's
// with OPENAI_API_KEY, and so on; `embed-multilingual-v3.0` has no provider on this server.
// Chunks are embedded when a source is processed and stored beside their text (a float32 blob); a search embeds the
// query and ranks the knowledge base's chunks by cosine similarity, in this process: the vectors of a knowledge base
// are read once and kept (about 6 KB a chunk for OpenAI's small model, 1 KB for the built-in one), and read again
// when its chunks change. search.ts fuses these with the full-text ranking (hybrid search).
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../storage/schema.ts';
import type { Engine } from '../engine/index.ts';

/** Who a knowledge base's embedding is billed to, and when. */
export interface EmbeddingBilling {
  workspaceId: string;
  /** The API key that asked (null for work no key started). */
  apiKeyId: string | null;
  /** The project the embedding is billed to, whose spend limits admit it (null: the workspace's alone). */
  projectId?: string | null;
  now: Date;
  signal?: AbortSignal;
}

export interface Embedded {
  vectors: Float32Array[];
  tokens: number;
  costUsd: number;
}

/** Whether the knowledge base's embedding model can embed on this server (else its search is full-text only). */
export function canEmbed(engine: Engine, model: string): boolean {
  const entry = engine.catalogue.get(model);
  return entry?.capabilities.includes('embeddings') === true && engine.catalogue.available(entry);
}

/** The texts' vectors, normalised to length 1 (so cosine similarity is a dot product), through the engine. */
export async function embedTexts(
  engine: Engine,
  model: string,
  texts: string[],
  billing: EmbeddingBilling,
): Promise<Embedded> {
  const embedded = await engine.embed({
    workspaceId: billing.workspaceId,
    apiKeyId: billing.apiKeyId,
    projectId: billing.projectId ?? null,
    feature: 'embeddings',
    model,
    inputs: texts,
    signal: billing.signal ?? new AbortController().signal,
    now: billing.now,
  });
  return {
    vectors: embedded.vectors.map((vector) => normalized(Float32Array.from(vector))),
    tokens: embedded.tokens,
    costUsd: embedded.costUsd,
  };
}

function normalized(vector: Float32Array): Float32Array {
  let sum = 0;
  for (const value of vector) sum += value * value;
  const norm = Math.sqrt(sum) || 1;
  for (let i = 0; i < vector.length; i++) vector[i]! /= norm;
  return vector;
}

export function vectorBlob(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

function vectorOf(blob: Uint8Array): Float32Array {
  // A copy: the driver's buffer need not be aligned for a Float32Array view.
  return new Float32Array(new Uint8Array(blob).buffer);
}

interface LoadedVectors {
  signature: string;
  ids: number[];
  sourceIds: string[];
  dimensions: number;
  matrix: Float32Array;
}

const loaded = new WeakMap<Kysely<Database>, Map<string, LoadedVectors>>();

/** The knowledge base's embedded chunks, from this process's copy while its chunks' count and newest id are unchanged. */
async function vectorsOf(db: Kysely<Database>, knowledgeBaseId: string): Promise<LoadedVectors | null> {
  const shape = await db
    .selectFrom('knowledge_chunks')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.max('id').as('newest')])
    // Every chunk of the base, not only those with a vector: the index answers it without reading the rows.
    .where('knowledge_base_id', '=', knowledgeBaseId)
    .executeTakeFirst();
  if (!shape || Number(shape.n) === 0) return null;
  const signature = `${shape.n}:${shape.newest}`;
  let ofDb = loaded.get(db);
  if (!ofDb) loaded.set(db, (ofDb = new Map()));
  const cached = ofDb.get(knowledgeBaseId);
  if (cached?.signature === signature) return cached;
  const rows = await db
    .selectFrom('knowledge_chunks')
    .select(['id', 'source_id', 'embedding'])
    .where('knowledge_base_id', '=', knowledgeBaseId)
    .where('embedding', 'is not', null)
    .orderBy('id')
    .execute();
  if (rows.length === 0) return null;
  const first = vectorOf(rows[0]!.embedding!);
  const dimensions = first.length;
  const matrix = new Float32Array(rows.length * dimensions);
  rows.forEach((row, i) => {
    matrix.set(i === 0 ? first : vectorOf(row.embedding!).subarray(0, dimensions), i * dimensions);
  });
  const vectors = {
    signature,
    ids: rows.map((row) => Number(row.id)),
    sourceIds: rows.map((row) => row.source_id),
    dimensions,
    matrix,
  };
  ofDb.set(knowledgeBaseId, vectors);
  return vectors;
}

export interface VectorHit {
  chunkId: number;
  similarity: number;
}

/** The `limit` chunks most similar to the (normalised) query vector, by cosine similarity, most similar first. */
export async function nearestChunks(
  db: Kysely<Database>,
  knowledgeBaseId: string,
  query: Float32Array,
  limit: number,
  sourceIds?: string[],
): Promise<VectorHit[]> {
  const vectors = await vectorsOf(db, knowledgeBaseId);
  if (!vectors || vectors.dimensions !== query.length || limit < 1) return [];
  const allowed = sourceIds ? new Set(sourceIds) : null;
  const { matrix, dimensions, ids } = vectors;
  // The best `limit` so far, most similar first: a chunk enters only when it beats the last one, so the common case
  // (it does not) costs a comparison, and nothing is allocated per chunk.
  const best: VectorHit[] = [];
  for (let i = 0; i < ids.length; i++) {
    if (allowed && !allowed.has(vectors.sourceIds[i]!)) continue;
    let dot = 0;
    const offset = i * dimensions;
    for (let d = 0; d < dimensions; d++) dot += matrix[offset + d]! * query[d]!;
    if (best.length === limit && dot <= best[limit - 1]!.similarity) continue;
    let at = best.length === limit ? limit - 1 : best.length;
    while (at > 0 && best[at - 1]!.similarity < dot) at--;
    best.splice(at, 0, { chunkId: ids[i]!, similarity: dot });
    if (best.length > limit) best.pop();
  }
  return best;
}

/** Whether any chunk of the knowledge base has a vector (a base indexed before a provider was configured has none). */
export async function hasVectors(db: Kysely<Database>, knowledgeBaseId: string): Promise<boolean> {
  const row = await sql<{
    one: number;
  }>`select 1 as one from knowledge_chunks where knowledge_base_id = ${knowledgeBaseId} and embedding is not null limit 1`.execute(
    db,
  );
  return row.rows.length > 0;
}

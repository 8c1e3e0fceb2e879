// Vectors for knowledge search, when the knowledge base's embedding model has a configured provider (OpenAI's
// text-embedding-3-small and -large with OPENAI_API_KEY; embed-multilingual-v3.0 has no provider on this server).
// Chunks are embedded when a source is processed and stored beside their text (a float32 blob); a search embeds the
// query and ranks the knowledge base's chunks by cosine similarity, in this process: the vectors of a knowledge base
// are read once and kept (about 6 KB a chunk for the small model), and read again when its chunks change.
// search.ts fuses these with the full-text ranking (hybrid search).
import { createOpenAI } from '@ai-sdk/openai';
import { embedMany } from 'ai';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../storage/schema.ts';
import type { ProvidersConfig } from '../engine/providers.ts';

/** The embedding models of the contract, their provider and price (US dollars per million tokens). */
const EMBEDDING_MODELS: Record<string, { provider: 'openai' | 'cohere'; pricePerMillion: number }> = {
  'text-embedding-3-small': { provider: 'openai', pricePerMillion: 0.02 },
  'text-embedding-3-large': { provider: 'openai', pricePerMillion: 0.13 },
  'embed-multilingual-v3.0': { provider: 'cohere', pricePerMillion: 0.1 },
};

/** Texts per embedding call (OpenAI takes up to 2,048 inputs; smaller calls fail and retry cheaper). */
const BATCH = 96;

export interface Embedded {
  vectors: Float32Array[];
  tokens: number;
  costUsd: number;
}

export interface Embedder {
  model: string;
  embed(texts: string[], signal?: AbortSignal): Promise<Embedded>;
}

/** The embedder of a model, or null when its provider is not configured (search is then full-text only). */
export function embedderFor(config: ProvidersConfig, model: string): Embedder | null {
  const entry = EMBEDDING_MODELS[model];
  const settings = entry?.provider === 'openai' ? config.enabled.openai : undefined;
  if (!entry || !settings) return null;
  const embeddingModel = createOpenAI({ apiKey: settings.apiKey, baseURL: settings.baseUrl }).embedding(model);
  return {
    model,
    async embed(texts, signal) {
      const vectors: Float32Array[] = [];
      let tokens = 0;
      for (let start = 0; start < texts.length; start += BATCH) {
        const result = await embedMany({ model: embeddingModel, values: texts.slice(start, start + BATCH), maxRetries: config.maxRetries, abortSignal: signal });
        vectors.push(...result.embeddings.map((embedding) => normalized(Float32Array.from(embedding))));
        tokens += result.usage.tokens;
      }
      return { vectors, tokens, costUsd: Math.round(((tokens * entry.pricePerMillion) / 1_000_000) * 1e11) / 1e11 };
    },
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

/** The knowledge base's embedded chunks, from this process's copy while their count and newest id are unchanged. */
async function vectorsOf(db: Kysely<Database>, knowledgeBaseId: string): Promise<LoadedVectors | null> {
  const shape = await db
    .selectFrom('knowledge_chunks')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.max('id').as('newest')])
    .where('knowledge_base_id', '=', knowledgeBaseId)
    .where('embedding', 'is not', null)
    .executeTakeFirst();
  if (!shape || Number(shape.n) === 0) return null;
  const signature = `${shape.n}:${shape.newest}`;
  let ofDb = loaded.get(db);
  if (!ofDb) loaded.set(db, (ofDb = new Map()));
  const cached = ofDb.get(knowledgeBaseId);
  if (cached?.signature === signature) return cached;
  const rows = await db.selectFrom('knowledge_chunks').select(['id', 'source_id', 'embedding']).where('knowledge_base_id', '=', knowledgeBaseId).where('embedding', 'is not', null).orderBy('id').execute();
  const first = vectorOf(rows[0]!.embedding!);
  const dimensions = first.length;
  const matrix = new Float32Array(rows.length * dimensions);
  rows.forEach((row, i) => matrix.set(i === 0 ? first : vectorOf(row.embedding!).subarray(0, dimensions), i * dimensions));
  const vectors = { signature, ids: rows.map((row) => Number(row.id)), sourceIds: rows.map((row) => row.source_id), dimensions, matrix };
  ofDb.set(knowledgeBaseId, vectors);
  return vectors;
}

export interface VectorHit {
  chunkId: number;
  similarity: number;
}

/** The `limit` chunks most similar to the (normalised) query vector, by cosine similarity. */
export async function nearestChunks(db: Kysely<Database>, knowledgeBaseId: string, query: Float32Array, limit: number, sourceIds?: string[]): Promise<VectorHit[]> {
  const vectors = await vectorsOf(db, knowledgeBaseId);
  if (!vectors || vectors.dimensions !== query.length) return [];
  const allowed = sourceIds ? new Set(sourceIds) : null;
  const hits: VectorHit[] = [];
  for (let i = 0; i < vectors.ids.length; i++) {
    if (allowed && !allowed.has(vectors.sourceIds[i]!)) continue;
    let dot = 0;
    const offset = i * vectors.dimensions;
    for (let d = 0; d < vectors.dimensions; d++) dot += vectors.matrix[offset + d]! * query[d]!;
    hits.push({ chunkId: vectors.ids[i]!, similarity: dot });
  }
  return hits.sort((a, b) => b.similarity - a.similarity).slice(0, limit);
}

/** Whether any chunk of the knowledge base has a vector (a base indexed before a provider was configured has none). */
export async function hasVectors(db: Kysely<Database>, knowledgeBaseId: string): Promise<boolean> {
  const row = await sql<{ one: number }>`select 1 as one from knowledge_chunks where knowledge_base_id = ${knowledgeBaseId} and embedding is not null limit 1`.execute(db);
  return row.rows.length > 0;
}

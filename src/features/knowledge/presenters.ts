// Knowledge bases and sources as the API shows them.
import type { Selectable } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { KnowledgeBasesTable, KnowledgeSourcesTable, SourceStatus } from './schema.ts';

type Schemas = components['schemas'];

export interface BaseTotals {
  counts: Record<SourceStatus, number>;
  chunk_count: number;
  character_count: number;
  size_bytes: number;
}

export function presentKnowledgeBase(
  row: Selectable<KnowledgeBasesTable>,
  totals: BaseTotals,
): Schemas['KnowledgeBase'] {
  const sourceCount = Object.values(totals.counts).reduce((a, b) => a + b, 0);
  return {
    id: row.id,
    object: 'knowledge_base',
    name: row.name,
    description: row.description,
    embedding_model: row.embedding_model as Schemas['KnowledgeBaseEmbeddingModel'],
    chunking: { max_chunk_tokens: row.max_chunk_tokens, overlap_tokens: row.overlap_tokens },
    status: sourceCount === 0 ? 'empty' : totals.counts.pending + totals.counts.processing > 0 ? 'processing' : 'ready',
    source_count: sourceCount,
    source_status_counts: totals.counts,
    chunk_count: totals.chunk_count,
    character_count: totals.character_count,
    size_bytes: totals.size_bytes,
    metadata: JSON.parse(row.metadata),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function presentSource(row: Selectable<KnowledgeSourcesTable>): Schemas['KnowledgeBaseSource'] {
  return {
    id: row.id,
    object: 'knowledge_base_source',
    knowledge_base_id: row.knowledge_base_id,
    type: row.type,
    title: row.title,
    url:
      row.type === 'url'
        ? { url: row.url!, crawl_depth: row.crawl_depth!, max_pages: row.max_pages!, page_count: row.page_count }
        : null,
    file: row.type === 'file' ? { name: row.file_name!, media_type: row.media_type! } : null,
    status: row.status,
    error: row.error_code
      ? { code: row.error_code as Schemas['KnowledgeBaseSourceError']['code'], message: row.error_message ?? '' }
      : null,
    chunk_count: row.chunk_count,
    character_count: row.character_count,
    size_bytes: row.size_bytes,
    metadata: JSON.parse(row.metadata),
    processed_at: row.processed_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  } as Schemas['KnowledgeBaseSource'];
}

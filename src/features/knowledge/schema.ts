// The knowledge feature's tables, merged into the platform's Database interface (see src/features/projects/schema.ts).
import type { Generated } from 'kysely';

declare module '../../storage/schema.ts' {
  interface Database {
    knowledge_bases: KnowledgeBasesTable;
    knowledge_sources: KnowledgeSourcesTable;
    knowledge_chunks: KnowledgeChunksTable;
  }
}

declare module '../../platform/jobs/runner.ts' {
  interface JobPayloads {
    /** Processes a source into chunks; a source removed or re-added meanwhile (another processing_id) stops it. */
    'knowledge.ingest': { source_id: string; processing_id: string; api_key_id?: string | null };
  }
}

export type SourceType = 'url' | 'text' | 'file';
export type SourceStatus = 'pending' | 'processing' | 'ready' | 'failed';

export interface KnowledgeBasesTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  embedding_model: string;
  max_chunk_tokens: number;
  overlap_tokens: number;
  /** JSON object. */
  metadata: string;
  created_at: string;
  updated_at: string;
}

export interface KnowledgeSourcesTable {
  id: string;
  knowledge_base_id: string;
  workspace_id: string;
  type: SourceType;
  /** The title shown: the given one, else the file's or first page's own. */
  title: string | null;
  given_title: string | null;
  url: string | null;
  crawl_depth: number | null;
  max_pages: number | null;
  page_count: number;
  file_name: string | null;
  media_type: string | null;
  payload: string | null;
  status: SourceStatus;
  error_code: string | null;
  error_message: string | null;
  chunk_count: number;
  character_count: number;
  size_bytes: number;
  processing_id: string;
  /** JSON object. */
  metadata: string;
  processed_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface KnowledgeChunksTable {
  id: Generated<number>;
  knowledge_base_id: string;
  source_id: string;
  chunk_index: number;
  title: string | null;
  url: string | null;
  text: string;
  tokens: number;
  /** The chunk's vector (float32 little-endian), when the base's embedding model has a provider. */
  embedding: Buffer | null;
}

// The knowledge feature: knowledge bases whose sources (texts, files, crawled web pages) are processed in the
// background into chunks that full-text search ranks; documents cite from them, chatbots will answer from them.
import type { Feature } from '../../platform/feature.ts';
import { knowledgeJobs } from './ingest.ts';
import { knowledgeBaseHandlers } from './knowledge-bases.ts';
import { knowledge } from './migrations/012_knowledge.ts';
import { knowledgeVectors } from './migrations/014_knowledge_vectors.ts';
import './schema.ts';

export const knowledgeFeature = {
  name: 'knowledge',
  handlers: knowledgeBaseHandlers,
  migrations: { '012_knowledge': knowledge, '014_knowledge_vectors': knowledgeVectors },
  jobs: knowledgeJobs,
} satisfies Feature;

// The public API: what other features and the entry points use (docs/server.md, "Dependency rules").
export { knowledgeBasesOf } from './knowledge-bases.ts'; // features that link knowledge bases check the ids are the workspace's
export type { SearchUsage } from './search.ts';
export { queryWords, searchKnowledge } from './search.ts'; // documents' `cite`, chatbots' answers and workflow steps search

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

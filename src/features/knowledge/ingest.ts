// The `knowledge.ingest` job: a source's text (given, extracted from its file, or from the pages of a crawl) is cut
// into chunks (chunk.ts) and indexed, page by page, so that what is ready is searchable while a crawl goes on. A
// source removed meanwhile, or added again (another processing_id), stops the job at its next write. A failure the
// source itself explains (a page that answers 404, a damaged file) fails the source with its code; anything else is
// retried, and the last attempt fails it as `internal_error`.
import { type Selectable, sql } from 'kysely';
import type { Logger } from 'pino';
import { iso } from '../../platform/clock.ts';
import type { WorkerServices } from '../../platform/feature.ts';
import type { JobDefinitions, RunningJob } from '../../platform/jobs/runner.ts';
import { isPostgres } from '../../storage/locks.ts';
import type { Engine } from '../engine/index.ts';
import { CrawlError, crawl } from './crawl.ts';
import { ExtractionError } from './extract.ts';
import { chunkTextOffLoop, extractTextOffLoop } from './extract-pool.ts';
import type { KnowledgeSourcesTable } from './schema.ts';
import { canEmbed, type EmbeddingBilling, embedTexts, vectorBlob } from './vectors.ts';

interface Page {
  title: string | null;
  url: string | null;
  text: string;
  bytes: number;
}

class SourceGone extends Error {}

/**
 * The chunks' vectors, or none when the provider fails: the chunks are then searched by full text only, which is
 * better than failing a source that full-text search serves well (the failure is logged).
 */
async function embedChunks(
  engine: Engine,
  model: string,
  texts: string[],
  billing: EmbeddingBilling,
  logger: Logger,
  sourceId: string,
): Promise<Float32Array[] | null> {
  try {
    return (await embedTexts(engine, model, texts, billing)).vectors;
  } catch (error) {
    logger.warn(
      { err: error, source_id: sourceId, model },
      'embedding a knowledge source failed; its chunks are searched by full text only',
    );
    return null;
  }
}

/** Reads a source, its text, its file or the pages of its crawl, and hands each page to `index` as it comes. */
async function readSource(
  source: Selectable<KnowledgeSourcesTable>,
  index: (page: Page) => Promise<void>,
  options: { allowPrivateNetworks: boolean; logger: Logger },
): Promise<void> {
  if (source.type === 'text') {
    await index({ title: source.given_title, url: null, text: source.payload ?? '', bytes: source.size_bytes });
  } else if (source.type === 'file') {
    const extracted = await extractTextOffLoop(Buffer.from(source.payload ?? '', 'base64'), source.media_type!, {
      name: source.file_name!,
    });
    const title = source.given_title ?? extracted.title ?? source.file_name;
    await index({ title, url: null, text: extracted.text, bytes: source.size_bytes });
  } else {
    const result = await crawl(source.url!, {
      depth: source.crawl_depth ?? 0,
      maxPages: source.max_pages ?? 50,
      allowPrivateNetworks: options.allowPrivateNetworks,
      onPage: (page) => index({ title: page.title, url: page.url, text: page.text, bytes: page.bytes }),
    });
    if (result.skipped.length > 0)
      options.logger.info({ source_id: source.id, skipped: result.skipped.length }, 'a crawl skipped pages');
  }
}

export function knowledgeJobs(services: WorkerServices): JobDefinitions {
  // The process's engine (src/services.ts): the chunks are embedded through it and billed.
  const { engine } = services;
  return {
    'knowledge.ingest': {
      async run(job: RunningJob<{ source_id: string; processing_id: string; api_key_id?: string | null }>) {
        const { source_id: sourceId, processing_id: processingId } = job.payload;
        const db = job.db;
        const source = await db
          .selectFrom('knowledge_sources')
          .selectAll()
          .where('id', '=', sourceId)
          .where('processing_id', '=', processingId)
          .executeTakeFirst();
        if (!source || source.status === 'ready' || source.status === 'failed') return;
        const base = await db
          .selectFrom('knowledge_bases')
          .select(['max_chunk_tokens', 'overlap_tokens', 'embedding_model'])
          .where('id', '=', source.knowledge_base_id)
          .executeTakeFirst();
        if (!base) return;
        const update = async (values: Partial<KnowledgeSourcesTable>) => {
          const result = await db
            .updateTable('knowledge_sources')
            .set({ ...values, updated_at: iso(job.clock.now()) })
            .where('id', '=', sourceId)
            .where('processing_id', '=', processingId)
            .executeTakeFirst();
          if (Number(result.numUpdatedRows) === 0) throw new SourceGone();
        };
        // An earlier attempt's chunks go: this one starts over.
        await db.deleteFrom('knowledge_chunks').where('source_id', '=', sourceId).execute();
        await update({
          status: 'processing',
          chunk_count: 0,
          character_count: 0,
          page_count: 0,
          ...(source.type === 'url' ? { size_bytes: 0 } : {}),
        });

        let chunkIndex = 0;
        let characters = 0;
        let bytes = source.type === 'url' ? 0 : source.size_bytes;
        let pages = 0;
        let title = source.given_title;
        const embeds = canEmbed(engine, base.embedding_model);
        const billing = {
          workspaceId: source.workspace_id,
          apiKeyId: job.payload.api_key_id ?? null,
          now: job.clock.now(),
        };
        const index = async (page: Page) => {
          const chunks = await chunkTextOffLoop(page.text, {
            maxChunkTokens: base.max_chunk_tokens,
            overlapTokens: base.overlap_tokens,
          });
          const texts = chunks.map((chunk) => `${page.title ?? title ?? ''}\n${chunk.text}`);
          const vectors =
            embeds && chunks.length > 0
              ? await embedChunks(
                  engine,
                  base.embedding_model,
                  texts,
                  { ...billing, now: job.clock.now() },
                  job.logger,
                  sourceId,
                )
              : null;
          if (!(await job.extendLease())) throw new SourceGone();
          await db.transaction().execute(async (trx) => {
            const still = await trx
              .selectFrom('knowledge_sources')
              .select('id')
              .where('id', '=', sourceId)
              .where('processing_id', '=', processingId)
              .executeTakeFirst();
            if (!still) throw new SourceGone();
            for (const [i, chunk] of chunks.entries()) {
              const embedding = vectors ? vectorBlob(vectors[i]!) : null;
              await trx
                .insertInto('knowledge_chunks')
                .values({
                  knowledge_base_id: source.knowledge_base_id,
                  source_id: sourceId,
                  chunk_index: chunkIndex++,
                  title: page.title ?? title,
                  url: page.url,
                  text: chunk.text,
                  tokens: chunk.tokens,
                  embedding,
                })
                .execute();
            }
            pages++;
            characters += page.text.length;
            if (source.type === 'url') bytes += page.bytes;
            title ??= page.title;
            await trx
              .updateTable('knowledge_sources')
              .set({
                chunk_count: chunkIndex,
                character_count: characters,
                page_count: source.type === 'url' ? pages : 0,
                size_bytes: bytes,
                title,
                updated_at: iso(job.clock.now()),
              })
              .where('id', '=', sourceId)
              .execute();
          });
        };

        try {
          await readSource(source, index, {
            allowPrivateNetworks: services.config.webhooksAllowLoopback,
            logger: job.logger,
          });
          await update({ status: 'ready', payload: null, processed_at: iso(job.clock.now()) });
          // PostgreSQL plans searches from the table's statistics: without them (autovacuum off or behind) it scanned
          // every chunk of the knowledge base instead of using the text-search index (bench:knowledge).
          if (isPostgres(db) && chunkIndex >= 100) await sql`analyze knowledge_chunks`.execute(db);
        } catch (error) {
          if (error instanceof SourceGone) return;
          const known = error instanceof ExtractionError || error instanceof CrawlError ? error : null;
          if (!known && job.attempt < job.maxAttempts) throw error;
          if (!known)
            job.logger.error(
              { err: error, source_id: sourceId },
              'processing a knowledge source failed at its last attempt',
            );
          await db.deleteFrom('knowledge_chunks').where('source_id', '=', sourceId).execute();
          await update({
            status: 'failed',
            error_code: known ? known.code : 'internal_error',
            error_message: known ? known.message.slice(0, 500) : 'Processing failed on our side; add the source again.',
            chunk_count: 0,
            payload: null,
            processed_at: iso(job.clock.now()),
          }).catch((gone) => {
            if (!(gone instanceof SourceGone)) throw gone;
          });
        }
      },
    },
  };
}

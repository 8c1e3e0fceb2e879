// Knowledge bases and their sources: create, list, get, delete; add a source (a text, a file, a web page and the
// pages it links to), processed in the background (ingest.ts); remove one; and search the chunks (search.ts).
import type { Kysely, Transaction } from 'kysely';
import type { Handlers } from '../../../generated/operations.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { enqueueJob } from '../../platform/jobs/runner.ts';
import { audited, lockOwned } from '../../platform/owned.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem, validationFailed } from '../../platform/problems.ts';
import { checkPublicUrl } from '../../platform/url-guard.ts';
import { forUpdate } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';
import type { Engine } from '../engine/index.ts';
import { type BaseTotals, presentKnowledgeBase, presentSource } from './presenters.ts';
import type { KnowledgeSourcesTable, SourceStatus } from './schema.ts';
import { searchKnowledge } from './search.ts';

type Db = Kysely<Database> | Transaction<Database>;

/** The knowledge bases of one workspace: every query of this feature starts here. */
export function knowledgeBasesOf(db: Db, workspaceId: string) {
  return db.selectFrom('knowledge_bases').selectAll().where('workspace_id', '=', workspaceId);
}

async function totalsOf(db: Db, ids: string[]): Promise<Map<string, BaseTotals>> {
  const totals = new Map<string, BaseTotals>(
    ids.map((id) => [
      id,
      { counts: { pending: 0, processing: 0, ready: 0, failed: 0 }, chunk_count: 0, character_count: 0, size_bytes: 0 },
    ]),
  );
  if (ids.length === 0) return totals;
  const rows = await db
    .selectFrom('knowledge_sources')
    .select((eb) => [
      'knowledge_base_id',
      'status',
      eb.fn.countAll<number>().as('n'),
      eb.fn.sum<number>('chunk_count').as('chunks'),
      eb.fn.sum<number>('character_count').as('characters'),
      eb.fn.sum<number>('size_bytes').as('bytes'),
    ])
    .where('knowledge_base_id', 'in', ids)
    .groupBy(['knowledge_base_id', 'status'])
    .execute();
  for (const row of rows) {
    const total = totals.get(row.knowledge_base_id)!;
    total.counts[row.status as SourceStatus] = Number(row.n);
    // Only what is ready counts (the contract's counts and sizes cover the ready sources).
    if (row.status === 'ready') {
      total.chunk_count += Number(row.chunks ?? 0);
      total.character_count += Number(row.characters ?? 0);
      total.size_bytes += Number(row.bytes ?? 0);
    }
  }
  return totals;
}

async function loadBase(db: Db, context: RequestContext, id: string) {
  const row = await knowledgeBasesOf(db, context.caller.workspace.id).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('knowledge base', id);
  return row;
}

const MAX_FILE_BYTES = 5 * 1024 * 1024;

/**
 * Whether `content` is the base64 of `bytes` (RFC 4648, white space and padding aside). The padding is cut from the
 * end of a run of `=`: content of 7 MB with `=` all through it is read once, where `/=+$/` read each run to its end
 * from each of its characters.
 */
export function isBase64Of(content: string, bytes: Buffer): boolean {
  // The padding taken off by a loop: a pattern for it keeps a backtracking entry for each `=` of a run, and a run of
  // a few million overflows the regular-expression engine's stack.
  const unpadded = (text: string) => {
    let end = text.length;
    while (end > 0 && text.charCodeAt(end - 1) === 0x3d) end--;
    return text.slice(0, end);
  };
  return unpadded(bytes.toString('base64')) === unpadded(content.replace(/\s/g, ''));
}

/**
 * The embedding model of a new knowledge base: the one asked for, which must be available here; else OpenAI's
 * `text-embedding-3-small` when OpenAI is configured, else the built-in `sandbox-embedding` (always available).
 */
function embeddingModelOf(engine: Engine, asked: string | undefined): string {
  if (asked === undefined) {
    const openai = engine.catalogue.get('text-embedding-3-small');
    return openai && engine.catalogue.available(openai) ? openai.id : 'sandbox-embedding';
  }
  const entry = engine.catalogue.get(asked);
  if (!entry?.capabilities.includes('embeddings')) {
    throw new Problem(
      'model_unavailable',
      `No provider serves the embedding model ${asked} on this server; GET /v1/models?capability=embeddings lists those that can be used.`,
      {
        errors: [{ pointer: '/embedding_model', detail: 'has no provider on this server' }],
      },
    );
  }
  if (!engine.catalogue.available(entry)) {
    throw new Problem(
      'model_unavailable',
      `The embedding model ${asked} is served by ${entry.provider}, which is not configured on this server: set ${engine.catalogue.enablingVariable(entry)}, or use sandbox-embedding.`,
      {
        errors: [
          { pointer: '/embedding_model', detail: `its provider ${entry.provider} is not configured on this server` },
        ],
      },
    );
  }
  return entry.id;
}

export const knowledgeBaseHandlers = {
  async listKnowledgeBases(request, context) {
    const page = pageRequest(request.query);
    const rows = await paginate(
      knowledgeBasesOf(context.platform.db, context.caller.workspace.id),
      { id: 'id' },
      page,
    ).execute();
    const totals = await totalsOf(
      context.platform.db,
      rows.map((row) => row.id),
    );
    const { body, headers } = toPage(
      rows,
      page,
      (row) => ({ id: row.id }),
      (row) => presentKnowledgeBase(row, totals.get(row.id)!),
      context.url,
    );
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async createKnowledgeBase(request, context) {
    const { name, description = null, chunking = {}, metadata = {} } = request.body;
    const embedding_model = embeddingModelOf(context.platform.services.engine, request.body.embedding_model);
    const maxChunkTokens = chunking.max_chunk_tokens ?? 512;
    const overlapTokens = chunking.overlap_tokens ?? 64;
    if (overlapTokens * 2 > maxChunkTokens)
      throw validationFailed([
        {
          pointer: '/chunking/overlap_tokens',
          detail: `must be at most half of max_chunk_tokens (${Math.floor(maxChunkTokens / 2)})`,
        },
      ]);
    const row = {
      id: newId('kb', context.now),
      workspace_id: context.caller.workspace.id,
      name,
      description,
      embedding_model,
      max_chunk_tokens: maxChunkTokens,
      overlap_tokens: overlapTokens,
      metadata: JSON.stringify(metadata),
      created_at: iso(context.now),
      updated_at: iso(context.now),
    };
    await context.platform.db.insertInto('knowledge_bases').values(row).execute();
    const totals = await totalsOf(context.platform.db, [row.id]);
    return {
      status: 201,
      contentType: 'application/json',
      headers: { Location: `/v1/knowledge-bases/${row.id}` },
      body: presentKnowledgeBase(row, totals.get(row.id)!),
    };
  },

  async getKnowledgeBase(request, context) {
    const row = await loadBase(context.platform.db, context, request.path.id);
    const totals = await totalsOf(context.platform.db, [row.id]);
    return { status: 200, contentType: 'application/json', body: presentKnowledgeBase(row, totals.get(row.id)!) };
  },

  async deleteKnowledgeBase(request, context) {
    await audited(context, async (trx) => {
      const row = await lockOwned(
        trx,
        knowledgeBasesOf(trx, context.caller.workspace.id).where('id', '=', request.path.id),
        'knowledge base',
        request.path.id,
      );
      const users = await trx
        .selectFrom('chatbot_knowledge_bases')
        .select('chatbot_id')
        .where('knowledge_base_id', '=', row.id)
        .execute();
      if (users.length > 0) {
        throw new Problem(
          'conflict',
          `The knowledge base ${row.id} is used by ${users.length === 1 ? 'the chatbot' : 'the chatbots'} ${users.map((u) => u.chatbot_id).join(', ')}; remove it from their knowledge_base_ids first.`,
        );
      }
      // Chunks and sources go with it (foreign keys); a job still running finds no source and stops.
      await trx.deleteFrom('knowledge_chunks').where('knowledge_base_id', '=', row.id).execute();
      await trx.deleteFrom('knowledge_sources').where('knowledge_base_id', '=', row.id).execute();
      await trx.deleteFrom('knowledge_bases').where('id', '=', row.id).execute();
      return [
        undefined,
        {
          action: 'knowledge_base.deleted',
          target: { type: 'knowledge_base', id: row.id, display_name: row.name },
          details: { name: row.name },
        },
      ];
    });
    return { status: 204 };
  },

  async listKnowledgeBaseSources(request, context) {
    const base = await loadBase(context.platform.db, context, request.path.id);
    const page = pageRequest(request.query);
    let query = context.platform.db
      .selectFrom('knowledge_sources')
      .selectAll()
      .where('knowledge_base_id', '=', base.id);
    if (request.query.status !== undefined) query = query.where('status', '=', request.query.status);
    if (request.query.type !== undefined) query = query.where('type', '=', request.query.type);
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const { body, headers } = toPage(rows, page, (row) => ({ id: row.id }), presentSource, context.url);
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async addKnowledgeBaseSource(request, context) {
    const base = await loadBase(context.platform.db, context, request.path.id);
    const body = request.body;
    const now = iso(context.now);
    const source: KnowledgeSourcesTable = {
      id: newId('src', context.now),
      knowledge_base_id: base.id,
      workspace_id: base.workspace_id,
      type: body.type,
      title: null,
      given_title: null,
      url: null,
      crawl_depth: null,
      max_pages: null,
      page_count: 0,
      file_name: null,
      media_type: null,
      payload: null,
      status: 'pending',
      error_code: null,
      error_message: null,
      chunk_count: 0,
      character_count: 0,
      size_bytes: 0,
      processing_id: newId('job', context.now),
      metadata: JSON.stringify(body.metadata ?? {}),
      processed_at: null,
      created_at: now,
      updated_at: now,
    };
    if (body.type === 'text') {
      Object.assign(source, {
        title: body.title,
        given_title: body.title,
        payload: body.content,
        size_bytes: Buffer.byteLength(body.content),
      });
    } else if (body.type === 'file') {
      const bytes = Buffer.from(body.content, 'base64');
      if (!isBase64Of(body.content, bytes))
        throw validationFailed([{ pointer: '/content', detail: 'is not base64 (RFC 4648, with padding)' }]);
      if (bytes.length > MAX_FILE_BYTES)
        throw new Problem(
          'payload_too_large',
          `The file has ${bytes.length} bytes; a file source may have at most ${MAX_FILE_BYTES} (5 MB).`,
        );
      Object.assign(source, {
        title: body.title ?? null,
        given_title: body.title ?? null,
        file_name: body.name,
        media_type: body.media_type,
        payload: bytes.toString('base64'),
        size_bytes: bytes.length,
      });
    } else {
      // http or https, no credentials, no private, loopback or link-local address (allowed with WEBHOOKS_ALLOW_LOOPBACK,
      // the development setting, as for webhook endpoints).
      const checked = await checkPublicUrl(body.url, {
        allowLoopback: context.platform.config.webhooksAllowLoopback,
        production: context.platform.config.production,
        allowHttp: true,
        pointer: '/url',
        code: 'invalid_source_url',
        what: 'source URL',
      });
      checked.hash = '';
      const url = checked.toString();
      Object.assign(source, { url, crawl_depth: body.crawl_depth ?? 0, max_pages: body.max_pages ?? 50 });
    }
    await context.platform.db.transaction().execute(async (trx) => {
      await forUpdate(knowledgeBasesOf(trx, base.workspace_id).where('id', '=', base.id), trx).executeTakeFirst();
      if (source.url) {
        const taken = await trx
          .selectFrom('knowledge_sources')
          .select('id')
          .where('knowledge_base_id', '=', base.id)
          .where('url', '=', source.url)
          .executeTakeFirst();
        if (taken)
          throw new Problem(
            'conflict',
            `${source.url} is already the source ${taken.id} of this knowledge base; remove it to fetch the page again.`,
            { errors: [{ pointer: '/url', detail: `is already source ${taken.id}` }] },
          );
      }
      await trx.insertInto('knowledge_sources').values(source).execute();
      await trx.updateTable('knowledge_bases').set({ updated_at: now }).where('id', '=', base.id).execute();
      await enqueueJob(trx, {
        kind: 'knowledge.ingest',
        workspaceId: base.workspace_id,
        payload: { source_id: source.id, processing_id: source.processing_id, api_key_id: context.caller.apiKey.id },
        now: context.now,
      });
    });
    return {
      status: 202,
      contentType: 'application/json',
      headers: { Location: `/v1/knowledge-bases/${base.id}/sources/${source.id}` },
      body: presentSource(source),
    };
  },

  async getKnowledgeBaseSource(request, context) {
    const base = await loadBase(context.platform.db, context, request.path.id);
    const row = await context.platform.db
      .selectFrom('knowledge_sources')
      .selectAll()
      .where('knowledge_base_id', '=', base.id)
      .where('id', '=', request.path.source_id)
      .executeTakeFirst();
    if (!row) throw notFound('source', request.path.source_id);
    return { status: 200, contentType: 'application/json', body: presentSource(row) };
  },

  async removeKnowledgeBaseSource(request, context) {
    await context.platform.db.transaction().execute(async (trx) => {
      const base = await lockOwned(
        trx,
        knowledgeBasesOf(trx, context.caller.workspace.id).where('id', '=', request.path.id),
        'knowledge base',
        request.path.id,
      );
      const row = await trx
        .selectFrom('knowledge_sources')
        .select('id')
        .where('knowledge_base_id', '=', base.id)
        .where('id', '=', request.path.source_id)
        .executeTakeFirst();
      if (!row) throw notFound('source', request.path.source_id);
      await trx.deleteFrom('knowledge_chunks').where('source_id', '=', row.id).execute();
      await trx.deleteFrom('knowledge_sources').where('id', '=', row.id).execute();
      await trx
        .updateTable('knowledge_bases')
        .set({ updated_at: iso(context.now) })
        .where('id', '=', base.id)
        .execute();
    });
    return { status: 204 };
  },

  async searchKnowledgeBase(request, context) {
    const base = await loadBase(context.platform.db, context, request.path.id);
    const { query, top_k = 10, min_score = 0, source_ids } = request.body;
    if (source_ids) {
      const found = await context.platform.db
        .selectFrom('knowledge_sources')
        .select('id')
        .where('knowledge_base_id', '=', base.id)
        .where('id', 'in', source_ids)
        .execute();
      const known = new Set(found.map((row) => row.id));
      const errors = source_ids.flatMap((id, index) =>
        known.has(id) ? [] : [{ pointer: `/source_ids/${index}`, detail: 'is not a source of this knowledge base' }],
      );
      if (errors.length > 0) throw validationFailed(errors);
    }
    const { hits, usage } = await searchKnowledge(
      context.platform.services.engine,
      context.platform.db,
      base,
      query,
      { topK: top_k, minScore: min_score, ...(source_ids ? { sourceIds: source_ids } : {}) },
      { workspaceId: base.workspace_id, apiKeyId: context.caller.apiKey.id, now: context.now, signal: context.signal },
    );
    return {
      status: 200,
      contentType: 'application/json',
      body: {
        object: 'knowledge_base_search_result',
        knowledge_base_id: base.id,
        query,
        embedding_model: base.embedding_model as never,
        data: hits,
        usage: { embedding_tokens: usage.tokens, cost_usd: usage.costUsd },
      },
    };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  | 'listKnowledgeBases'
  | 'createKnowledgeBase'
  | 'getKnowledgeBase'
  | 'deleteKnowledgeBase'
  | 'listKnowledgeBaseSources'
  | 'addKnowledgeBaseSource'
  | 'getKnowledgeBaseSource'
  | 'removeKnowledgeBaseSource'
  | 'searchKnowledgeBase'
>;

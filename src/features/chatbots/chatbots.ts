// Chatbots: create, list, get, update, delete, and rotate the embed key. A chatbot answers from knowledge bases of its
// workspace (kept in chatbot_knowledge_bases, so that deleting one of them can be refused while a chatbot uses it)
// in a voice that has finished training; its embed key is public (it sits in the snippet on the customer's site).
import { randomInt } from 'node:crypto';
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import { byRequest, recordAudit } from '../../platform/audit.ts';
import { iso } from '../../platform/clock.ts';
import type { Platform, RequestContext, WorkspaceRow } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { audited, lockOwned } from '../../platform/owned.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem, validationFailed } from '../../platform/problems.ts';
import type { Database } from '../../storage/schema.ts';
import { knowledgeBasesOf } from '../knowledge/index.ts';
import { projectsOf } from '../projects/index.ts';
import { readyVoice } from '../voices/index.ts';
import type { ChatbotsTable } from './schema.ts';

type Schemas = components['schemas'];
type Db = Kysely<Database> | Transaction<Database>;
export type ChatbotRow = Selectable<ChatbotsTable>;

const KEY_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `emb_` and 32 letters and digits drawn uniformly (190 bits): public, but not guessable. */
export function newEmbedKey(): string {
  let key = 'emb_';
  for (let i = 0; i < 32; i++) key += KEY_ALPHABET[randomInt(KEY_ALPHABET.length)];
  return key;
}

const DEFAULT_ESCALATION: Schemas['ChatbotEscalationSettings'] = {
  mode: 'disabled',
  email_recipients: [],
  confidence_threshold: 0.4,
  keywords: [],
  on_visitor_request: true,
  handoff_message: 'Thanks, I have passed this on to our team. Someone will get back to you soon.',
};

const DEFAULT_WIDGET: Schemas['ChatbotWidget'] = {
  theme: 'auto',
  accent_color: '#2563EB',
  avatar_url: null,
  position: 'bottom_right',
  locale: 'en',
  csat_enabled: true,
  show_sources: true,
};

/** The chatbots of one workspace: every query of this feature starts here. */
export function chatbotsOf(db: Db, workspaceId: string) {
  return db.selectFrom('chatbots').selectAll().where('workspace_id', '=', workspaceId);
}

export async function loadChatbot(db: Db, context: RequestContext, id: string): Promise<ChatbotRow> {
  const row = await chatbotsOf(db, context.caller.workspace.id).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('chatbot', id);
  return row;
}

/** The knowledge bases of chatbots, in each chatbot's order. */
export async function knowledgeBaseIdsOf(db: Db, chatbotIds: string[]): Promise<Map<string, string[]>> {
  const ids = new Map(chatbotIds.map((id) => [id, [] as string[]]));
  if (chatbotIds.length === 0) return ids;
  const rows = await db
    .selectFrom('chatbot_knowledge_bases')
    .selectAll()
    .where('chatbot_id', 'in', chatbotIds)
    .orderBy('position')
    .execute();
  for (const row of rows) ids.get(row.chatbot_id)!.push(row.knowledge_base_id);
  return ids;
}

/** The base URL the widget of a workspace's region loads from (the snippet's). */
export function regionBaseUrl(platform: Platform, workspace: Pick<WorkspaceRow, 'region'>): string {
  const { config } = platform;
  return config.regionBaseUrls[workspace.region as keyof typeof config.regionBaseUrls] ?? config.publicBaseUrl;
}

export function embedSnippet(baseUrl: string, key: string): string {
  return `<script src="${baseUrl}/widget.js" data-embed-key="${key}" defer></script>`;
}

/** Whether a previous embed key still works at `now`. */
export function previousKeyActive(
  row: Pick<ChatbotRow, 'previous_embed_key' | 'previous_key_expires_at'>,
  now: Date,
): boolean {
  return (
    row.previous_embed_key !== null &&
    row.previous_key_expires_at !== null &&
    Date.parse(row.previous_key_expires_at) > now.getTime()
  );
}

export function presentChatbot(
  row: ChatbotRow,
  knowledgeBaseIds: string[],
  baseUrl: string,
  now: Date,
): Schemas['Chatbot'] {
  const previous = previousKeyActive(row, now);
  return {
    id: row.id,
    object: 'chatbot',
    created_at: row.created_at,
    updated_at: row.updated_at,
    name: row.name,
    description: row.description,
    model: row.model,
    instructions: row.instructions,
    greeting: row.greeting,
    temperature: row.temperature,
    knowledge_base_ids: knowledgeBaseIds,
    voice_id: row.voice_id,
    project_id: row.project_id,
    escalation: JSON.parse(row.escalation) as Schemas['ChatbotEscalationSettings'],
    widget: JSON.parse(row.widget) as Schemas['ChatbotWidget'],
    allowed_origins: JSON.parse(row.allowed_origins) as string[],
    enabled: Boolean(row.enabled),
    embed: {
      key: row.embed_key,
      snippet: embedSnippet(baseUrl, row.embed_key),
      previous_key: previous ? row.previous_embed_key : null,
      previous_key_expires_at: previous ? row.previous_key_expires_at : null,
    },
    metadata: JSON.parse(row.metadata) as Schemas['Metadata'],
  };
}

/** A model of the catalogue that the workspace's region offers (the provider being configured is checked per message). */
function checkModel(context: RequestContext, id: string): void {
  const model = context.platform.services.engine.catalogue.get(id);
  if (!model?.regions.includes(context.caller.workspace.region)) {
    const where = model ? ` in the ${context.caller.workspace.region} region` : '';
    throw new Problem('model_not_found', `No model ${id} in the catalogue${where}; GET /v1/models lists them.`, {
      errors: [{ pointer: '/model', detail: `is not a model of the catalogue${where}` }],
    });
  }
  if (!model.capabilities.includes('chat'))
    throw validationFailed([
      { pointer: '/model', detail: `${id} is an embedding model; a chatbot answers with a chat model` },
    ]);
}

async function checkKnowledgeBases(db: Db, context: RequestContext, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  const found = new Set(
    (await knowledgeBasesOf(db, context.caller.workspace.id).where('id', 'in', ids).execute()).map((row) => row.id),
  );
  const errors = ids.flatMap((id, index) =>
    found.has(id)
      ? []
      : [{ pointer: `/knowledge_base_ids/${index}`, detail: 'is not a knowledge base of this workspace' }],
  );
  if (errors.length > 0)
    throw new Problem(
      'not_found',
      `No knowledge base ${ids.filter((id) => !found.has(id)).join(', ')} in this workspace.`,
      { errors },
    );
}

async function checkProject(db: Db, context: RequestContext, id: string) {
  const project = await projectsOf(db, context.caller.workspace.id).where('id', '=', id).executeTakeFirst();
  if (!project)
    throw new Problem('not_found', `No project ${id} in this workspace.`, {
      errors: [{ pointer: '/project_id', detail: 'is not a project of this workspace' }],
    });
  return project;
}

function checkEscalation(escalation: Schemas['ChatbotEscalationSettings']): void {
  if (escalation.mode === 'email' && escalation.email_recipients.length === 0) {
    throw new Problem('validation_failed', 'Escalation by email needs at least one recipient.', {
      errors: [{ pointer: '/escalation/email_recipients', detail: 'must not be empty when mode is email' }],
    });
  }
}

async function saveKnowledgeBases(
  trx: Transaction<Database>,
  chatbotId: string,
  ids: readonly string[],
): Promise<void> {
  await trx.deleteFrom('chatbot_knowledge_bases').where('chatbot_id', '=', chatbotId).execute();
  if (ids.length > 0)
    await trx
      .insertInto('chatbot_knowledge_bases')
      .values(ids.map((id, position) => ({ chatbot_id: chatbotId, knowledge_base_id: id, position })))
      .execute();
}

export const chatbotHandlers = {
  async listChatbots(request, context) {
    const page = pageRequest(request.query);
    let query = chatbotsOf(context.platform.db, context.caller.workspace.id);
    if (request.query.enabled !== undefined) query = query.where('enabled', '=', request.query.enabled ? 1 : 0);
    if (request.query.project_id !== undefined) query = query.where('project_id', '=', request.query.project_id);
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const bases = await knowledgeBaseIdsOf(
      context.platform.db,
      rows.map((row) => row.id),
    );
    const baseUrl = regionBaseUrl(context.platform, context.caller.workspace);
    const { body, headers } = toPage(
      rows,
      page,
      (row) => ({ id: row.id }),
      (row) => presentChatbot(row, bases.get(row.id)!, baseUrl, context.now),
      context.url,
    );
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async createChatbot(request, context) {
    const input = request.body;
    const db = context.platform.db;
    const workspaceId = context.caller.workspace.id;
    checkModel(context, input.model);
    const knowledgeBaseIds = input.knowledge_base_ids ?? [];
    await checkKnowledgeBases(db, context, knowledgeBaseIds);
    const project = input.project_id ? await checkProject(db, context, input.project_id) : null;
    // An explicit voice must be ready; the project's default is taken only when it is (a default still training
    // should not make creating a chatbot fail).
    let voiceId: string | null = null;
    if (input.voice_id) voiceId = (await readyVoice(db, workspaceId, input.voice_id, '/voice_id')).id;
    else if (input.voice_id === undefined && project?.default_voice_id) {
      voiceId =
        (
          await db
            .selectFrom('voices')
            .select('id')
            .where('workspace_id', '=', workspaceId)
            .where('id', '=', project.default_voice_id)
            .where('status', '=', 'ready')
            .executeTakeFirst()
        )?.id ?? null;
    }
    const escalation = { ...DEFAULT_ESCALATION, ...input.escalation };
    checkEscalation(escalation);
    const row: ChatbotRow = {
      id: newId('bot', context.now),
      workspace_id: workspaceId,
      project_id: project?.id ?? null,
      name: input.name,
      description: input.description ?? null,
      model: input.model,
      instructions: input.instructions,
      greeting: input.greeting ?? 'Hi! How can I help you today?',
      temperature: input.temperature ?? 0.3,
      voice_id: voiceId,
      escalation: JSON.stringify(escalation),
      widget: JSON.stringify({ ...DEFAULT_WIDGET, ...input.widget }),
      allowed_origins: JSON.stringify(input.allowed_origins ?? []),
      enabled: input.enabled === false ? 0 : 1,
      embed_key: newEmbedKey(),
      previous_embed_key: null,
      previous_key_expires_at: null,
      metadata: JSON.stringify(input.metadata ?? {}),
      created_at: iso(context.now),
      updated_at: iso(context.now),
    };
    await audited(context, async (trx) => {
      await trx.insertInto('chatbots').values(row).execute();
      await saveKnowledgeBases(trx, row.id, knowledgeBaseIds);
      return [
        undefined,
        {
          action: 'chatbot.created',
          target: { type: 'chatbot', id: row.id, display_name: row.name },
          details: { name: row.name, model: row.model },
        },
      ];
    });
    const body = presentChatbot(
      row,
      knowledgeBaseIds,
      regionBaseUrl(context.platform, context.caller.workspace),
      context.now,
    );
    return { status: 201, contentType: 'application/json', headers: { Location: `/v1/chatbots/${row.id}` }, body };
  },

  async getChatbot(request, context) {
    const row = await loadChatbot(context.platform.db, context, request.path.id);
    const bases = await knowledgeBaseIdsOf(context.platform.db, [row.id]);
    return {
      status: 200,
      contentType: 'application/json',
      body: presentChatbot(
        row,
        bases.get(row.id)!,
        regionBaseUrl(context.platform, context.caller.workspace),
        context.now,
      ),
    };
  },

  async updateChatbot(request, context) {
    const changes = request.body;
    const db = context.platform.db;
    if (changes.model !== undefined) checkModel(context, changes.model);
    if (changes.knowledge_base_ids) await checkKnowledgeBases(db, context, changes.knowledge_base_ids);
    if (changes.project_id) await checkProject(db, context, changes.project_id);
    if (changes.voice_id) await readyVoice(db, context.caller.workspace.id, changes.voice_id, '/voice_id');
    const { row, knowledgeBaseIds } = await audited(context, async (trx) => {
      const existing = await lockOwned(
        trx,
        chatbotsOf(trx, context.caller.workspace.id).where('id', '=', request.path.id),
        'chatbot',
        request.path.id,
      );
      const escalation = {
        ...(JSON.parse(existing.escalation) as Schemas['ChatbotEscalationSettings']),
        ...changes.escalation,
      };
      checkEscalation(escalation);
      const next: ChatbotRow = {
        ...existing,
        ...(changes.name !== undefined && { name: changes.name }),
        ...(changes.description !== undefined && { description: changes.description }),
        ...(changes.model !== undefined && { model: changes.model }),
        ...(changes.instructions !== undefined && { instructions: changes.instructions }),
        ...(changes.greeting !== undefined && { greeting: changes.greeting }),
        ...(changes.temperature !== undefined && { temperature: changes.temperature }),
        ...(changes.voice_id !== undefined && { voice_id: changes.voice_id }),
        ...(changes.project_id !== undefined && { project_id: changes.project_id }),
        ...(changes.allowed_origins !== undefined && { allowed_origins: JSON.stringify(changes.allowed_origins) }),
        ...(changes.enabled !== undefined && { enabled: changes.enabled ? 1 : 0 }),
        ...(changes.metadata !== undefined && { metadata: JSON.stringify(changes.metadata) }),
        escalation: JSON.stringify(escalation),
        widget: JSON.stringify({ ...(JSON.parse(existing.widget) as Schemas['ChatbotWidget']), ...changes.widget }),
        updated_at: iso(context.now),
      };
      const { id, workspace_id, created_at, ...values } = next;
      await trx.updateTable('chatbots').set(values).where('id', '=', id).execute();
      if (changes.knowledge_base_ids) await saveKnowledgeBases(trx, id, changes.knowledge_base_ids);
      return [
        {
          row: next,
          knowledgeBaseIds: changes.knowledge_base_ids ?? (await knowledgeBaseIdsOf(trx, [id])).get(id)!,
        },
        {
          action: 'chatbot.updated',
          target: { type: 'chatbot', id, display_name: next.name },
          details: { changed: Object.keys(changes).join(','), name: next.name },
        },
      ];
    });
    return {
      status: 200,
      contentType: 'application/json',
      body: presentChatbot(
        row,
        knowledgeBaseIds,
        regionBaseUrl(context.platform, context.caller.workspace),
        context.now,
      ),
    };
  },

  async deleteChatbot(request, context) {
    await audited(context, async (trx) => {
      const row = await lockOwned(
        trx,
        chatbotsOf(trx, context.caller.workspace.id).where('id', '=', request.path.id),
        'chatbot',
        request.path.id,
      );
      // Conversations, their messages and the knowledge-base links go with it (foreign keys, deleted here explicitly
      // so that SQLite without foreign-key enforcement behaves the same).
      const conversations = trx.selectFrom('chatbot_conversations').select('id').where('chatbot_id', '=', row.id);
      await trx.deleteFrom('chatbot_messages').where('conversation_id', 'in', conversations).execute();
      await trx.deleteFrom('chatbot_conversations').where('chatbot_id', '=', row.id).execute();
      await trx.deleteFrom('chatbot_knowledge_bases').where('chatbot_id', '=', row.id).execute();
      await trx.deleteFrom('chatbots').where('id', '=', row.id).execute();
      return [
        undefined,
        {
          action: 'chatbot.deleted',
          target: { type: 'chatbot', id: row.id, display_name: row.name },
          details: { name: row.name },
        },
      ];
    });
    return { status: 204 };
  },

  async rotateChatbotEmbedKey(request, context) {
    const grace = request.body?.grace_period_seconds ?? 86_400;
    const row = await context.platform.db.transaction().execute(async (trx) => {
      const existing = await lockOwned(
        trx,
        chatbotsOf(trx, context.caller.workspace.id).where('id', '=', request.path.id),
        'chatbot',
        request.path.id,
      );
      // One previous key at most: rotating again ends the older one's grace at once.
      const next: ChatbotRow = {
        ...existing,
        embed_key: newEmbedKey(),
        previous_embed_key: grace > 0 ? existing.embed_key : null,
        previous_key_expires_at: grace > 0 ? iso(new Date(context.now.getTime() + grace * 1000)) : null,
        updated_at: iso(context.now),
      };
      await trx
        .updateTable('chatbots')
        .set({
          embed_key: next.embed_key,
          previous_embed_key: next.previous_embed_key,
          previous_key_expires_at: next.previous_key_expires_at,
          updated_at: next.updated_at,
        })
        .where('id', '=', next.id)
        .execute();
      await recordAudit(trx, byRequest(context), {
        action: 'chatbot.embed_key_rotated',
        target: { type: 'chatbot', id: next.id, display_name: next.name },
        details: { grace_period_seconds: grace },
      });
      return next;
    });
    const bases = await knowledgeBaseIdsOf(context.platform.db, [row.id]);
    return {
      status: 200,
      contentType: 'application/json',
      body: presentChatbot(
        row,
        bases.get(row.id)!,
        regionBaseUrl(context.platform, context.caller.workspace),
        context.now,
      ),
    };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  'listChatbots' | 'createChatbot' | 'getChatbot' | 'updateChatbot' | 'deleteChatbot' | 'rotateChatbotEmbedKey'
>;

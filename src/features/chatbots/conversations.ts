// Conversations of a chatbot: list (filters), get with the transcript, escalate by hand, record a CSAT rating; the
// escalation and the rating that the replies (replies.ts) and the widget (embed.ts) share; and the signed transcript
// link of the `chatbot.conversation.escalated` event (GET /v1/public/transcripts/{conversation_id}).
import { createHmac } from 'node:crypto';
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import { byRequest, recordAudit } from '../../platform/audit.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { parseInstant } from '../../platform/instant.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { Problem } from '../../platform/problems.ts';
import { consumePublicBudget } from '../../platform/rate-limit.ts';
import { isSignature, parseLinkExpires } from '../../platform/signed-links.ts';
import { forUpdate } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';
import { storedSigningKey } from '../documents/index.ts';
import { recordEvent } from '../webhooks/index.ts';
import { type ChatbotRow, loadChatbot, regionBaseUrl } from './chatbots.ts';
import { enqueueEscalationEmail } from './escalation-email.ts';
import type { ChatbotConversationsTable, ChatbotMessagesTable } from './schema.ts';

type Schemas = components['schemas'];
type Db = Kysely<Database> | Transaction<Database>;
export type ConversationRow = Selectable<ChatbotConversationsTable>;
export type MessageRow = Selectable<ChatbotMessagesTable>;

/** How long the transcript link of an escalation works. */
export const TRANSCRIPT_LINK_SECONDS = 7 * 24 * 3600;

export function presentConversationSummary(row: ConversationRow): Schemas['ChatbotConversationSummary'] {
  return {
    id: row.id,
    object: 'chatbot.conversation',
    chatbot_id: row.chatbot_id,
    channel: row.channel,
    visitor: {
      id: row.visitor_id,
      external_id: row.visitor_external_id,
      name: row.visitor_name,
      email: row.visitor_email,
      locale: row.visitor_locale,
      metadata: JSON.parse(row.visitor_metadata) as Schemas['Metadata'],
    },
    page_url: row.page_url,
    started_at: row.started_at,
    last_message_at: row.last_message_at,
    message_count: row.message_count,
    intent: row.intent as Schemas['ChatbotIntent'],
    escalation: {
      status: row.escalation_status,
      source: row.escalation_source,
      reason: row.escalation_reason as Schemas['ChatbotEscalationReason'] | null,
      note: row.escalation_note,
      escalated_at: row.escalated_at,
    },
    csat:
      row.csat_score === null
        ? null
        : { score: row.csat_score, comment: row.csat_comment, source: row.csat_source!, rated_at: row.rated_at! },
    cost_usd: Math.round(row.cost_usd * 1e9) / 1e9,
  };
}

export function presentMessage(row: MessageRow): Schemas['ChatbotMessage'] {
  return {
    id: row.id,
    object: 'chatbot.message',
    role: row.role,
    content: row.content,
    citations: JSON.parse(row.citations) as Schemas['ChatbotCitation'][],
    confidence: row.confidence,
    created_at: row.created_at,
  };
}

export function messagesOf(db: Db, conversationId: string) {
  return db.selectFrom('chatbot_messages').selectAll().where('conversation_id', '=', conversationId).orderBy('id');
}

async function presentConversation(db: Db, row: ConversationRow): Promise<Schemas['ChatbotConversation']> {
  return { ...presentConversationSummary(row), messages: (await messagesOf(db, row.id).execute()).map(presentMessage) };
}

function conversationNotFound(chatbotId: string, id: string): Problem {
  return new Problem('not_found', `No conversation ${id} of chatbot ${chatbotId}.`);
}

/** A conversation of a chatbot of the caller's workspace, locked for the transaction, with its chatbot. */
async function lockConversation(
  trx: Transaction<Database>,
  context: RequestContext,
  chatbotId: string,
  id: string,
): Promise<{ chatbot: ChatbotRow; conversation: ConversationRow }> {
  const chatbot = await loadChatbot(trx, context, chatbotId);
  const row = await forUpdate(
    trx.selectFrom('chatbot_conversations').selectAll().where('id', '=', id).where('chatbot_id', '=', chatbotId),
    trx,
  ).executeTakeFirst();
  if (!row) throw conversationNotFound(chatbotId, id);
  return { chatbot, conversation: row };
}

async function transcriptSignature(
  db: Kysely<Database>,
  conversationId: string,
  expires: number,
  now: Date,
): Promise<Buffer> {
  const key = await storedSigningKey(db, 'transcript-link', now);
  return createHmac('sha256', key).update(`${conversationId}.${expires}`).digest();
}

export async function transcriptUrl(
  db: Kysely<Database>,
  baseUrl: string,
  conversationId: string,
  now: Date,
): Promise<string> {
  const expires = Math.floor(now.getTime() / 1000) + TRANSCRIPT_LINK_SECONDS;
  const signature = (await transcriptSignature(db, conversationId, expires, now)).toString('base64url');
  return `${baseUrl}/v1/public/transcripts/${conversationId}?expires=${expires}&signature=${signature}`;
}

export interface Escalation {
  source: 'automatic' | 'manual';
  reason: Schemas['ChatbotEscalationReason'];
  note: string | null;
  requestedAgent: string | null;
}

/**
 * Marks the (locked, not yet escalated) conversation escalated and emits `chatbot.conversation.escalated` in the same
 * transaction, so that the event exists exactly when the escalation does. `transcript` is its transcriptUrl, made
 * before the transaction (the signing key may need a write of its own).
 */
export async function escalate(
  trx: Transaction<Database>,
  chatbot: Pick<ChatbotRow, 'escalation'>,
  conversation: ConversationRow,
  escalation: Escalation,
  transcript: string,
  now: Date,
): Promise<ConversationRow> {
  const changes = {
    escalation_status: 'escalated' as const,
    escalation_source: escalation.source,
    escalation_reason: escalation.reason,
    escalation_note: escalation.note,
    escalated_at: iso(now),
  };
  await trx.updateTable('chatbot_conversations').set(changes).where('id', '=', conversation.id).execute();
  await recordEvent(
    trx,
    conversation.workspace_id,
    'chatbot.conversation.escalated',
    {
      conversation_id: conversation.id,
      intent: conversation.message_count > 0 ? (conversation.intent as Schemas['ChatbotIntent']) : null,
      transcript_url: transcript,
      requested_agent: escalation.requestedAgent,
      chatbot_id: conversation.chatbot_id,
      source: escalation.source,
      reason: escalation.reason,
      note: escalation.note,
    },
    now,
  );
  const settings = JSON.parse(chatbot.escalation) as Schemas['ChatbotEscalationSettings'];
  if (settings.mode === 'email' && settings.email_recipients.length > 0)
    await enqueueEscalationEmail(trx, conversation, settings.email_recipients, transcript, now);
  return { ...conversation, ...changes };
}

/** Records a rating (replacing any earlier one) and emits `chatbot.csat.received`. */
export async function rate(
  trx: Transaction<Database>,
  conversation: ConversationRow,
  rating: { score: number; comment: string | null; source: 'embed' | 'api' },
  now: Date,
): Promise<ConversationRow> {
  const changes = {
    csat_score: rating.score,
    csat_comment: rating.comment,
    csat_source: rating.source,
    rated_at: iso(now),
  };
  await trx.updateTable('chatbot_conversations').set(changes).where('id', '=', conversation.id).execute();
  await recordEvent(
    trx,
    conversation.workspace_id,
    'chatbot.csat.received',
    {
      conversation_id: conversation.id,
      score: rating.score,
      comment: rating.comment,
      language: conversation.visitor_locale,
      chatbot_id: conversation.chatbot_id,
      source: rating.source,
    },
    now,
  );
  return { ...conversation, ...changes };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const TRANSCRIPT_STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1f2328}main{max-width:46rem;margin:2rem auto;padding:0 1rem}' +
  'article{background:#fff;border-radius:10px;padding:.5rem 1rem;margin:.75rem 0;box-shadow:0 1px 2px #0001}article.visitor{background:#e8f0fe}' +
  'h2{font-size:.8rem;margin:.25rem 0;color:#57606a}p{white-space:pre-wrap;margin:.25rem 0}.meta{color:#57606a;font-size:.9rem}li{font-size:.9rem}';

function transcriptPage(conversation: Schemas['ChatbotConversation'], chatbotName: string): string {
  const e = conversation.escalation;
  const facts = [
    `Started ${conversation.started_at}`,
    conversation.page_url ? `on ${conversation.page_url}` : `(${conversation.channel})`,
    `intent ${conversation.intent}`,
    e.status === 'escalated' ? `escalated (${e.source}, ${e.reason}${e.note ? `: ${e.note}` : ''})` : 'not escalated',
    conversation.csat
      ? `rated ${conversation.csat.score}/5${conversation.csat.comment ? `: ${conversation.csat.comment}` : ''}`
      : 'not rated',
  ];
  const visitor = conversation.visitor;
  const who = [visitor.name, visitor.email, visitor.external_id, visitor.locale].filter(Boolean).join(' · ');
  const messages = conversation.messages
    .map((message) => {
      const sources =
        message.citations.length === 0
          ? ''
          : `<ul>${message.citations.map((c) => `<li>${escapeHtml(c.title)}${c.url ? ` (${escapeHtml(c.url)})` : ''}</li>`).join('')}</ul>`;
      return `<article class="${message.role}"><h2>${message.role === 'visitor' ? 'Visitor' : escapeHtml(chatbotName)} · ${message.created_at}</h2><p>${escapeHtml(message.content)}</p>${sources}</article>`;
    })
    .join('\n');
  return `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>Conversation ${conversation.id} · ${escapeHtml(chatbotName)}</title><style>${TRANSCRIPT_STYLE}</style></head>\n<body><main><h1>${escapeHtml(chatbotName)} · conversation ${conversation.id}</h1>\n<p class="meta">${escapeHtml(facts.join(' · '))}</p>${who ? `<p class="meta">Visitor: ${escapeHtml(who)}</p>` : ''}\n${messages}\n</main></body></html>\n`;
}

export const conversationHandlers = {
  async listChatbotConversations(request, context) {
    const db = context.platform.db;
    const chatbot = await loadChatbot(db, context, request.path.id);
    const q = request.query;
    const page = pageRequest(q);
    let query = db.selectFrom('chatbot_conversations').selectAll().where('chatbot_id', '=', chatbot.id);
    // Times are compared as instants: stored ISO strings in UTC order like the instants they name.
    if (q.started_after !== undefined) query = query.where('started_at', '>=', iso(parseInstant(q.started_after)));
    if (q.started_before !== undefined) query = query.where('started_at', '<', iso(parseInstant(q.started_before)));
    if (q.intent !== undefined) query = query.where('intent', 'in', q.intent);
    if (q.escalation_status !== undefined) query = query.where('escalation_status', '=', q.escalation_status);
    if (q.csat_min !== undefined) query = query.where('csat_score', '>=', q.csat_min);
    if (q.csat_max !== undefined) query = query.where('csat_score', '<=', q.csat_max);
    if (q.channel !== undefined) query = query.where('channel', '=', q.channel);
    if (q.csat_min !== undefined && q.csat_max !== undefined && q.csat_min > q.csat_max) {
      throw new Problem('validation_failed', 'csat_min is above csat_max, so no conversation could match.', {
        errors: [{ pointer: '/csat_min', detail: 'must be at most csat_max' }],
      });
    }
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const { body, headers } = toPage(rows, page, (row) => ({ id: row.id }), presentConversationSummary, context.url);
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async getChatbotConversation(request, context) {
    const db = context.platform.db;
    const chatbot = await loadChatbot(db, context, request.path.id);
    const row = await db
      .selectFrom('chatbot_conversations')
      .selectAll()
      .where('id', '=', request.path.conversation_id)
      .where('chatbot_id', '=', chatbot.id)
      .executeTakeFirst();
    if (!row) throw conversationNotFound(chatbot.id, request.path.conversation_id);
    return { status: 200, contentType: 'application/json', body: await presentConversation(db, row) };
  },

  async escalateChatbotConversation(request, context) {
    const db = context.platform.db;
    const transcript = await transcriptUrl(
      db,
      regionBaseUrl(context.platform, context.caller.workspace),
      request.path.conversation_id,
      context.now,
    );
    const row = await db.transaction().execute(async (trx) => {
      const { chatbot, conversation } = await lockConversation(
        trx,
        context,
        request.path.id,
        request.path.conversation_id,
      );
      if (conversation.escalation_status === 'escalated') {
        throw new Problem(
          'conversation_already_escalated',
          `The conversation ${conversation.id} was escalated at ${conversation.escalated_at} (${conversation.escalation_source}, ${conversation.escalation_reason}); an escalation is final.`,
        );
      }
      const escalated = await escalate(
        trx,
        chatbot,
        conversation,
        { source: 'manual', reason: request.body.reason, note: request.body.note ?? null, requestedAgent: null },
        transcript,
        context.now,
      );
      await recordAudit(trx, byRequest(context), {
        action: 'chatbot_conversation.escalated',
        target: { type: 'chatbot_conversation', id: conversation.id, display_name: null },
        details: { reason: request.body.reason },
      });
      return escalated;
    });
    return { status: 200, contentType: 'application/json', body: presentConversationSummary(row) };
  },

  async recordChatbotConversationCsat(request, context) {
    const row = await context.platform.db.transaction().execute(async (trx) => {
      const { conversation } = await lockConversation(trx, context, request.path.id, request.path.conversation_id);
      return rate(
        trx,
        conversation,
        { score: request.body.score, comment: request.body.comment ?? null, source: 'api' },
        context.now,
      );
    });
    return { status: 200, contentType: 'application/json', body: presentConversationSummary(row) };
  },

  async getPublicTranscript(request, context) {
    const limit = await consumePublicBudget(context.platform.rateLimitStore, context.ip);
    const db = context.platform.db;
    const { conversation_id: id } = request.path;
    // `expires` as written: the validator has made a number of the text, and `01796304246` is that number too.
    const expires = parseLinkExpires(context.url.searchParams.get('expires'));
    if (
      expires === undefined ||
      !isSignature(request.query.signature, await transcriptSignature(db, id, expires, context.now))
    ) {
      throw new Problem('not_found', 'No transcript at this link: check that it was copied whole.', { headers: limit });
    }
    const apiPath = (chatbotId: string) => `GET /v1/chatbots/${chatbotId}/conversations/${id}`;
    const row = await db.selectFrom('chatbot_conversations').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw new Problem('not_found', `The conversation ${id} was deleted.`, { headers: limit });
    if (expires * 1000 <= context.now.getTime()) {
      throw new Problem(
        'not_found',
        `This transcript link expired at ${new Date(expires * 1000).toISOString()}; read the conversation with an API key: ${apiPath(row.chatbot_id)}.`,
        { headers: limit },
      );
    }
    const body = await presentConversation(db, row);
    if (context.accepts('application/json', 'text/html') === 'text/html') {
      const chatbot = await db
        .selectFrom('chatbots')
        .select('name')
        .where('id', '=', row.chatbot_id)
        .executeTakeFirst();
      return {
        status: 200,
        contentType: 'text/html',
        // No script, nothing loaded; the signed address must not leak to the pages the transcript links to.
        headers: {
          ...limit,
          'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
          'X-Content-Type-Options': 'nosniff',
          'Referrer-Policy': 'no-referrer',
          'Cache-Control': 'no-store',
        },
        body: transcriptPage(body, chatbot?.name ?? 'Chatbot'),
      };
    }
    return {
      status: 200,
      contentType: 'application/json',
      headers: { ...limit, 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' },
      body,
    };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  | 'listChatbotConversations'
  | 'getChatbotConversation'
  | 'escalateChatbotConversation'
  | 'recordChatbotConversationCsat'
  | 'getPublicTranscript'
>;

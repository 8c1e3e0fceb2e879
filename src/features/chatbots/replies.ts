// A chatbot's answer to one visitor message, shared by server-side messages and the widget:
//   1. the message's intent: classified by the chatbot's model (a short JSON call, whose cost counts with the
//      answer's), or by the documented rules of intents.ts on the sandbox models and whenever that call fails;
//   2. retrieval: the chatbot's knowledge bases are searched with the message, the best passages kept (at most 5);
//   3. confidence: how much of the message the passages cover (below), computed before any model call;
//   4. escalation, when the chatbot's settings say so: a keyword, the visitor asking for a person, or confidence under
//      the threshold. The answer is then the handoff message and no model is called;
//   5. otherwise the model answers from the numbered passages only, citing them `[n]`, in the chatbot's voice and
//      through the output policy (the engine applies both); small talk (`greeting`) is answered with the chatbot's
//      greeting, without a model call. With no relevant passage the model is told to say that it does not know;
//   6. the visitor's message and the answer are stored together, the conversation's counters, intent, cost and
//      escalation updated, and `chatbot.conversation.escalated` emitted, in one transaction. An answer withheld by
//      the policy (or a failed call) stores nothing, so the visitor can send the message again.
//
// A citation's `score` is the share of the message's search words its passage holds.
// Confidence (0-1, two decimals) is the share of the message's search words (stop words left out; a word matches
// its plural and -ed/-ing forms) found in the passages: half for the best passage alone, half for the best three
// together. It measures support by the knowledge base, whichever model answers, and is the same on both databases.
import type { Kysely } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { AuditOrigin } from '../../platform/audit.ts';
import { iso } from '../../platform/clock.ts';
import type { Platform, WorkspaceRow } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { Problem } from '../../platform/problems.ts';
import { forUpdate } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';
import { type EngineMessage, type GenerationEvent, passagesBlock, type TokenUsage } from '../engine/index.ts';
import { queryWords, type SearchUsage, searchKnowledge } from '../knowledge/index.ts';
import { type ChatbotRow, knowledgeBaseIdsOf } from './chatbots.ts';
import {
  type ConversationRow,
  type Escalation,
  escalate,
  type MessageRow,
  messagesOf,
  transcriptUrl,
} from './conversations.ts';
import { type Classification, classifyIntent, INTENTS, type Intent, matchKeyword } from './intents.ts';

type Schemas = components['schemas'];

/** A conversation holds at most this many messages (the contract's). */
export const MAX_MESSAGES = 1000;
const MAX_PASSAGES = 5;
/** Earlier messages sent to the model with the new one. */
const HISTORY_MESSAGES = 20;

export interface NewVisitor {
  id: string | null;
  externalId: string | null;
  name: string | null;
  email: string | null;
  locale: string | null;
  metadata: Record<string, unknown>;
}

export interface ReplyRequest {
  platform: Platform;
  workspace: WorkspaceRow;
  chatbot: ChatbotRow;
  channel: 'api' | 'embed';
  content: string;
  /** The conversation to continue; a new one otherwise. */
  conversationId?: string;
  /** For a new conversation. */
  visitor: NewVisitor;
  pageUrl: string | null;
  /** The API key (server-side messages); null for the widget. */
  apiKeyId: string | null;
  userId: string | null;
  origin: AuditOrigin;
  /** The base URL of the workspace's region (the transcript link). */
  baseUrl: string;
  signal: AbortSignal;
  now: Date;
}

export interface Reply {
  conversation: ConversationRow;
  created: boolean;
  visitorMessage: MessageRow;
  message: MessageRow;
  intent: Intent;
  confidence: number;
  escalated: boolean;
  escalationReason: 'low_confidence' | 'keyword' | 'visitor_request' | null;
  model: string;
  usage: TokenUsage;
  costUsd: number;
  latencyMs: number;
}

/** A prepared answer: its text as it is written, then `finish()` stores it. */
export interface PreparedReply {
  text: AsyncGenerator<string>;
  finish(): Promise<Reply>;
}

type Citation = Schemas['ChatbotCitation'];

/** A word's stem for matching: lower case without a plural or -ed/-ing ending. */
function stem(word: string): string {
  if (word.length <= 3) return word;
  return word
    .replace(/ies$/, 'y')
    .replace(/(?:ing|ed)$/, '')
    .replace(/([^s])s$/, '$1');
}

function coverage(words: string[], texts: string[]): number {
  if (words.length === 0) return 0;
  const found = new Set(
    (
      texts
        .join(' ')
        .toLowerCase()
        .match(/[\p{L}\p{N}]+/gu) ?? []
    ).map(stem),
  );
  return words.filter((word) => found.has(stem(word))).length / words.length;
}

export function confidenceOf(message: string, passages: string[]): number {
  const words = queryWords(message);
  if (passages.length === 0) return 0;
  return (
    Math.round((0.5 * coverage(words, passages.slice(0, 1)) + 0.5 * coverage(words, passages.slice(0, 3))) * 100) / 100
  );
}

/** The best passages of the chatbot's knowledge bases for the message, and what embedding the query cost. */
async function retrieve(request: ReplyRequest): Promise<{ passages: Citation[]; usage: SearchUsage }> {
  const { db } = request.platform;
  const message = request.content;
  const ids = (await knowledgeBaseIdsOf(db, [request.chatbot.id])).get(request.chatbot.id)!;
  const bases =
    ids.length === 0
      ? []
      : await db.selectFrom('knowledge_bases').select(['id', 'embedding_model']).where('id', 'in', ids).execute();
  const billing = {
    workspaceId: request.chatbot.workspace_id,
    apiKeyId: request.apiKeyId,
    projectId: request.chatbot.project_id,
    now: request.now,
    signal: request.signal,
  };
  const searched = await Promise.all(
    bases.map(async (base) => ({
      base: base.id,
      ...(await searchKnowledge(
        request.platform.services.engine,
        db,
        base,
        message,
        { topK: MAX_PASSAGES, minScore: 0 },
        billing,
      )),
    })),
  );
  const usage = searched.reduce<SearchUsage>(
    (sum, one) => ({ tokens: sum.tokens + one.usage.tokens, costUsd: sum.costUsd + one.usage.costUsd }),
    { tokens: 0, costUsd: 0 },
  );
  const hits = searched
    .flatMap((one) => one.hits.map((hit) => ({ ...hit, base: one.base })))
    .sort((a, b) => b.score - a.score)
    .slice(0, MAX_PASSAGES);
  const passages = hits.map((hit) => ({
    knowledge_base_id: hit.base,
    source_id: hit.source_id,
    title: (hit.title ?? 'Untitled').slice(0, 300),
    url: hit.url,
    excerpt: hit.text.length > 1000 ? `${hit.text.slice(0, 999)}…` : hit.text,
    // The share of the message's words the passage holds: the search engines' ranks are comparable only within
    // one search (and near 0 in a small knowledge base), this is not.
    score: Math.round(coverage(queryWords(message), [`${hit.title ?? ''} ${hit.text}`]) * 100) / 100,
  }));
  return { passages, usage };
}

/** The system prompt: the chatbot's instructions, the rules of grounding, and the passages in the engine's block. */
function systemPrompt(
  chatbot: ChatbotRow,
  passages: Citation[],
  locale: string | null,
  pageUrl: string | null,
): string {
  return [
    chatbot.instructions,
    '',
    "Answer the visitor's last message using only the knowledge passages below. After each statement taken from a passage, cite it with its number in square brackets, like [1]. " +
      'If the passages do not contain the answer, say that you do not know and offer to pass the question on to the team; never invent facts, prices, dates or policies.',
    locale
      ? `Answer in the visitor's language (${locale}) unless they write in another one.`
      : "Answer in the visitor's language.",
    pageUrl ? `The visitor is on the page ${pageUrl}.` : '',
    '',
    ...passagesBlock(passages.map((passage) => ({ title: passage.title, text: passage.excerpt }))),
  ]
    .filter((line, index, lines) => line !== '' || lines[index - 1] !== '')
    .join('\n');
}

/** The passages the answer cites with `[n]`, in the order of their numbers. */
function citedPassages(answer: string, passages: Citation[]): Citation[] {
  const numbers = new Set([...answer.matchAll(/\[(\d{1,2})\]/g)].map((match) => Number(match[1])));
  return passages.filter((_, index) => numbers.has(index + 1));
}

async function loadConversation(db: Kysely<Database>, request: ReplyRequest): Promise<ConversationRow | undefined> {
  if (!request.conversationId) return undefined;
  const row = await db
    .selectFrom('chatbot_conversations')
    .selectAll()
    .where('id', '=', request.conversationId)
    .where('chatbot_id', '=', request.chatbot.id)
    .executeTakeFirst();
  // Another visitor's conversation is as unknown as one that does not exist.
  if (!row || (request.channel === 'embed' && (row.channel !== 'embed' || row.visitor_id !== request.visitor.id))) {
    throw new Problem(
      'not_found',
      `No conversation ${request.conversationId} of this ${request.channel === 'embed' ? 'visitor' : 'chatbot'}.`,
      {
        errors: [{ pointer: '/conversation_id', detail: 'is not a conversation you can continue' }],
      },
    );
  }
  if (request.channel === 'api' && row.channel === 'embed') {
    throw new Problem(
      'conflict',
      `The conversation ${row.id} takes place in the website widget; only its visitor continues it.`,
    );
  }
  checkRoom(row);
  return row;
}

function checkRoom(row: ConversationRow): void {
  if (row.message_count + 2 > MAX_MESSAGES)
    throw new Problem(
      'conversation_full',
      `The conversation ${row.id} holds ${row.message_count} messages, the most it can; start a new one.`,
    );
}

function decideEscalation(
  chatbot: ChatbotRow,
  conversation: ConversationRow | undefined,
  content: string,
  intent: Classification,
  confidence: number,
): Escalation | null {
  const settings = JSON.parse(chatbot.escalation) as Schemas['ChatbotEscalationSettings'];
  if (settings.mode === 'disabled' || conversation?.escalation_status === 'escalated') return null;
  const keyword = matchKeyword(content, settings.keywords);
  if (keyword !== null) return { source: 'automatic', reason: 'keyword', note: keyword, requestedAgent: null };
  if (settings.on_visitor_request && intent.asksForPerson)
    return { source: 'automatic', reason: 'visitor_request', note: null, requestedAgent: intent.requestedAgent };
  if (intent.intent !== 'greeting' && confidence < settings.confidence_threshold)
    return { source: 'automatic', reason: 'low_confidence', note: null, requestedAgent: null };
  return null;
}

const NO_USAGE: TokenUsage = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 };

const CLASSIFIER_PROMPT =
  "Classify the customer's message to a support chatbot. intent is one of: product_question (features, compatibility, choosing), pricing, " +
  'order_status (delivery, tracking), billing (invoices, payments, refunds), technical_support (something does not work), account (login, settings), ' +
  'complaint, feedback, sales_lead (buying intent, quotes, demos), human_handoff (asks for a person), greeting (small talk only), other. ' +
  'confidence is how sure you are of the intent, 0 to 1. asks_for_person is true when the customer asks to talk to a person. ' +
  'requested_agent is the person or team they named ("the billing team", "Anna"), or null when they named nobody in particular.';

const CLASSIFICATION_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['intent', 'confidence', 'asks_for_person', 'requested_agent'],
  properties: {
    intent: { type: 'string', enum: [...INTENTS] },
    confidence: { type: 'number' },
    asks_for_person: { type: 'boolean' },
    requested_agent: { type: ['string', 'null'] },
  },
} as const;

/** The intent by the chatbot's model, or by the rules (sandbox models, or when the call or its JSON fails). */
async function classify(
  request: ReplyRequest,
): Promise<{ classification: Classification; usage: TokenUsage; costUsd: number }> {
  const rules = { classification: classifyIntent(request.content), usage: NO_USAGE, costUsd: 0 };
  const engine = request.platform.services.engine;
  const model = engine.catalogue.get(request.chatbot.model);
  if (!model || model.provider === 'sandbox' || !engine.catalogue.available(model)) return rules;
  try {
    const result = await engine.generate({
      workspaceId: request.workspace.id,
      apiKeyId: request.apiKeyId,
      feature: 'chatbots',
      model: model.id,
      // A paid call like the answer: billed to the chatbot's project and admitted by its spend limits.
      projectId: request.chatbot.project_id,
      userId: request.userId,
      messages: [
        { role: 'system', content: CLASSIFIER_PROMPT },
        { role: 'user', content: request.content },
      ],
      responseFormat: { type: 'json', schema: CLASSIFICATION_SCHEMA as never, name: 'intent' },
      temperature: 0,
      maxOutputTokens: 100,
      origin: request.origin,
      signal: request.signal,
      now: request.now,
    });
    const answer = JSON.parse(result.choices[0]!.text) as {
      intent?: unknown;
      confidence?: unknown;
      asks_for_person?: unknown;
      requested_agent?: unknown;
    };
    const intent = INTENTS.find((name) => name === answer.intent);
    if (!intent) throw new Error(`the model answered the intent ${String(answer.intent)}`);
    const confidence =
      typeof answer.confidence === 'number' ? Math.min(1, Math.max(0, Math.round(answer.confidence * 100) / 100)) : 0.5;
    const asksForPerson = answer.asks_for_person === true || intent === 'human_handoff';
    const requestedAgent =
      asksForPerson && typeof answer.requested_agent === 'string' && answer.requested_agent.trim()
        ? answer.requested_agent.trim().slice(0, 200)
        : null;
    return {
      classification: { intent, confidence, asksForPerson, requestedAgent },
      usage: result.usage,
      costUsd: result.costUsd,
    };
  } catch (error) {
    // A spend limit's refusal is the reply's too: the rules would only lead to an answer the limit refuses.
    if (request.signal.aborted || (error instanceof Problem && error.code === 'spend_limit_reached')) throw error;
    request.platform.logger.warn(
      { err: error, chatbot_id: request.chatbot.id },
      'intent classification by the model failed; the rules classified the message',
    );
    return rules;
  }
}

function historyOf(rows: MessageRow[]): EngineMessage[] {
  return rows
    .slice(-HISTORY_MESSAGES)
    .map((row) => ({ role: row.role === 'visitor' ? 'user' : 'assistant', content: row.content }));
}

/** The model's answer from the retrieved passages, after the conversation's recent messages. */
async function modelAnswer(
  request: ReplyRequest,
  existing: ConversationRow | undefined,
  passages: Citation[],
): Promise<AsyncGenerator<GenerationEvent>> {
  const { platform, chatbot } = request;
  const history = existing ? historyOf(await messagesOf(platform.db, existing.id).execute()) : [];
  const locale = existing?.visitor_locale ?? request.visitor.locale;
  return platform.services.engine.stream({
    workspaceId: request.workspace.id,
    apiKeyId: request.apiKeyId,
    feature: 'chatbots',
    model: chatbot.model,
    messages: [
      { role: 'system', content: systemPrompt(chatbot, passages, locale, existing?.page_url ?? request.pageUrl) },
      ...history,
      { role: 'user', content: request.content },
    ],
    voiceId: chatbot.voice_id,
    projectId: chatbot.project_id,
    userId: request.userId,
    origin: request.origin,
    temperature: chatbot.temperature,
    // An answer is short (at most 8,000 characters are kept); a model with a smaller limit keeps its own.
    maxOutputTokens: Math.min(1000, platform.services.engine.catalogue.get(chatbot.model)?.max_output_tokens ?? 1000),
    signal: request.signal,
    now: request.now,
  });
}

/** The row of a conversation that this reply starts. */
function newConversation(request: ReplyRequest, id: string, intent: Intent): ConversationRow {
  const { now } = request;
  return {
    id,
    chatbot_id: request.chatbot.id,
    workspace_id: request.workspace.id,
    channel: request.channel,
    visitor_id: request.visitor.id,
    visitor_external_id: request.visitor.externalId,
    visitor_name: request.visitor.name,
    visitor_email: request.visitor.email,
    visitor_locale: request.visitor.locale,
    visitor_metadata: JSON.stringify(request.visitor.metadata),
    page_url: request.pageUrl,
    started_at: iso(now),
    last_message_at: iso(now),
    message_count: 0,
    intent,
    escalation_status: 'none',
    escalation_source: null,
    escalation_reason: null,
    escalation_note: null,
    escalated_at: null,
    csat_score: null,
    csat_comment: null,
    csat_source: null,
    rated_at: null,
    cost_usd: 0,
  };
}

export async function prepareReply(request: ReplyRequest): Promise<PreparedReply> {
  const { platform, chatbot, now } = request;
  const db = platform.db;
  const started = performance.now();
  const existing = await loadConversation(db, request);
  const [classified, found] = await Promise.all([classify(request), retrieve(request)]);
  const { classification } = classified;
  const smallTalk = classification.intent === 'greeting';
  const passages = smallTalk ? [] : found.passages;
  const confidence = smallTalk
    ? 1
    : confidenceOf(
        request.content,
        passages.map((passage) => `${passage.title} ${passage.excerpt}`),
      );
  const escalation = decideEscalation(chatbot, existing, request.content, classification, confidence);
  const settings = JSON.parse(chatbot.escalation) as Schemas['ChatbotEscalationSettings'];

  // The query's embedding counts as prompt tokens of the answer ("retrieval included").
  let usage: TokenUsage = { ...classified.usage, inputTokens: classified.usage.inputTokens + found.usage.tokens };
  let costUsd = classified.costUsd + found.usage.costUsd;
  let answer = '';
  let text: AsyncGenerator<string>;
  if (escalation || smallTalk) {
    answer = escalation ? settings.handoff_message : chatbot.greeting;
    text = (async function* () {
      yield answer;
    })();
  } else {
    const events = await modelAnswer(request, existing, passages);
    text = (async function* () {
      for await (const event of events) {
        if (event.type === 'text') {
          answer += event.text;
          yield event.text;
        } else if (event.type === 'usage') {
          usage = {
            inputTokens: usage.inputTokens + event.usage.inputTokens,
            cachedInputTokens: usage.cachedInputTokens + event.usage.cachedInputTokens,
            outputTokens: usage.outputTokens + event.usage.outputTokens,
          };
          costUsd += event.costUsd;
        }
      }
    })();
  }

  return {
    text,
    async finish(): Promise<Reply> {
      if (request.signal.aborted)
        throw new Problem(
          'internal_error',
          'The client closed the connection before the answer was complete; nothing was saved.',
        );
      const content = answer.trim().slice(0, 8000) || "I'm sorry, I have no answer to that.";
      const citations = escalation || smallTalk ? [] : citedPassages(content, passages);
      const conversationId = existing?.id ?? newId('conv', now);
      const transcript = escalation ? await transcriptUrl(db, request.baseUrl, conversationId, now) : '';
      const stored = await db.transaction().execute(async (trx) => {
        let conversation: ConversationRow;
        if (existing) {
          conversation = (await forUpdate(
            trx.selectFrom('chatbot_conversations').selectAll().where('id', '=', existing.id),
            trx,
          ).executeTakeFirst())!;
          if (!conversation) throw new Problem('not_found', `The conversation ${existing.id} was deleted.`);
          checkRoom(conversation);
        } else {
          conversation = newConversation(request, conversationId, classification.intent);
          await trx.insertInto('chatbot_conversations').values(conversation).execute();
        }
        const answeredAt = new Date(Math.max(now.getTime(), platform.clock.now().getTime()));
        const visitorMessage: MessageRow = {
          id: newId('msg', now),
          conversation_id: conversation.id,
          role: 'visitor',
          content: request.content,
          citations: '[]',
          confidence: null,
          intent: classification.intent,
          created_at: iso(now),
        };
        const message: MessageRow = {
          id: newId('msg', answeredAt),
          conversation_id: conversation.id,
          role: 'assistant',
          content,
          citations: JSON.stringify(citations),
          confidence,
          intent: null,
          created_at: iso(answeredAt),
        };
        await trx.insertInto('chatbot_messages').values([visitorMessage, message]).execute();
        const changes = {
          message_count: conversation.message_count + 2,
          last_message_at: message.created_at,
          // The conversation's intent is its first visitor message's that is not small talk.
          intent: conversation.intent === 'greeting' ? classification.intent : conversation.intent,
          cost_usd: Math.round((conversation.cost_usd + costUsd) * 1e11) / 1e11,
        };
        await trx.updateTable('chatbot_conversations').set(changes).where('id', '=', conversation.id).execute();
        conversation = { ...conversation, ...changes };
        // A conversation escalated meanwhile (by hand, or by another message) is not escalated twice.
        const escalates = escalation !== null && conversation.escalation_status === 'none';
        if (escalates) conversation = await escalate(trx, chatbot, conversation, escalation, transcript, now);
        return { conversation, visitorMessage, message, escalates };
      });
      return {
        conversation: stored.conversation,
        created: !existing,
        visitorMessage: stored.visitorMessage,
        message: stored.message,
        intent: classification.intent,
        confidence,
        escalated: stored.escalates,
        escalationReason: stored.escalates ? (escalation!.reason as Reply['escalationReason']) : null,
        model: chatbot.model,
        usage,
        costUsd,
        latencyMs: Math.round(performance.now() - started),
      };
    },
  };
}

// Saved chat threads: created by a completion with `store: true`, continued with `thread_id`, listed, read and
// deleted for good. Every saved message emits `chat.message.created`; a deletion writes its audit entry and emits
// `chat.thread.deleted`, in the transaction of the change.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import { byRequest, recordAudit } from '../../platform/audit.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { parseInstant } from '../../platform/instant.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem } from '../../platform/problems.ts';
import { forUpdate } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';
import type { EngineMessage } from '../engine/index.ts';
import { recordEvent } from '../webhooks/index.ts';
import type { EngineToolCall } from './engine-types.ts';
import type { ChatMessagesTable, ChatThreadsTable } from './schema.ts';

type Schemas = components['schemas'];

/** A thread holds at most this many messages (`409 thread_full`). */
export const THREAD_LIMIT = 1000;

/** The threads of one workspace: every thread query starts here, so no key reads another workspace's. */
export function threadsOf(db: Kysely<Database> | Transaction<Database>, workspaceId: string) {
  return db.selectFrom('chat_threads').selectAll().where('workspace_id', '=', workspaceId);
}

function presentThread(row: Selectable<ChatThreadsTable>): Schemas['ChatThread'] {
  return {
    id: row.id,
    object: 'chat.thread',
    title: row.title,
    model: row.model,
    voice_id: row.voice_id,
    message_count: Number(row.message_count),
    metadata: JSON.parse(row.metadata) as Schemas['Metadata'],
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function presentMessage(row: Selectable<ChatMessagesTable>): Schemas['ChatMessage'] {
  return {
    id: row.id,
    object: 'chat.message',
    thread_id: row.thread_id,
    role: row.role,
    content: row.content,
    refusal: row.refusal,
    name: row.name,
    model: row.model,
    usage: row.usage === null ? null : (JSON.parse(row.usage) as Schemas['ChatCompletionUsage']),
    cost_usd: row.cost_usd === null ? null : Number(row.cost_usd),
    finish_reason: row.finish_reason,
    tool_calls: toolCallsOf(row.tool_calls),
    tool_call_id: row.tool_call_id,
    created_at: row.created_at,
  };
}

/** OpenAI's `tool_calls` of a saved message (the JSON of its column). */
function toolCallsOf(json: string | null): Schemas['ChatCompletionMessageToolCall'][] | null {
  return json === null ? null : (JSON.parse(json) as Schemas['ChatCompletionMessageToolCall'][]);
}

/** The engine's tool calls in OpenAI's wire format (the answer's `tool_calls`, and what a saved message keeps). */
export function wireToolCalls(calls: EngineToolCall[]): Schemas['ChatCompletionMessageToolCall'][] {
  return calls.map((call) => ({
    id: call.id,
    type: 'function',
    function: { name: call.name, arguments: call.arguments },
  }));
}

/** A saved message as the engine takes it again when the thread continues; null for one it cannot (a refusal). */
export function replayedMessage(row: Selectable<ChatMessagesTable>): EngineMessage | null {
  const calls = toolCallsOf(row.tool_calls);
  if (row.role === 'tool') return { role: 'tool', toolCallId: row.tool_call_id ?? '', content: row.content ?? '' };
  if (row.role === 'assistant') {
    if (row.content === null && !calls) return null;
    return {
      role: 'assistant',
      content: row.content ?? '',
      ...(calls
        ? {
            toolCalls: calls.map((call) => ({
              id: call.id,
              name: call.function.name,
              arguments: call.function.arguments,
            })),
          }
        : {}),
    };
  }
  if (row.content === null) return null;
  return { role: row.role === 'user' ? 'user' : 'system', content: row.content };
}

/** What a saved thread keeps of an image part: a placeholder, never the bytes (nor a data: URL). */
export function imagePlaceholder(url: string): string {
  const dataUrl = /^data:([^;,]*)/.exec(url);
  return dataUrl ? `[image: ${dataUrl[1] || 'data'}, not kept]` : `[image: ${url}]`;
}

/** A thread's messages, oldest first. */
export async function threadMessages(db: Kysely<Database>, threadId: string): Promise<Selectable<ChatMessagesTable>[]> {
  return db.selectFrom('chat_messages').selectAll().where('thread_id', '=', threadId).orderBy('position').execute();
}

/**
 * The conversation a chat completion continues (`thread_id`): its messages as the engine takes them, and the ids of
 * their tool calls, which a tool message may answer. The thread must exist and have room for `adding` more messages.
 */
export async function threadHistory(
  db: Kysely<Database>,
  workspaceId: string,
  threadId: string,
  adding: number,
): Promise<{ history: EngineMessage[]; knownCalls: Set<string> }> {
  const thread = await threadsOf(db, workspaceId).where('id', '=', threadId).executeTakeFirst();
  if (!thread) throw notFound('chat thread', threadId);
  if (Number(thread.message_count) + adding > THREAD_LIMIT) throw threadFull(thread.id, Number(thread.message_count));
  const history: EngineMessage[] = [];
  const knownCalls = new Set<string>();
  for (const row of await threadMessages(db, thread.id)) {
    const message = replayedMessage(row);
    if (!message) continue;
    if (message.role === 'assistant') for (const call of message.toolCalls ?? []) knownCalls.add(call.id);
    history.push(message);
  }
  return { history, knownCalls };
}

/** One message of a request, as saved. */
export interface SavedMessage {
  role: ChatMessagesTable['role'];
  /** Text parts joined, images as placeholders; null for an assistant message with tool calls only. */
  content: string | null;
  name: string | null;
  toolCalls: EngineToolCall[] | null;
  toolCallId: string | null;
}

export interface Exchange {
  /** The thread to append to, or the id of the thread to create (`store: true`). */
  threadId: string;
  create: { metadata: Schemas['Metadata'] } | null;
  model: string;
  voiceId: string | null;
  messages: SavedMessage[];
  answer: {
    content: string | null;
    toolCalls: EngineToolCall[];
    finishReason: NonNullable<ChatMessagesTable['finish_reason']>;
    usage: Schemas['ChatCompletionUsage'];
    costUsd: number;
  };
}

/**
 * Creates the empty thread of a `store: true` exchange: inside saveExchange, or before a streamed answer's first chunk,
 * which names it (its messages follow when the answer is complete).
 */
export async function createThread(
  db: Kysely<Database>,
  workspaceId: string,
  exchange: Pick<Exchange, 'threadId' | 'model' | 'voiceId' | 'messages'> & { create: NonNullable<Exchange['create']> },
  now: Date,
): Promise<void> {
  const firstUser = exchange.messages.find((m) => m.role === 'user') ?? exchange.messages[0];
  await db
    .insertInto('chat_threads')
    .values({
      id: exchange.threadId,
      workspace_id: workspaceId,
      title: [...(firstUser?.content ?? '')].slice(0, 100).join('').trim(),
      model: exchange.model,
      voice_id: exchange.voiceId,
      message_count: 0,
      metadata: JSON.stringify(exchange.create.metadata),
      created_at: iso(now),
      updated_at: iso(now),
    })
    .execute();
}

/** Deletes a thread created for a streamed answer that ended before it was saved (nothing in it yet). */
export async function dropEmptyThread(db: Kysely<Database>, workspaceId: string, threadId: string): Promise<void> {
  await db
    .deleteFrom('chat_threads')
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', threadId)
    .where('message_count', '=', 0)
    .execute();
}

/**
 * Saves the request's messages and the answer to the thread, in one transaction with their events. The thread's row
 * lock orders concurrent completions of one thread, and its 1,000-message limit is checked again under it.
 */
export async function saveExchange(
  db: Kysely<Database>,
  workspaceId: string,
  exchange: Exchange,
  now: Date,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    let count = 0;
    if (exchange.create) {
      await createThread(trx, workspaceId, { ...exchange, create: exchange.create }, now);
    } else {
      const thread = await forUpdate(
        threadsOf(trx, workspaceId).where('id', '=', exchange.threadId),
        trx,
      ).executeTakeFirst();
      if (!thread) throw notFound('chat thread', exchange.threadId);
      count = Number(thread.message_count);
    }
    const total = count + exchange.messages.length + 1;
    if (total > THREAD_LIMIT) throw threadFull(exchange.threadId, count);
    const savedCalls = (calls: EngineToolCall[] | null) =>
      calls && calls.length > 0 ? JSON.stringify(wireToolCalls(calls)) : null;
    const rows = [
      ...exchange.messages.map((message) => ({
        role: message.role,
        content: message.content,
        name: message.name,
        refusal: null,
        model: null,
        usage: null,
        cost_usd: null,
        finish_reason: null,
        tool_calls: savedCalls(message.toolCalls),
        tool_call_id: message.toolCallId,
      })),
      {
        role: 'assistant' as const,
        content: exchange.answer.content,
        name: null,
        refusal: null,
        model: exchange.model,
        usage: JSON.stringify(exchange.answer.usage),
        cost_usd: exchange.answer.costUsd,
        finish_reason: exchange.answer.finishReason,
        tool_calls: savedCalls(exchange.answer.toolCalls),
        tool_call_id: null,
      },
    ].map((message, i) => ({
      ...message,
      id: newId('msg', now),
      thread_id: exchange.threadId,
      workspace_id: workspaceId,
      position: count + i,
      created_at: iso(now),
    }));
    await trx.insertInto('chat_messages').values(rows).execute();
    await trx
      .updateTable('chat_threads')
      .set({ message_count: total, model: exchange.model, voice_id: exchange.voiceId, updated_at: iso(now) })
      .where('id', '=', exchange.threadId)
      .execute();
    for (const row of rows) {
      await recordEvent(
        trx,
        workspaceId,
        'chat.message.created',
        {
          thread_id: row.thread_id,
          message_id: row.id,
          role: row.role,
          content: row.content,
          model: exchange.model,
          voice_id: exchange.voiceId,
          tool_calls: toolCallsOf(row.tool_calls),
          tool_call_id: row.tool_call_id,
        },
        now,
      );
    }
  });
}

export function threadFull(threadId: string, count: number): Problem {
  return new Problem(
    'thread_full',
    `Thread ${threadId} holds ${count} messages; with this request it would exceed ${THREAD_LIMIT}. Start a new thread.`,
  );
}

export const threadHandlers = {
  async listChatThreads(request, context) {
    const page = pageRequest(request.query);
    const { created_after, created_before, voice_id, model } = request.query;
    let query = threadsOf(context.platform.db, context.caller.workspace.id);
    if (created_after !== undefined) query = query.where('created_at', '>=', iso(parseInstant(created_after)));
    if (created_before !== undefined) query = query.where('created_at', '<', iso(parseInstant(created_before)));
    if (voice_id !== undefined) query = query.where('voice_id', '=', voice_id);
    if (model !== undefined) query = query.where('model', '=', model);
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const { body, headers } = toPage(rows, page, (row) => ({ id: row.id }), presentThread, context.url);
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async getChatThread(request, context) {
    const { db } = context.platform;
    const thread = await threadsOf(db, context.caller.workspace.id)
      .where('id', '=', request.path.id)
      .executeTakeFirst();
    if (!thread) throw notFound('chat thread', request.path.id);
    const messages = await threadMessages(db, thread.id);
    return {
      status: 200,
      contentType: 'application/json',
      body: { ...presentThread(thread), messages: messages.map(presentMessage) },
    };
  },

  async deleteChatThread(request, context) {
    await context.platform.db.transaction().execute(async (trx) => {
      const workspaceId = context.caller.workspace.id;
      const thread = await forUpdate(
        threadsOf(trx, workspaceId).where('id', '=', request.path.id),
        trx,
      ).executeTakeFirst();
      if (!thread) throw notFound('chat thread', request.path.id);
      await trx.deleteFrom('chat_responses').where('thread_id', '=', thread.id).execute();
      await trx.deleteFrom('chat_messages').where('thread_id', '=', thread.id).execute();
      await trx.deleteFrom('chat_threads').where('id', '=', thread.id).execute();
      await recordAudit(trx, byRequest(context), {
        action: 'chat_thread.deleted',
        target: { type: 'chat_thread', id: thread.id, display_name: thread.title || null },
        details: { message_count: Number(thread.message_count) },
      });
      await recordEvent(
        trx,
        workspaceId,
        'chat.thread.deleted',
        { thread_id: thread.id, deleted_at: iso(context.now) },
        context.now,
      );
    });
    return { status: 204 };
  },
} satisfies Pick<Handlers<RequestContext>, 'listChatThreads' | 'getChatThread' | 'deleteChatThread'>;

// Stored responses: a response lives in a chat thread. Its input items and output items are the thread's messages,
// and `chat_responses` keeps the rest of the response object and the positions of its messages, so a thread's
// retention and deletion cover its responses. `previous_response_id` replays the thread up to that response's output;
// continuing a response that is not the end of its thread forks: a new thread with a copy of the conversation up to it.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import { iso } from '../../platform/clock.ts';
import { newId } from '../../platform/ids.ts';
import { Problem } from '../../platform/problems.ts';
import { forUpdate } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';
import type { EngineMessage, FinishReason } from '../engine/index.ts';
import { recordEvent } from '../webhooks/index.ts';
import {
  functionCallItem,
  type InputMessage,
  type ItemReference,
  itemIdOf,
  messageIdOf,
  type Outcome,
  type OutputItem,
  type ResponseObject,
  statusOf,
  wireItem,
} from './convert-responses.ts';
import type { EngineToolCall } from './engine-types.ts';
import type { ChatMessagesTable, ChatResponsesTable } from './schema.ts';
import { replayedMessage, THREAD_LIMIT, threadFull, threadsOf, wireToolCalls } from './threads.ts';

type Schemas = components['schemas'];
type ListedItem = Schemas['ResponseItem'];
type MessageRow = Selectable<ChatMessagesTable>;
/** The response object without its output items: what `chat_responses.body` holds. */
type StoredBody = Omit<ResponseObject, 'output'>;

export function responseNotFound(id: string, pointer?: string): Problem {
  return new Problem(
    'not_found',
    `No response ${id} in this workspace.`,
    pointer ? { errors: [{ pointer, detail: 'is not a stored response of this workspace' }] } : {},
  );
}

/** The stored responses of one workspace: every response query starts here. */
export function responsesOf(db: Kysely<Database> | Transaction<Database>, workspaceId: string) {
  return db.selectFrom('chat_responses').selectAll().where('workspace_id', '=', workspaceId);
}

function toolCallsOf(row: MessageRow): EngineToolCall[] | null {
  if (row.tool_calls === null) return null;
  return (JSON.parse(row.tool_calls) as Schemas['ChatCompletionMessageToolCall'][]).map((call) => ({
    id: call.id,
    name: call.function.name,
    arguments: call.function.arguments,
  }));
}

/** A thread message named by an `item_reference`, as an input message. */
function referencedMessage(row: MessageRow): InputMessage | null {
  const engine = replayedMessage(row);
  if (!engine) return null;
  return {
    role: row.role,
    content: row.content,
    toolCalls: toolCallsOf(row),
    toolCallId: row.tool_call_id,
    engine,
    pointer: null,
  };
}

/** Where the new response is saved: the thread it continues, a fork of it, or a new thread. */
export interface Placement {
  threadId: string;
  /** Copy the messages of this thread up to this position into the new thread first (a fork). */
  fork: { fromThreadId: string; through: number } | null;
  /** The thread does not exist yet (a new conversation or a fork). */
  create: boolean;
}

/** The conversation a response continues, and where the new response is saved. */
export interface Conversation {
  /** The thread up to the previous response's output, as the engine takes it. */
  history: EngineMessage[];
  /** Where the response is saved; null when it is not stored. */
  placement: Placement | null;
  /** The message count of the continued thread when it was read: another request's continuation changes it. */
  expectedCount: number;
  previousId: string | null;
  /** The thread and last position of the replayed conversation. */
  replayed: { threadId: string; through: number } | null;
}

/**
 * The conversation so far (the thread up to the previous response's output, none without `previousId`) and where the
 * response is saved: the thread's end continued, a fork of it, or a new thread. `adding`: the input messages it brings.
 */
export async function conversationOf(
  db: Kysely<Database>,
  workspaceId: string,
  previousId: string | null,
  store: boolean,
  adding: number,
  now: Date,
): Promise<Conversation> {
  if (!previousId)
    return {
      history: [],
      placement: store ? { threadId: newId('thr', now), fork: null, create: true } : null,
      expectedCount: 0,
      previousId,
      replayed: null,
    };
  const previous = await responsesOf(db, workspaceId).where('id', '=', previousId).executeTakeFirst();
  if (!previous) throw responseNotFound(previousId, '/previous_response_id');
  const thread = await threadsOf(db, workspaceId).where('id', '=', previous.thread_id).executeTakeFirstOrThrow();
  const rows = await db
    .selectFrom('chat_messages')
    .selectAll()
    .where('thread_id', '=', previous.thread_id)
    .where('position', '<=', previous.last_position)
    .orderBy('position')
    .execute();
  const history: EngineMessage[] = [];
  for (const row of rows) {
    // A thread's rows, tool calls and results of chat completions included.
    const message = replayedMessage(row);
    if (message) history.push(message);
  }
  const atEnd = Number(thread.message_count) === previous.last_position + 1;
  let placement: Placement | null = null;
  if (store) {
    placement = atEnd
      ? { threadId: thread.id, fork: null, create: false }
      : {
          threadId: newId('thr', now),
          fork: { fromThreadId: thread.id, through: previous.last_position },
          create: true,
        };
  }
  if (previous.last_position + 1 + adding + 1 > THREAD_LIMIT) throw threadFull(thread.id, previous.last_position + 1);
  return {
    history,
    placement,
    expectedCount: Number(thread.message_count),
    previousId,
    replayed: { threadId: previous.thread_id, through: previous.last_position },
  };
}

/** Inserts the items named by reference into `messages`: items of stored responses, unless the replayed conversation holds them. */
export async function insertReferencedItems(
  db: Kysely<Database>,
  workspaceId: string,
  references: ItemReference[],
  messages: InputMessage[],
  replayed: Conversation['replayed'],
): Promise<void> {
  let inserted = 0;
  for (const reference of references) {
    const messageId = messageIdOf(reference.id);
    const row = messageId
      ? await db
          .selectFrom('chat_messages')
          .selectAll()
          .where('workspace_id', '=', workspaceId)
          .where('id', '=', messageId)
          .executeTakeFirst()
      : undefined;
    if (!row)
      throw new Problem('not_found', `No item ${reference.id} in this workspace.`, {
        errors: [{ pointer: '/input', detail: `item_reference ${reference.id} is not an item of a stored response` }],
      });
    if (replayed && row.thread_id === replayed.threadId && row.position <= replayed.through) continue;
    const message = referencedMessage(row);
    if (message) messages.splice(reference.index + inserted++, 0, message);
  }
}

/** Saves a finished response (`done`) where its conversation's placement says, with its input messages and output. */
export async function storeResponse(
  db: Kysely<Database>,
  workspaceId: string,
  conversation: Conversation & { placement: Placement },
  messages: InputMessage[],
  outcome: Outcome,
  done: ResponseObject,
  now: Date,
): Promise<void> {
  const { output: _output, ...stored } = done;
  await saveResponse(
    db,
    workspaceId,
    conversation.placement,
    conversation.expectedCount,
    messages,
    { items: outcome.items, usage: done.usage!, costUsd: outcome.costUsd, finishReason: outcome.finishReason },
    {
      id: done.id,
      workspace_id: workspaceId,
      previous_response_id: conversation.previousId,
      model: done.model,
      status: statusOf(outcome.finishReason).status,
      body: JSON.stringify(stored),
      created_at: iso(now),
    },
    { model: done.model, voiceId: done.voice_id, metadata: done.metadata },
    now,
  );
}

const savedCalls = (calls: EngineToolCall[] | null) =>
  calls && calls.length > 0 ? JSON.stringify(wireToolCalls(calls)) : null;

/**
 * Saves a response in one transaction: the thread (created, forked or locked and checked to be unchanged), its input
 * and output messages with their `chat.message.created` events, and its `chat_responses` row.
 */
async function saveResponse(
  db: Kysely<Database>,
  workspaceId: string,
  placement: Placement,
  expectedCount: number,
  messages: InputMessage[],
  output: { items: OutputItem[]; usage: Schemas['ResponseUsage']; costUsd: number; finishReason: FinishReason },
  row: Omit<Selectable<ChatResponsesTable>, 'thread_id' | 'input_position' | 'output_position' | 'last_position'>,
  meta: { model: string; voiceId: string | null; metadata: Schemas['Metadata'] },
  now: Date,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    let count = 0;
    const copies: MessageRow[] = [];
    if (placement.create) {
      const source = placement.fork
        ? await trx
            .selectFrom('chat_messages')
            .selectAll()
            .where('thread_id', '=', placement.fork.fromThreadId)
            .where('position', '<=', placement.fork.through)
            .orderBy('position')
            .execute()
        : [];
      const firstUser = [...source, ...messages].find((m) => m.role === 'user');
      await trx
        .insertInto('chat_threads')
        .values({
          id: placement.threadId,
          workspace_id: workspaceId,
          title: [...(firstUser?.content ?? '')].slice(0, 100).join('').trim(),
          model: meta.model,
          voice_id: meta.voiceId,
          message_count: 0,
          metadata: JSON.stringify(meta.metadata),
          created_at: iso(now),
          updated_at: iso(now),
        })
        .execute();
      for (const message of source)
        copies.push({ ...message, id: newId('msg', now), thread_id: placement.threadId, created_at: iso(now) });
      count = copies.length;
    } else {
      const thread = await forUpdate(
        threadsOf(trx, workspaceId).where('id', '=', placement.threadId),
        trx,
      ).executeTakeFirst();
      if (!thread) throw responseNotFound(row.previous_response_id ?? placement.threadId, '/previous_response_id');
      count = Number(thread.message_count);
      // Another request continued the same response meanwhile: this one would no longer follow it.
      if (count !== expectedCount) {
        throw new Problem(
          'conflict',
          `Response ${row.previous_response_id} was continued by another request at the same time; send this request again to continue from it (it will start a new thread).`,
        );
      }
    }
    const total = count + messages.length + output.items.length;
    if (total > THREAD_LIMIT) throw threadFull(placement.threadId, count);
    const inputs = messages.map((m) => ({
      id: newId('msg', now),
      role: m.role,
      content: m.content,
      tool_calls: savedCalls(m.toolCalls),
      tool_call_id: m.toolCallId,
      model: null,
      usage: null,
      cost_usd: null,
      finish_reason: null,
    }));
    // Each output item is one assistant message of the model; the turn's usage, cost and finish reason are on its last.
    const outputs = output.items.map((item, i) => {
      const last = i === output.items.length - 1;
      return {
        id: item.messageId,
        role: 'assistant' as const,
        content: item.kind === 'message' ? item.text : null,
        tool_calls: item.kind === 'call' ? savedCalls([item.call]) : null,
        tool_call_id: null,
        model: meta.model,
        // The thread's messages keep usage in the shape of chat completions (ChatMessage.usage).
        usage: last
          ? JSON.stringify({
              prompt_tokens: output.usage.input_tokens,
              completion_tokens: output.usage.output_tokens,
              total_tokens: output.usage.total_tokens,
              prompt_tokens_details: { cached_tokens: output.usage.input_tokens_details.cached_tokens },
            })
          : null,
        cost_usd: last ? output.costUsd : null,
        finish_reason: last ? output.finishReason : null,
      };
    });
    const fresh = [...inputs, ...outputs].map((message, i) => ({
      ...message,
      thread_id: placement.threadId,
      workspace_id: workspaceId,
      position: count + i,
      refusal: null,
      name: null,
      created_at: iso(now),
    }));
    const rows = [...copies, ...fresh];
    await trx.insertInto('chat_messages').values(rows).execute();
    await trx
      .updateTable('chat_threads')
      .set({ message_count: total, model: meta.model, voice_id: meta.voiceId, updated_at: iso(now) })
      .where('id', '=', placement.threadId)
      .execute();
    await trx
      .insertInto('chat_responses')
      .values({
        ...row,
        thread_id: placement.threadId,
        input_position: count,
        output_position: count + messages.length,
        last_position: total - 1,
      })
      .execute();
    for (const message of rows) {
      await recordEvent(
        trx,
        workspaceId,
        'chat.message.created',
        {
          thread_id: message.thread_id,
          message_id: message.id,
          role: message.role,
          content: message.content,
          model: meta.model,
          voice_id: meta.voiceId,
          tool_calls: message.tool_calls
            ? (JSON.parse(message.tool_calls) as Schemas['ChatCompletionMessageToolCall'][])
            : null,
          tool_call_id: message.tool_call_id,
        },
        now,
      );
    }
  });
}

/** The response object of a stored row: its body, and its output items read from the thread. */
export async function storedResponse(
  db: Kysely<Database>,
  row: Selectable<ChatResponsesTable>,
): Promise<ResponseObject> {
  const body = JSON.parse(row.body) as StoredBody;
  const outputs = await db
    .selectFrom('chat_messages')
    .selectAll()
    .where('thread_id', '=', row.thread_id)
    .where('position', '>=', row.output_position)
    .where('position', '<=', row.last_position)
    .orderBy('position')
    .execute();
  const status = row.status === 'incomplete' ? 'incomplete' : 'completed';
  return {
    ...body,
    output: outputs.map((m) => {
      const call = toolCallsOf(m)?.[0];
      return wireItem(
        call ? { kind: 'call', messageId: m.id, call } : { kind: 'message', messageId: m.id, text: m.content ?? '' },
        status,
      );
    }),
  };
}

/** An input item as listed: a message, a function call (a response saves one a message), or a function call's output. */
export function listedItem(message: MessageRow): ListedItem {
  const call = toolCallsOf(message)?.[0];
  if (call) return functionCallItem(message.id, call, 'completed') as ListedItem;
  if (message.role === 'tool') {
    return {
      id: itemIdOf({ id: message.id, role: 'tool', toolCalls: null }),
      type: 'function_call_output',
      call_id: message.tool_call_id ?? '',
      output: message.content ?? '',
      status: 'completed',
    };
  }
  const text = message.content ?? '';
  const content =
    message.role === 'assistant'
      ? [{ type: 'output_text' as const, text, annotations: [], logprobs: [] }]
      : [{ type: 'input_text' as const, text }];
  return { id: message.id, type: 'message', role: message.role, status: 'completed', content };
}

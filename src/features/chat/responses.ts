// OpenAI's Responses API (POST /v1/responses, GET and DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items)
// through the content engine. A stored response lives in a chat thread: its input items and output items are the
// thread's messages, and `chat_responses` keeps the rest of the response object and the positions of its messages,
// so a thread's retention and deletion cover its responses. `previous_response_id` replays the thread up to that
// response's output; continuing a response that is not the end of its thread forks: a new thread with a copy of the
// conversation up to it.
import type { JSONSchema7 } from '@ai-sdk/provider';
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers, ServerSentEvent } from '../../../generated/operations.ts';
import { byRequest } from '../../platform/audit.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { Problem, validationFailed } from '../../platform/problems.ts';
import { forUpdate } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';
import { recordEvent } from '../webhooks/record-event.ts';
import type { EngineMessage, FinishReason, GenerationRequest, TokenUsage } from '../engine/engine.ts';
import type { ChatMessagesTable, ChatResponsesTable } from './schema.ts';
import { replayedMessage, THREAD_LIMIT, threadFull, threadsOf } from './threads.ts';

type Schemas = components['schemas'];
type Request = Schemas['ResponseCreateRequest'];
type ResponseObject = Schemas['Response'];
type StreamEvent = Schemas['ResponseStreamEvent'];
type InputItem = Schemas['ResponseInputItem'];
type OutputMessage = Schemas['ResponseOutputMessage'];
type ListedItem = Schemas['ResponseItem'];
/** The response object without its output items: what `chat_responses.body` holds. */
type StoredBody = Omit<ResponseObject, 'output'>;

/** One message of the conversation, as saved in the thread. */
interface SavedMessage {
  role: ChatMessagesTable['role'];
  content: string;
}

function responseNotFound(id: string, pointer?: string): Problem {
  return new Problem('not_found', `No response ${id} in this workspace.`, pointer ? { errors: [{ pointer, detail: 'is not a stored response of this workspace' }] } : {});
}

/** The stored responses of one workspace: every response query starts here. */
function responsesOf(db: Kysely<Database> | Transaction<Database>, workspaceId: string) {
  return db.selectFrom('chat_responses').selectAll().where('workspace_id', '=', workspaceId);
}

function usageBody(usage: TokenUsage): Schemas['ResponseUsage'] {
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: usage.cachedInputTokens },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}

function textOfParts(content: Schemas['ResponseInputMessage']['content'], pointer: string): string {
  if (typeof content === 'string') return content;
  return content
    .map((part, i) => {
      if (part.type === 'input_image') {
        throw validationFailed([{ pointer: `${pointer}/content/${i}`, detail: 'image input is not supported yet; send text parts' }]);
      }
      return part.text;
    })
    .join('');
}

/** The request's input as messages to save; what the engine cannot take yet is refused with the item's pointer. */
function inputMessages(input: Request['input']): { messages: SavedMessage[]; references: { id: string; index: number }[] } {
  if (typeof input === 'string') return { messages: [{ role: 'user', content: input }], references: [] };
  const messages: SavedMessage[] = [];
  const references: { id: string; index: number }[] = [];
  input.forEach((item: InputItem, i) => {
    const pointer = `/input/${i}`;
    if (!('role' in item)) {
      if (item.type === 'item_reference') {
        references.push({ id: item.id, index: messages.length });
        return;
      }
      throw validationFailed([{ pointer: `${pointer}/type`, detail: `${item.type} items need function tools, which this server does not offer yet` }]);
    }
    messages.push({ role: item.role, content: textOfParts(item.content, pointer) });
  });
  return { messages, references };
}

/** An input item's message as the engine takes it (a request's items have no tool role: function tools are refused). */
function engineMessage(message: { role: ChatMessagesTable['role']; content: string | null }): EngineMessage | null {
  if (message.content === null || message.role === 'tool') return null;
  return { role: message.role === 'developer' ? 'system' : message.role, content: message.content };
}

function textFormat(body: Request, capabilities: readonly string[], model: string): GenerationRequest['responseFormat'] {
  const format = body.text?.format;
  if (!format || format.type === 'text') return undefined;
  const needed = format.type === 'json_object' ? 'json_mode' : 'json_schema';
  if (!capabilities.includes(needed)) {
    throw validationFailed([{ pointer: '/text/format', detail: `${format.type} is not supported by ${model} (it lacks the ${needed} capability)` }]);
  }
  if (format.type !== 'json_schema') return { type: 'json' };
  return { type: 'json', name: format.name, description: format.description ?? undefined, schema: format.schema as JSONSchema7 };
}

function outputMessage(id: string, text: string, status: OutputMessage['status']): OutputMessage {
  return { id, type: 'message', role: 'assistant', status, content: [{ type: 'output_text', text, annotations: [] }] };
}

function statusOf(finishReason: FinishReason): { status: 'completed' | 'incomplete'; incomplete: ResponseObject['incomplete_details'] } {
  if (finishReason === 'length') return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' } };
  if (finishReason === 'content_filter') return { status: 'incomplete', incomplete: { reason: 'content_filter' } };
  return { status: 'completed', incomplete: null };
}

/** Where the new response is saved: the thread it continues, a fork of it, or a new thread. */
interface Placement {
  threadId: string;
  /** Copy the messages of this thread up to this position into the new thread first (a fork). */
  fork: { fromThreadId: string; through: number } | null;
  /** The thread does not exist yet (a new conversation or a fork). */
  create: boolean;
}

interface Outcome {
  text: string;
  finishReason: FinishReason;
  usage: TokenUsage;
  costUsd: number;
}

/**
 * Saves a response in one transaction: the thread (created, forked or locked and checked to be unchanged), its input
 * and output messages with their `chat.message.created` events, and its `chat_responses` row.
 */
async function saveResponse(
  db: Kysely<Database>,
  workspaceId: string,
  placement: Placement,
  expectedCount: number,
  messages: SavedMessage[],
  output: { id: string; text: string; usage: Schemas['ResponseUsage']; costUsd: number; finishReason: FinishReason },
  row: Omit<Selectable<ChatResponsesTable>, 'thread_id' | 'input_position' | 'output_position' | 'last_position'>,
  meta: { model: string; voiceId: string | null; metadata: Schemas['Metadata'] },
  now: Date,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    let count = 0;
    const copies: Selectable<ChatMessagesTable>[] = [];
    if (placement.create) {
      const source = placement.fork ? await trx.selectFrom('chat_messages').selectAll().where('thread_id', '=', placement.fork.fromThreadId).where('position', '<=', placement.fork.through).orderBy('position').execute() : [];
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
      for (const message of source) copies.push({ ...message, id: newId('msg', now), thread_id: placement.threadId, created_at: iso(now) });
      count = copies.length;
    } else {
      const thread = await forUpdate(threadsOf(trx, workspaceId).where('id', '=', placement.threadId), trx).executeTakeFirst();
      if (!thread) throw responseNotFound(row.previous_response_id ?? placement.threadId, '/previous_response_id');
      count = Number(thread.message_count);
      // Another request continued the same response meanwhile: this one would no longer follow it.
      if (count !== expectedCount) {
        throw new Problem('conflict', `Response ${row.previous_response_id} was continued by another request at the same time; send this request again to continue from it (it will start a new thread).`);
      }
    }
    const total = count + messages.length + 1;
    if (total > THREAD_LIMIT) throw threadFull(placement.threadId, count);
    const assistant = {
      role: 'assistant' as const,
      content: output.text,
      model: meta.model,
      // The thread's messages keep usage in the shape of chat completions (ChatMessage.usage).
      usage: JSON.stringify({
        prompt_tokens: output.usage.input_tokens,
        completion_tokens: output.usage.output_tokens,
        total_tokens: output.usage.total_tokens,
        prompt_tokens_details: { cached_tokens: output.usage.input_tokens_details.cached_tokens },
      }),
      cost_usd: output.costUsd,
      finish_reason: output.finishReason,
    };
    const fresh = [...messages.map((m) => ({ ...m, model: null, usage: null, cost_usd: null, finish_reason: null })), assistant].map((message, i) => ({
      ...message,
      id: i === messages.length ? output.id : newId('msg', now),
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
      .values({ ...row, thread_id: placement.threadId, input_position: count, output_position: count + messages.length, last_position: total - 1 })
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
          // Copies of a forked thread keep the calls and results of chat completions.
          tool_calls: 'tool_calls' in message && message.tool_calls ? (JSON.parse(message.tool_calls) as Schemas['ChatCompletionMessageToolCall'][]) : null,
          tool_call_id: ('tool_call_id' in message ? message.tool_call_id : null) ?? null,
        },
        now,
      );
    }
  });
}

/** The response object of a stored row: its body, and its output items read from the thread. */
async function storedResponse(db: Kysely<Database>, row: Selectable<ChatResponsesTable>): Promise<ResponseObject> {
  const body = JSON.parse(row.body) as StoredBody;
  const outputs = await db
    .selectFrom('chat_messages')
    .selectAll()
    .where('thread_id', '=', row.thread_id)
    .where('position', '>=', row.output_position)
    .where('position', '<=', row.last_position)
    .orderBy('position')
    .execute();
  const itemStatus = row.status === 'incomplete' ? 'incomplete' : 'completed';
  return { ...body, output: outputs.map((m) => outputMessage(m.id, m.content ?? '', itemStatus)) };
}

function listedItem(message: Selectable<ChatMessagesTable>): ListedItem {
  const text = message.content ?? '';
  const content = message.role === 'assistant' ? [{ type: 'output_text' as const, text, annotations: [] }] : [{ type: 'input_text' as const, text }];
  // A response's own items are never tool messages (function_call_output items are refused).
  return { id: message.id, type: 'message', role: message.role as Exclude<ChatMessagesTable['role'], 'tool'>, status: 'completed', content };
}

export const responseHandlers = {
  async createResponse(request, context) {
    const body = request.body;
    const engine = context.platform.services.engine;
    const { db } = context.platform;
    const workspaceId = context.caller.workspace.id;
    const model = engine.model(body.model);
    const store = body.store ?? true;

    if ((body.tools?.length ?? 0) > 0 && body.tool_choice !== 'none') {
      throw validationFailed([{ pointer: '/tools', detail: 'function tools are not offered by this server yet' }]);
    }
    const { messages, references } = inputMessages(body.input);

    // The conversation so far: the thread up to the previous response's output.
    const history: EngineMessage[] = [];
    let placement: Placement | null = null;
    let expectedCount = 0;
    const previousId = body.previous_response_id ?? null;
    let replayed: { threadId: string; through: number } | null = null;
    if (previousId) {
      const previous = await responsesOf(db, workspaceId).where('id', '=', previousId).executeTakeFirst();
      if (!previous) throw responseNotFound(previousId, '/previous_response_id');
      const thread = await threadsOf(db, workspaceId).where('id', '=', previous.thread_id).executeTakeFirstOrThrow();
      const rows = await db.selectFrom('chat_messages').selectAll().where('thread_id', '=', previous.thread_id).where('position', '<=', previous.last_position).orderBy('position').execute();
      for (const row of rows) {
        // A thread's rows, tool calls and results of chat completions included.
        const message = replayedMessage(row);
        if (message) history.push(message);
      }
      replayed = { threadId: previous.thread_id, through: previous.last_position };
      const atEnd = Number(thread.message_count) === previous.last_position + 1;
      expectedCount = Number(thread.message_count);
      if (store) {
        placement = atEnd ? { threadId: thread.id, fork: null, create: false } : { threadId: newId('thr', context.now), fork: { fromThreadId: thread.id, through: previous.last_position }, create: true };
      }
      if (previous.last_position + 1 + messages.length + 1 > THREAD_LIMIT) throw threadFull(thread.id, previous.last_position + 1);
    } else if (store) {
      placement = { threadId: newId('thr', context.now), fork: null, create: true };
    }

    // Items named by reference: output messages of stored responses, unless the replayed conversation holds them.
    for (const [offset, reference] of references.entries()) {
      const row = await db.selectFrom('chat_messages').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', reference.id).executeTakeFirst();
      if (!row) throw new Problem('not_found', `No item ${reference.id} in this workspace.`, { errors: [{ pointer: '/input', detail: `item_reference ${reference.id} is not an item of a stored response` }] });
      if (replayed && row.thread_id === replayed.threadId && row.position <= replayed.through) continue;
      if (row.content !== null) messages.splice(reference.index + offset, 0, { role: row.role, content: row.content });
    }

    const voiceId = body.voice_id ?? null;
    const instructions = body.instructions ?? null;
    const generation: GenerationRequest = {
      workspaceId,
      apiKeyId: context.caller.apiKey.id,
      userId: context.caller.userId,
      origin: byRequest(context),
      feature: 'chat',
      model: model.id,
      messages: [...(instructions ? [{ role: 'system' as const, content: instructions }] : []), ...history, ...messages.map((m) => engineMessage(m)!)],
      voiceId,
      maxOutputTokens: body.max_output_tokens ?? null,
      temperature: body.temperature,
      topP: body.top_p,
      responseFormat: textFormat(body, model.capabilities, model.id),
      reasoningEffort: model.capabilities.includes('reasoning') ? (body.reasoning?.effort ?? null) : null,
      signal: context.signal,
      now: context.now,
    };

    const id = newId('resp', context.now);
    const outputId = newId('msg', context.now);
    const metadata = body.metadata ?? {};
    const base: ResponseObject = {
      id,
      object: 'response',
      created_at: Math.floor(context.now.getTime() / 1000),
      status: 'in_progress',
      model: model.id,
      output: [],
      usage: null,
      error: null,
      incomplete_details: null,
      instructions,
      metadata,
      previous_response_id: previousId,
      tools: body.tools ?? [],
      tool_choice: body.tool_choice ?? 'auto',
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      text: { format: body.text?.format ?? { type: 'text' } },
      temperature: body.temperature ?? null,
      top_p: body.top_p ?? null,
      max_output_tokens: body.max_output_tokens ?? null,
      reasoning: body.reasoning ?? null,
      background: false,
      truncation: 'disabled',
      store,
      user: body.user ?? null,
      thread_id: null,
      voice_id: voiceId,
      cost_usd: null,
    };

    /** The finished response object, saved when stored. */
    const finish = async (outcome: Outcome): Promise<ResponseObject> => {
      const { status, incomplete } = statusOf(outcome.finishReason);
      const usage = usageBody(outcome.usage);
      const done: ResponseObject = {
        ...base,
        status,
        incomplete_details: incomplete,
        output: [outputMessage(outputId, outcome.text, status === 'completed' ? 'completed' : 'incomplete')],
        usage,
        cost_usd: outcome.costUsd,
        thread_id: placement?.threadId ?? null,
      };
      if (placement) {
        const { output: _output, ...stored } = done;
        await saveResponse(
          db,
          workspaceId,
          placement,
          expectedCount,
          messages,
          { id: outputId, text: outcome.text, usage, costUsd: outcome.costUsd, finishReason: outcome.finishReason },
          { id, workspace_id: workspaceId, previous_response_id: previousId, model: model.id, status, body: JSON.stringify(stored), created_at: iso(context.now) },
          { model: model.id, voiceId, metadata },
          context.now,
        );
      }
      return done;
    };

    if (!body.stream) {
      const result = await engine.generate(generation);
      const first = result.choices[0]!;
      const done = await finish({ text: first.text, finishReason: first.finishReason, usage: result.usage, costUsd: result.costUsd });
      return { status: 200, contentType: 'application/json', body: done };
    }

    const events = await engine.stream(generation);
    return {
      status: 200,
      contentType: 'text/event-stream',
      events: (async function* (): AsyncGenerator<ServerSentEvent<StreamEvent>> {
        let sequence = 0;
        const send = (event: DistributiveOmit<StreamEvent, 'sequence_number'>): ServerSentEvent<StreamEvent> => ({ event: event.type, data: { ...event, sequence_number: sequence++ } as StreamEvent });
        // The first engine event is awaited before anything is sent, so that a refusal before the first token (a
        // provider's rate limit) is still an ordinary problem response with its status.
        const iterator = events[Symbol.asyncIterator]();
        let step = await iterator.next();
        yield send({ type: 'response.created', response: base });
        yield send({ type: 'response.in_progress', response: base });
        const at = { item_id: outputId, output_index: 0, content_index: 0 };
        yield send({ type: 'response.output_item.added', output_index: 0, item: { ...outputMessage(outputId, '', 'in_progress'), content: [] } });
        yield send({ type: 'response.content_part.added', ...at, part: { type: 'output_text', text: '', annotations: [] } });
        let text = '';
        let finishReason: FinishReason = 'stop';
        let usage: TokenUsage | null = null;
        let costUsd = 0;
        try {
          for (; !step.done; step = await iterator.next()) {
            const event = step.value;
            if (event.type === 'text') {
              text += event.text;
              yield send({ type: 'response.output_text.delta', ...at, delta: event.text, logprobs: [] });
            } else if (event.type === 'finish') finishReason = event.finishReason;
            else if (event.type === 'usage') ({ usage, costUsd } = event);
          }
          // A generation its client abandoned ends without usage: nothing more is sent or saved.
          if (!usage) return;
          const done = await finish({ text, finishReason, usage, costUsd });
          const item = done.output[0] as OutputMessage;
          yield send({ type: 'response.output_text.done', ...at, text, logprobs: [] });
          yield send({ type: 'response.content_part.done', ...at, part: item.content[0]! });
          yield send({ type: 'response.output_item.done', output_index: 0, item });
          yield send({ type: done.status === 'completed' ? 'response.completed' : 'response.incomplete', response: done });
        } catch (error) {
          if (context.signal.aborted) return;
          const problem = error instanceof Problem ? error : new Problem('internal_error', `The response failed. Quote request id ${context.requestId} when contacting support.`);
          if (!(error instanceof Problem)) context.platform.logger.error({ err: error, request_id: context.requestId }, 'a streamed response failed');
          yield send({ type: 'response.failed', response: { ...base, status: 'failed', error: { code: problem.code, message: problem.message.slice(0, 2000) } } });
        }
      })(),
    };
  },

  async getResponse(request, context) {
    const { db } = context.platform;
    const row = await responsesOf(db, context.caller.workspace.id).where('id', '=', request.path.id).executeTakeFirst();
    if (!row) throw responseNotFound(request.path.id);
    return { status: 200, contentType: 'application/json', body: await storedResponse(db, row) };
  },

  async deleteResponse(request, context) {
    const deleted = await context.platform.db.deleteFrom('chat_responses').where('workspace_id', '=', context.caller.workspace.id).where('id', '=', request.path.id).executeTakeFirst();
    if (Number(deleted.numDeletedRows) === 0) throw responseNotFound(request.path.id);
    return { status: 200, contentType: 'application/json', body: { id: request.path.id, object: 'response', deleted: true } };
  },

  async listResponseInputItems(request, context) {
    const { db } = context.platform;
    const row = await responsesOf(db, context.caller.workspace.id).where('id', '=', request.path.id).executeTakeFirst();
    if (!row) throw responseNotFound(request.path.id);
    const limit = request.query.limit ?? 20;
    const ascending = request.query.order === 'asc';
    let query = db.selectFrom('chat_messages').selectAll().where('thread_id', '=', row.thread_id).where('position', '>=', row.input_position).where('position', '<', row.output_position);
    if (request.query.after !== undefined) {
      const after = await query.where('id', '=', request.query.after).executeTakeFirst();
      if (!after) throw validationFailed([{ pointer: '/after', detail: `${request.query.after} is not an input item of ${row.id}` }]);
      query = query.where('position', ascending ? '>' : '<', after.position);
    }
    const rows = await query
      .orderBy('position', ascending ? 'asc' : 'desc')
      .limit(limit + 1)
      .execute();
    const data = rows.slice(0, limit).map(listedItem);
    return {
      status: 200,
      contentType: 'application/json',
      body: { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit },
    };
  },
} satisfies Pick<Handlers<RequestContext>, 'createResponse' | 'getResponse' | 'deleteResponse' | 'listResponseInputItems'>;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

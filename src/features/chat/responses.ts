// OpenAI's Responses API (POST /v1/responses, GET and DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items)
// through the content engine. A stored response lives in a chat thread: its input items and output items are the
// thread's messages, and `chat_responses` keeps the rest of the response object and the positions of its messages,
// so a thread's retention and deletion cover its responses. `previous_response_id` replays the thread up to that
// response's output; continuing a response that is not the end of its thread forks: a new thread with a copy of the
// conversation up to it. Each item is one thread message: a `function_call` an assistant message with its one tool call
// (`fc_` and the message's ULID), a `function_call_output` a `tool` message (`fco_…`); consecutive assistant items are
// one model turn, merged into one engine message when sent to the model.
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
import {
  type EngineContentPart,
  type EngineMessage,
  type EngineTool,
  type EngineToolCall,
  type EngineToolChoice,
  type FinishReason,
  type GenerationRequest,
  type ModelTried,
  placed,
  type RefusalFields,
  type TokenUsage,
} from '../engine/index.ts';
import { projectFallbacks } from '../projects/index.ts';
import { recordEvent } from '../webhooks/index.ts';
import { checkImages, type ImagePart, readImages } from './request-images.ts';
import { requestModel } from './request-model.ts';
import { checkChosenTool, checkToolNames } from './request-tools.ts';
import type { ChatMessagesTable, ChatResponsesTable } from './schema.ts';
import { imagePlaceholder, replayedMessage, THREAD_LIMIT, threadFull, threadsOf, wireToolCalls } from './threads.ts';

type Schemas = components['schemas'];
type Request = Schemas['ResponseCreateRequest'];
type ResponseObject = Schemas['Response'];
type StreamEvent = Schemas['ResponseStreamEvent'];
type InputItem = Schemas['ResponseInputItem'];
type OutputMessage = Schemas['ResponseOutputMessage'];
type FunctionCallItem = Schemas['ResponseFunctionCall'];
type ListedItem = Schemas['ResponseItem'];
type MessageRow = Selectable<ChatMessagesTable>;
/** The response object without its output items: what `chat_responses.body` holds. */
type StoredBody = Omit<ResponseObject, 'output'>;

/** One input item: as its thread message keeps it, and as the engine takes it. */
interface InputMessage {
  role: ChatMessagesTable['role'];
  /** Text parts joined, images as placeholders; null for a function call. */
  content: string | null;
  toolCalls: EngineToolCall[] | null;
  toolCallId: string | null;
  engine: EngineMessage;
  /** The request's item it came from, for problems; null for an item named by reference. */
  pointer: string | null;
}

/** An output item of the model: its thread message's id and what it holds. */
type OutputItem =
  | { kind: 'message'; messageId: string; text: string }
  | { kind: 'call'; messageId: string; call: EngineToolCall };

/** This API's fields of what the engine may refuse: the output budget and the prompt (refusal.ts). */
const RESPONSE_FIELDS: RefusalFields = {
  output_budget: 'max_output_tokens',
  prompt: 'input',
  logprobs: 'top_logprobs',
};

const place = (error: unknown): never => {
  throw placed(error, RESPONSE_FIELDS);
};

function responseNotFound(id: string, pointer?: string): Problem {
  return new Problem(
    'not_found',
    `No response ${id} in this workspace.`,
    pointer ? { errors: [{ pointer, detail: 'is not a stored response of this workspace' }] } : {},
  );
}

/** The stored responses of one workspace: every response query starts here. */
function responsesOf(db: Kysely<Database> | Transaction<Database>, workspaceId: string) {
  return db.selectFrom('chat_responses').selectAll().where('workspace_id', '=', workspaceId);
}

function usageBody(usage: TokenUsage): Schemas['ResponseUsage'] {
  return {
    input_tokens: usage.inputTokens,
    // The engine does not count cache writes; OpenAI's schema requires the field.
    input_tokens_details: { cached_tokens: usage.cachedInputTokens, cache_write_tokens: 0 },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}

const ITEM_ID = /^(?:msg|fc|fco)_([0-9A-HJKMNP-TV-Z]{26})$/;

/** The item id of a thread message: `fc_…` for a function call, `fco_…` for its output, else the message's `msg_…`. */
function itemIdOf(message: { id: string; role: ChatMessagesTable['role']; toolCalls: unknown }): string {
  const ulid = message.id.slice('msg_'.length);
  if (message.role === 'tool') return `fco_${ulid}`;
  return message.role === 'assistant' && message.toolCalls ? `fc_${ulid}` : message.id;
}

/** The thread message of an item id, or null for an id of no item this server makes. */
function messageIdOf(itemId: string): string | null {
  const match = ITEM_ID.exec(itemId);
  return match ? `msg_${match[1]}` : null;
}

function toolCallsOf(row: MessageRow): EngineToolCall[] | null {
  if (row.tool_calls === null) return null;
  return (JSON.parse(row.tool_calls) as Schemas['ChatCompletionMessageToolCall'][]).map((call) => ({
    id: call.id,
    name: call.function.name,
    arguments: call.function.arguments,
  }));
}

function textOfParts(parts: Exclude<Schemas['ResponseInputMessage']['content'], string>): string {
  return parts.map((part) => (part.type === 'input_image' ? '' : part.text)).join('');
}

/** The request's image parts, where they are; one in a message not the user's is misplaced. */
function* imageParts(input: Request['input']): Generator<ImagePart> {
  if (typeof input === 'string') return;
  for (const [i, item] of input.entries()) {
    if (!('role' in item) || typeof item.content === 'string') continue;
    for (const [j, part] of item.content.entries()) {
      if (part.type !== 'input_image') continue;
      yield {
        pointer: `/input/${i}/content/${j}`,
        url: part.image_url,
        detail: part.detail ?? undefined,
        ...(item.role !== 'user'
          ? { misplaced: `is an image in a ${item.role} message; images go in user messages` }
          : {}),
      };
    }
  }
}

/** One input item as a thread message and an engine message, its images read (`images`, by pointer). */
function inputMessage(
  item: Exclude<InputItem, Schemas['ResponseItemReference']>,
  pointer: string,
  images: Map<string, EngineContentPart>,
): InputMessage {
  const base = { toolCalls: null, toolCallId: null, pointer };
  if (item.type === 'function_call') {
    const call = { id: item.call_id, name: item.name, arguments: item.arguments };
    return {
      ...base,
      role: 'assistant',
      content: null,
      toolCalls: [call],
      engine: { role: 'assistant', content: '', toolCalls: [call] },
    };
  }
  if (item.type === 'function_call_output') {
    return {
      ...base,
      role: 'tool',
      content: item.output,
      toolCallId: item.call_id,
      engine: { role: 'tool', toolCallId: item.call_id, content: item.output },
    };
  }
  const message = item as Schemas['ResponseInputMessage'];
  if (typeof message.content === 'string') {
    const { content } = message;
    return {
      ...base,
      role: message.role,
      content,
      engine:
        message.role === 'user' || message.role === 'assistant'
          ? { role: message.role, content }
          : { role: 'system', content },
    };
  }
  const parts = message.content;
  if (message.role !== 'user') {
    const content = textOfParts(parts);
    return {
      ...base,
      role: message.role,
      content,
      engine: message.role === 'assistant' ? { role: 'assistant', content } : { role: 'system', content },
    };
  }
  return {
    ...base,
    role: 'user',
    content: parts.map((part) => (part.type === 'input_image' ? imagePlaceholder(part.image_url) : part.text)).join(''),
    engine: {
      role: 'user',
      content: parts.map((part, j) =>
        part.type === 'input_image' ? images.get(`${pointer}/content/${j}`)! : { type: 'text', text: part.text },
      ),
    },
  };
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

/** Consecutive assistant messages are one model turn (its text and its calls, saved one item a message): merged. */
function mergeTurns(messages: EngineMessage[]): EngineMessage[] {
  const merged: EngineMessage[] = [];
  for (const message of messages) {
    const last = merged.at(-1);
    if (message.role !== 'assistant' || last?.role !== 'assistant') {
      merged.push(message);
      continue;
    }
    const calls = [...(last.toolCalls ?? []), ...(message.toolCalls ?? [])];
    const content = [last.content, message.content].filter((text) => text !== '').join('\n\n');
    merged[merged.length - 1] = { role: 'assistant', content, ...(calls.length > 0 ? { toolCalls: calls } : {}) };
  }
  return merged;
}

/** What the schema cannot say about tools: unique names, and a tool_choice that needs tools names one of them. */
function checkTools(body: Request): void {
  const names = checkToolNames(
    (body.tools ?? []).map((tool) => tool.name),
    (i) => `/tools/${i}/name`,
  );
  const choice = body.tool_choice;
  if (choice === 'required' && names.size === 0)
    throw validationFailed([{ pointer: '/tool_choice', detail: 'required needs tools' }]);
  if (typeof choice === 'object' && choice !== null) checkChosenTool(choice.name, names, '/tool_choice/name');
}

function toolsOf(tools: Request['tools']): EngineTool[] | undefined {
  if (!tools || tools.length === 0) return undefined;
  return tools.map((tool) => ({
    name: tool.name,
    ...(tool.description != null ? { description: tool.description } : {}),
    parameters: (tool.parameters ?? { type: 'object', properties: {} }) as JSONSchema7,
    ...(tool.strict != null ? { strict: tool.strict } : {}),
  }));
}

function toolChoiceOf(choice: Request['tool_choice']): EngineToolChoice | undefined {
  if (choice == null) return undefined;
  return typeof choice === 'string' ? choice : { name: choice.name };
}

/** A function_call_output must answer a call made earlier in the conversation (replayed, referenced or in the input). */
function checkToolOutputs(history: EngineMessage[], messages: InputMessage[]): void {
  const known = new Set<string>();
  for (const message of history)
    if (message.role === 'assistant') for (const call of message.toolCalls ?? []) known.add(call.id);
  for (const message of messages) {
    for (const call of message.toolCalls ?? []) known.add(call.id);
    if (message.role === 'tool' && !known.has(message.toolCallId ?? '')) {
      throw validationFailed([
        {
          pointer: message.pointer ? `${message.pointer}/call_id` : '/input',
          detail: `${message.toolCallId} is not the call_id of a function_call earlier in the conversation`,
        },
      ]);
    }
  }
}

function textFormat(
  body: Request,
  capabilities: readonly string[],
  model: string,
): GenerationRequest['responseFormat'] {
  const format = body.text?.format;
  if (!format || format.type === 'text') return undefined;
  const needed = format.type === 'json_object' ? 'json_mode' : 'json_schema';
  if (!capabilities.includes(needed)) {
    throw validationFailed([
      {
        pointer: '/text/format',
        detail: `${format.type} is not supported by ${model} (it lacks the ${needed} capability)`,
      },
    ]);
  }
  if (format.type !== 'json_schema') return { type: 'json' };
  return {
    type: 'json',
    name: format.name,
    description: format.description ?? undefined,
    schema: format.schema as JSONSchema7,
  };
}

function outputMessage(id: string, text: string, status: OutputMessage['status']): OutputMessage {
  return {
    id,
    type: 'message',
    role: 'assistant',
    status,
    content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
  };
}

function functionCallItem(
  messageId: string,
  call: EngineToolCall,
  status: 'in_progress' | 'completed',
): FunctionCallItem {
  return {
    id: itemIdOf({ id: messageId, role: 'assistant', toolCalls: [call] }),
    type: 'function_call',
    call_id: call.id,
    name: call.name,
    arguments: call.arguments,
    status,
  };
}

/** The wire item of an output item; a message's status follows the response's (cut text is incomplete), a call is whole. */
function wireItem(item: OutputItem, status: 'completed' | 'incomplete'): Schemas['ResponseOutputItem'] {
  return item.kind === 'message'
    ? outputMessage(item.messageId, item.text, status)
    : functionCallItem(item.messageId, item.call, 'completed');
}

/** The output items of a generated answer: its text (when it wrote some, or called nothing), then its calls. */
function outputItemsOf(text: string, calls: EngineToolCall[], now: Date): OutputItem[] {
  return [
    ...(text !== '' || calls.length === 0 ? [{ kind: 'message' as const, messageId: newId('msg', now), text }] : []),
    ...calls.map((call) => ({ kind: 'call' as const, messageId: newId('msg', now), call })),
  ];
}

function statusOf(finishReason: FinishReason): {
  status: 'completed' | 'incomplete';
  incomplete: ResponseObject['incomplete_details'];
} {
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
  items: OutputItem[];
  finishReason: FinishReason;
  usage: TokenUsage;
  costUsd: number;
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
function listedItem(message: MessageRow): ListedItem {
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

export const responseHandlers = {
  async createResponse(request, context) {
    const body = request.body;
    const engine = context.platform.services.engine;
    const { db } = context.platform;
    const workspaceId = context.caller.workspace.id;
    const model = requestModel(engine, body);
    const store = body.store ?? true;

    checkTools(body);
    const found = checkImages(imageParts(body.input), model);
    const images = await readImages(found, body.project_id ?? null, context);
    const messages: InputMessage[] = [];
    /** The item_references of the input, each with the position of the messages it goes before. */
    const references: { id: string; index: number }[] = [];
    if (typeof body.input === 'string')
      messages.push(inputMessage({ role: 'user', content: body.input }, '/input', images));
    else {
      body.input.forEach((item, i) => {
        if (item.type === 'item_reference') references.push({ id: item.id, index: messages.length });
        else
          messages.push(
            inputMessage(item as Exclude<InputItem, Schemas['ResponseItemReference']>, `/input/${i}`, images),
          );
      });
    }

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
      const rows = await db
        .selectFrom('chat_messages')
        .selectAll()
        .where('thread_id', '=', previous.thread_id)
        .where('position', '<=', previous.last_position)
        .orderBy('position')
        .execute();
      for (const row of rows) {
        // A thread's rows, tool calls and results of chat completions included.
        const message = replayedMessage(row);
        if (message) history.push(message);
      }
      replayed = { threadId: previous.thread_id, through: previous.last_position };
      const atEnd = Number(thread.message_count) === previous.last_position + 1;
      expectedCount = Number(thread.message_count);
      if (store) {
        placement = atEnd
          ? { threadId: thread.id, fork: null, create: false }
          : {
              threadId: newId('thr', context.now),
              fork: { fromThreadId: thread.id, through: previous.last_position },
              create: true,
            };
      }
      if (previous.last_position + 1 + messages.length + 1 > THREAD_LIMIT)
        throw threadFull(thread.id, previous.last_position + 1);
    } else if (store) {
      placement = { threadId: newId('thr', context.now), fork: null, create: true };
    }

    // Items named by reference: items of stored responses, unless the replayed conversation holds them.
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
    checkToolOutputs(history, messages);

    const voiceId = body.voice_id ?? null;
    const instructions = body.instructions ?? null;
    const projectId = body.project_id ?? null;
    // The project's fallback models when the request names none.
    const projectDefaults = projectId ? await projectFallbacks(db, workspaceId, projectId) : [];
    const fallbackModels = body.models ?? (projectDefaults.length > 0 ? projectDefaults : undefined);
    const generation: GenerationRequest = {
      workspaceId,
      apiKeyId: context.caller.apiKey.id,
      userId: context.caller.userId,
      origin: byRequest(context),
      feature: 'chat',
      model: model.id,
      ...(fallbackModels ? { fallbackModels, fallbackModelsDefault: !body.models } : {}),
      projectId,
      messages: mergeTurns([
        ...(instructions ? [{ role: 'system' as const, content: instructions }] : []),
        ...history,
        ...messages.map((m) => m.engine),
      ]),
      voiceId,
      maxOutputTokens: body.max_output_tokens ?? null,
      temperature: body.temperature,
      topP: body.top_p,
      responseFormat: textFormat(body, model.capabilities, model.id),
      reasoningEffort: model.capabilities.includes('reasoning') ? (body.reasoning?.effort ?? null) : null,
      tools: toolsOf(body.tools),
      toolChoice: toolChoiceOf(body.tool_choice),
      parallelToolCalls: body.parallel_tool_calls ?? true,
      signal: context.signal,
      now: context.now,
    };

    const id = newId('resp', context.now);
    const metadata = body.metadata ?? {};
    // `let`: with fallback models, the engine's first event names the model that answered (answeredBy).
    let base: ResponseObject = {
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
        output: outcome.items.map((item) => wireItem(item, status)),
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
          { items: outcome.items, usage, costUsd: outcome.costUsd, finishReason: outcome.finishReason },
          {
            id,
            workspace_id: workspaceId,
            previous_response_id: previousId,
            model: done.model,
            status,
            body: JSON.stringify(stored),
            created_at: iso(context.now),
          },
          { model: done.model, voiceId, metadata },
          context.now,
        );
      }
      return done;
    };

    /** The response as answered by `model`, after the models tried before it (only with fallback models). */
    const answeredBy = (answering: string, tried: ModelTried[]) => {
      base = { ...base, model: answering, models_tried: tried };
    };

    if (!body.stream) {
      const result = await engine.generate(generation, { whole: true }).catch(place);
      if (result.modelsTried) answeredBy(result.model.id, result.modelsTried);
      const first = result.choices[0]!;
      const done = await finish({
        items: outputItemsOf(first.text, first.toolCalls, context.now),
        finishReason: first.finishReason,
        usage: result.usage,
        costUsd: result.costUsd,
      });
      return { status: 200, contentType: 'application/json', body: done };
    }

    const events = await engine.stream(generation).catch(place);
    return {
      status: 200,
      contentType: 'text/event-stream',
      events: (async function* (): AsyncGenerator<ServerSentEvent<StreamEvent>> {
        let sequence = 0;
        const send = (event: DistributiveOmit<StreamEvent, 'sequence_number'>): ServerSentEvent<StreamEvent> => ({
          event: event.type,
          data: { ...event, sequence_number: sequence++ } as StreamEvent,
        });
        // The first engine event is awaited before anything is sent, so that a refusal before the first token (a
        // provider's rate limit) is still an ordinary problem response with its status.
        const iterator = events[Symbol.asyncIterator]();
        // Closed whatever happens to this stream (a client gone while a write waits): the engine then ends the call and
        // records its usage.
        try {
          let step = await iterator.next().catch(place);
          if (!step.done && step.value.type === 'model') answeredBy(step.value.model.id, step.value.tried);
          yield send({ type: 'response.created', response: base });
          yield send({ type: 'response.in_progress', response: base });
          // The output items in the order the model wrote them, each whole before the next begins, as OpenAI streams them.
          const items: OutputItem[] = [];
          type Writing = { index: number; item: Extract<OutputItem, { kind: 'message' }> };
          /** The message item being written, if any (`as`: it is set inside the generators below). */
          let writing = null as Writing | null;
          /** The engine's call index → its item's position in `items`. */
          const calls = new Map<number, number>();
          const openMessage = function* (): Generator<ServerSentEvent<StreamEvent>, Writing> {
            const item = { kind: 'message' as const, messageId: newId('msg', context.now), text: '' };
            const opened = { index: items.push(item) - 1, item };
            writing = opened;
            yield send({
              type: 'response.output_item.added',
              output_index: opened.index,
              item: { ...outputMessage(item.messageId, '', 'in_progress'), content: [] },
            });
            yield send({
              type: 'response.content_part.added',
              item_id: item.messageId,
              output_index: opened.index,
              content_index: 0,
              part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
            });
            return opened;
          };
          const closeMessage = function* (status: 'completed' | 'incomplete') {
            if (!writing) return;
            const { index, item } = writing;
            const at = { item_id: item.messageId, output_index: index, content_index: 0 };
            const done = outputMessage(item.messageId, item.text, status);
            yield send({ type: 'response.output_text.done', ...at, text: item.text, logprobs: [] });
            yield send({ type: 'response.content_part.done', ...at, part: done.content[0]! });
            yield send({ type: 'response.output_item.done', output_index: index, item: done });
            writing = null;
          };
          let finishReason: FinishReason = 'stop';
          let usage: TokenUsage | null = null;
          let costUsd = 0;
          try {
            for (; !step.done; step = await iterator.next()) {
              const event = step.value;
              if (event.type === 'model' || (event.type !== 'usage' && event.choice !== 0)) continue;
              if (event.type === 'text') {
                const current = writing ?? (yield* openMessage());
                current.item.text += event.text;
                yield send({
                  type: 'response.output_text.delta',
                  item_id: current.item.messageId,
                  output_index: current.index,
                  content_index: 0,
                  delta: event.text,
                  logprobs: [],
                });
              } else if (event.type === 'tool-call-start') {
                yield* closeMessage('completed');
                const item = {
                  kind: 'call' as const,
                  messageId: newId('msg', context.now),
                  call: { id: event.id, name: event.name, arguments: '' },
                };
                const index = items.push(item) - 1;
                calls.set(event.index, index);
                yield send({
                  type: 'response.output_item.added',
                  output_index: index,
                  item: functionCallItem(item.messageId, item.call, 'in_progress'),
                });
              } else if (event.type === 'tool-call-delta') {
                const index = calls.get(event.index)!;
                const item = items[index] as Extract<OutputItem, { kind: 'call' }>;
                item.call.arguments += event.argumentsDelta;
                yield send({
                  type: 'response.function_call_arguments.delta',
                  item_id: functionCallItem(item.messageId, item.call, 'in_progress').id!,
                  output_index: index,
                  delta: event.argumentsDelta,
                });
              } else if (event.type === 'tool-call') {
                const index = calls.get(event.index)!;
                const item = items[index] as Extract<OutputItem, { kind: 'call' }>;
                item.call = { id: event.id, name: event.name, arguments: event.arguments };
                const done = functionCallItem(item.messageId, item.call, 'completed');
                yield send({
                  type: 'response.function_call_arguments.done',
                  item_id: done.id!,
                  name: event.name,
                  output_index: index,
                  arguments: event.arguments,
                });
                yield send({ type: 'response.output_item.done', output_index: index, item: done });
              } else if (event.type === 'finish') finishReason = event.finishReason;
              else ({ usage, costUsd } = event);
            }
            // A generation its client abandoned ends without usage: nothing more is sent or saved.
            if (!usage) return;
            // An answer with neither text nor calls is one empty message, as when not streamed.
            if (items.length === 0) yield* openMessage();
            const done = await finish({ items, finishReason, usage, costUsd });
            yield* closeMessage(done.status === 'completed' ? 'completed' : 'incomplete');
            yield send({
              type: done.status === 'completed' ? 'response.completed' : 'response.incomplete',
              response: done,
            });
          } catch (error) {
            if (context.signal.aborted) return;
            const failure = placed(error, RESPONSE_FIELDS);
            const problem =
              failure instanceof Problem
                ? failure
                : new Problem(
                    'internal_error',
                    `The response failed. Quote request id ${context.requestId} when contacting support.`,
                  );
            if (!(error instanceof Problem))
              context.platform.logger.error(
                { err: error, request_id: context.requestId },
                'a streamed response failed',
              );
            yield send({
              type: 'response.failed',
              response: {
                ...base,
                status: 'failed',
                error: { code: problem.code, message: problem.message.slice(0, 2000) },
              },
            });
          }
        } finally {
          await iterator.return?.(undefined);
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
    const deleted = await context.platform.db
      .deleteFrom('chat_responses')
      .where('workspace_id', '=', context.caller.workspace.id)
      .where('id', '=', request.path.id)
      .executeTakeFirst();
    if (Number(deleted.numDeletedRows) === 0) throw responseNotFound(request.path.id);
    return {
      status: 200,
      contentType: 'application/json',
      body: { id: request.path.id, object: 'response', deleted: true },
    };
  },

  async listResponseInputItems(request, context) {
    const { db } = context.platform;
    const row = await responsesOf(db, context.caller.workspace.id).where('id', '=', request.path.id).executeTakeFirst();
    if (!row) throw responseNotFound(request.path.id);
    const limit = request.query.limit ?? 20;
    const ascending = request.query.order === 'asc';
    let query = db
      .selectFrom('chat_messages')
      .selectAll()
      .where('thread_id', '=', row.thread_id)
      .where('position', '>=', row.input_position)
      .where('position', '<', row.output_position);
    if (request.query.after !== undefined) {
      const afterId = messageIdOf(request.query.after);
      const after = afterId ? await query.where('id', '=', afterId).executeTakeFirst() : undefined;
      if (!after)
        throw validationFailed([
          { pointer: '/after', detail: `${request.query.after} is not an input item of ${row.id}` },
        ]);
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
      body: {
        object: 'list',
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: rows.length > limit,
      },
    };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  'createResponse' | 'getResponse' | 'deleteResponse' | 'listResponseInputItems'
>;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

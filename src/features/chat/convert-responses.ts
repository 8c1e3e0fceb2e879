// The Responses API to and from the engine: a `ResponseCreateRequest`'s input items as thread messages and engine
// messages, its tools, text format and sampling as the engine takes them, the fields where this API places what the
// engine refuses; the engine's answer as output items, a response object, and the stream of events OpenAI sends.
// Each item is one thread message: a `function_call` an assistant message with its one tool call (`fc_` and the
// message's ULID), a `function_call_output` a `tool` message (`fco_…`); consecutive assistant items are one model
// turn, merged into one engine message when sent to the model.
import type { JSONSchema7 } from '@ai-sdk/provider';
import type { components } from '../../../generated/openapi.ts';
import type { ServerSentEvent } from '../../../generated/operations.ts';
import { newId } from '../../platform/ids.ts';
import { type Problem, validationFailed } from '../../platform/problems.ts';
import type {
  CatalogueEntry,
  EngineMessage,
  FinishReason,
  GenerationEvent,
  GenerationRequest,
  RefusalFields,
  TokenUsage,
} from '../engine/index.ts';
import type { EngineContentPart, EngineTool, EngineToolCall, EngineToolChoice } from './engine-types.ts';
import type { ImagePart } from './request-images.ts';
import { checkChosenTool, checkToolNames } from './request-tools.ts';
import type { ChatMessagesTable } from './schema.ts';
import { imagePlaceholder } from './threads.ts';

type Schemas = components['schemas'];
type Request = Schemas['ResponseCreateRequest'];
export type ResponseObject = Schemas['Response'];
export type StreamEvent = Schemas['ResponseStreamEvent'];
type InputItem = Schemas['ResponseInputItem'];
type OutputMessage = Schemas['ResponseOutputMessage'];
type FunctionCallItem = Schemas['ResponseFunctionCall'];

/** One input item: as its thread message keeps it, and as the engine takes it. */
export interface InputMessage {
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
export type OutputItem =
  | { kind: 'message'; messageId: string; text: string }
  | { kind: 'call'; messageId: string; call: EngineToolCall };

/** This API's fields of what the engine may refuse: the output budget and the prompt (refusal.ts). */
export const RESPONSE_FIELDS: RefusalFields = {
  output_budget: 'max_output_tokens',
  prompt: 'input',
  logprobs: 'top_logprobs',
};

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
export function itemIdOf(message: { id: string; role: ChatMessagesTable['role']; toolCalls: unknown }): string {
  const ulid = message.id.slice('msg_'.length);
  if (message.role === 'tool') return `fco_${ulid}`;
  return message.role === 'assistant' && message.toolCalls ? `fc_${ulid}` : message.id;
}

/** The thread message of an item id, or null for an id of no item this server makes. */
export function messageIdOf(itemId: string): string | null {
  const match = ITEM_ID.exec(itemId);
  return match ? `msg_${match[1]}` : null;
}

function textOfParts(parts: Exclude<Schemas['ResponseInputMessage']['content'], string>): string {
  return parts.map((part) => (part.type === 'input_image' ? '' : part.text)).join('');
}

/** The request's image parts, where they are; one in a message not the user's is misplaced. */
export function* imageParts(input: Request['input']): Generator<ImagePart> {
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
export function checkTools(body: Request): void {
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
export function checkToolOutputs(history: EngineMessage[], messages: InputMessage[]): void {
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

export function functionCallItem(
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
export function wireItem(item: OutputItem, status: 'completed' | 'incomplete'): Schemas['ResponseOutputItem'] {
  return item.kind === 'message'
    ? outputMessage(item.messageId, item.text, status)
    : functionCallItem(item.messageId, item.call, 'completed');
}

/** The output items of a generated answer: its text (when it wrote some, or called nothing), then its calls. */
export function outputItemsOf(text: string, calls: EngineToolCall[], now: Date): OutputItem[] {
  return [
    ...(text !== '' || calls.length === 0 ? [{ kind: 'message' as const, messageId: newId('msg', now), text }] : []),
    ...calls.map((call) => ({ kind: 'call' as const, messageId: newId('msg', now), call })),
  ];
}

export function statusOf(finishReason: FinishReason): {
  status: 'completed' | 'incomplete';
  incomplete: ResponseObject['incomplete_details'];
} {
  if (finishReason === 'length') return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' } };
  if (finishReason === 'content_filter') return { status: 'incomplete', incomplete: { reason: 'content_filter' } };
  return { status: 'completed', incomplete: null };
}

/** What the engine answered, as output items. */
export interface Outcome {
  items: OutputItem[];
  finishReason: FinishReason;
  usage: TokenUsage;
  costUsd: number;
}

/** What the request asks of the engine, in the engine's words: the conversation (`history`, then the input), sampling, tools. */
export function generationOf(
  body: Request,
  model: CatalogueEntry,
  history: EngineMessage[],
  messages: InputMessage[],
): Pick<
  GenerationRequest,
  | 'messages'
  | 'maxOutputTokens'
  | 'temperature'
  | 'topP'
  | 'responseFormat'
  | 'reasoningEffort'
  | 'tools'
  | 'toolChoice'
  | 'parallelToolCalls'
> {
  const instructions = body.instructions ?? null;
  return {
    messages: mergeTurns([
      ...(instructions ? [{ role: 'system' as const, content: instructions }] : []),
      ...history,
      ...messages.map((m) => m.engine),
    ]),
    maxOutputTokens: body.max_output_tokens ?? null,
    temperature: body.temperature,
    topP: body.top_p,
    responseFormat: textFormat(body, model.capabilities, model.id),
    reasoningEffort: model.capabilities.includes('reasoning') ? (body.reasoning?.effort ?? null) : null,
    tools: toolsOf(body.tools),
    toolChoice: toolChoiceOf(body.tool_choice),
    parallelToolCalls: body.parallel_tool_calls ?? true,
  };
}

/** The response object before its answer: the request's settings as OpenAI echoes them, no output yet. */
export function inProgressResponse(
  body: Request,
  at: { id: string; model: string; now: Date; previousId: string | null; store: boolean },
): ResponseObject {
  return {
    id: at.id,
    object: 'response',
    created_at: Math.floor(at.now.getTime() / 1000),
    status: 'in_progress',
    model: at.model,
    output: [],
    usage: null,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    metadata: body.metadata ?? {},
    previous_response_id: at.previousId,
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
    store: at.store,
    user: body.user ?? null,
    thread_id: null,
    voice_id: body.voice_id ?? null,
    cost_usd: null,
  };
}

/** The response object of an answer: its status (cut text is incomplete), output items, usage and cost. */
export function finishedResponse(base: ResponseObject, outcome: Outcome, threadId: string | null): ResponseObject {
  const { status, incomplete } = statusOf(outcome.finishReason);
  return {
    ...base,
    status,
    incomplete_details: incomplete,
    output: outcome.items.map((item) => wireItem(item, status)),
    usage: usageBody(outcome.usage),
    cost_usd: outcome.costUsd,
    thread_id: threadId,
  };
}

/** The message item being written, and its position among the output items. */
type Writing = { index: number; item: Extract<OutputItem, { kind: 'message' }> };

/**
 * The engine's events as the Responses API streams them: each event numbered, the output items in the order the model
 * wrote them, each whole before the next begins, as OpenAI streams them.
 */
export class ResponseEvents {
  readonly items: OutputItem[] = [];
  #sequence = 0;
  /** The message item being written, if any. */
  #writing: Writing | null = null;
  /** The engine's call index → its item's position in `items`. */
  readonly #calls = new Map<number, number>();
  readonly #now: Date;

  constructor(now: Date) {
    this.#now = now;
  }

  send(event: DistributiveOmit<StreamEvent, 'sequence_number'>): ServerSentEvent<StreamEvent> {
    return { event: event.type, data: { ...event, sequence_number: this.#sequence++ } as StreamEvent };
  }

  /** The events of the first choice's text and tool calls. */
  *of(
    event: Extract<GenerationEvent, { type: 'text' | 'tool-call-start' | 'tool-call-delta' | 'tool-call' }>,
  ): Generator<ServerSentEvent<StreamEvent>> {
    if (event.type === 'text') {
      const current = this.#writing ?? (yield* this.openMessage());
      current.item.text += event.text;
      yield this.send({
        type: 'response.output_text.delta',
        item_id: current.item.messageId,
        output_index: current.index,
        content_index: 0,
        delta: event.text,
        logprobs: [],
      });
    } else if (event.type === 'tool-call-start') {
      yield* this.closeMessage('completed');
      const item = {
        kind: 'call' as const,
        messageId: newId('msg', this.#now),
        call: { id: event.id, name: event.name, arguments: '' },
      };
      const index = this.items.push(item) - 1;
      this.#calls.set(event.index, index);
      yield this.send({
        type: 'response.output_item.added',
        output_index: index,
        item: functionCallItem(item.messageId, item.call, 'in_progress'),
      });
    } else if (event.type === 'tool-call-delta') {
      const index = this.#calls.get(event.index)!;
      const item = this.items[index] as Extract<OutputItem, { kind: 'call' }>;
      item.call.arguments += event.argumentsDelta;
      yield this.send({
        type: 'response.function_call_arguments.delta',
        item_id: functionCallItem(item.messageId, item.call, 'in_progress').id!,
        output_index: index,
        delta: event.argumentsDelta,
      });
    } else {
      const index = this.#calls.get(event.index)!;
      const item = this.items[index] as Extract<OutputItem, { kind: 'call' }>;
      item.call = { id: event.id, name: event.name, arguments: event.arguments };
      const done = functionCallItem(item.messageId, item.call, 'completed');
      yield this.send({
        type: 'response.function_call_arguments.done',
        item_id: done.id!,
        name: event.name,
        output_index: index,
        arguments: event.arguments,
      });
      yield this.send({ type: 'response.output_item.done', output_index: index, item: done });
    }
  }

  /** Opens a message item: its `output_item.added` and its one `output_text` part. */
  *openMessage(): Generator<ServerSentEvent<StreamEvent>, Writing> {
    const item = { kind: 'message' as const, messageId: newId('msg', this.#now), text: '' };
    const opened = { index: this.items.push(item) - 1, item };
    this.#writing = opened;
    yield this.send({
      type: 'response.output_item.added',
      output_index: opened.index,
      item: { ...outputMessage(item.messageId, '', 'in_progress'), content: [] },
    });
    yield this.send({
      type: 'response.content_part.added',
      item_id: item.messageId,
      output_index: opened.index,
      content_index: 0,
      part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
    });
    return opened;
  }

  /** Closes the message item being written, if any: its text, part and item done. */
  *closeMessage(status: 'completed' | 'incomplete'): Generator<ServerSentEvent<StreamEvent>> {
    if (!this.#writing) return;
    const { index, item } = this.#writing;
    const at = { item_id: item.messageId, output_index: index, content_index: 0 };
    const done = outputMessage(item.messageId, item.text, status);
    yield this.send({ type: 'response.output_text.done', ...at, text: item.text, logprobs: [] });
    yield this.send({ type: 'response.content_part.done', ...at, part: done.content[0]! });
    yield this.send({ type: 'response.output_item.done', output_index: index, item: done });
    this.#writing = null;
  }

  /** The end of the answer: the message being written closed, then `response.completed` or `response.incomplete`. */
  *finished(done: ResponseObject): Generator<ServerSentEvent<StreamEvent>> {
    yield* this.closeMessage(done.status === 'completed' ? 'completed' : 'incomplete');
    yield this.send({
      type: done.status === 'completed' ? 'response.completed' : 'response.incomplete',
      response: done,
    });
  }

  /** `response.failed`, with the problem's code and message as the response's error. */
  failed(base: ResponseObject, problem: Problem): ServerSentEvent<StreamEvent> {
    return this.send({
      type: 'response.failed',
      response: { ...base, status: 'failed', error: { code: problem.code, message: problem.message.slice(0, 2000) } },
    });
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** An `item_reference` of the input, with the position among the input messages of the one it goes before. */
export interface ItemReference {
  id: string;
  index: number;
}

/** The input as messages (a string is one user message), and the items it names by reference, where they go. */
export function inputMessagesOf(
  input: Request['input'],
  images: Map<string, EngineContentPart>,
): { messages: InputMessage[]; references: ItemReference[] } {
  const messages: InputMessage[] = [];
  const references: ItemReference[] = [];
  if (typeof input === 'string') messages.push(inputMessage({ role: 'user', content: input }, '/input', images));
  else {
    input.forEach((item, i) => {
      if (item.type === 'item_reference') references.push({ id: item.id, index: messages.length });
      else
        messages.push(
          inputMessage(item as Exclude<InputItem, Schemas['ResponseItemReference']>, `/input/${i}`, images),
        );
    });
  }
  return { messages, references };
}

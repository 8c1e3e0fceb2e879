// Chat Completions to and from the engine: a `ChatCompletionRequest` as the engine takes it (its messages, tools,
// response format and sampling) and as its thread keeps it, the fields where this wire places what the engine refuses,
// and the engine's answer as a `chat.completion` object or as `chat.completion.chunk` events.
import type { JSONSchema7 } from '@ai-sdk/provider';
import type { components } from '../../../generated/openapi.ts';
import type { ServerSentEvent } from '../../../generated/operations.ts';
import { validationFailed } from '../../platform/problems.ts';
import type {
  CatalogueEntry,
  EngineMessage,
  FinishReason,
  Generated,
  GenerationEvent,
  GenerationRequest,
  RefusalFields,
  TokenUsage,
} from '../engine/index.ts';
import type { EngineContentPart, EngineTool, EngineToolCall, EngineToolChoice, ModelTried } from './engine-types.ts';
import { wireLogprobs } from './logprobs.ts';
import type { ImagePart } from './request-images.ts';
import { checkChosenTool, checkToolNames } from './request-tools.ts';
import { type Exchange, imagePlaceholder, type SavedMessage, wireToolCalls } from './threads.ts';

type Schemas = components['schemas'];
type Request = Schemas['ChatCompletionRequest'];
type Chunk = Schemas['ChatCompletionChunk'];
type RequestMessage = Schemas['ChatCompletionRequestMessage'];

function textOf(content: string | Schemas['ChatCompletionContentPartText'][] | null | undefined): string {
  if (content == null) return '';
  return typeof content === 'string' ? content : content.map((part) => part.text).join('');
}

/** The tools, tool choice and messages that need more than the schema: unique names, known calls, a choice among the tools. */
export function checkToolFields(body: Request, known: Set<string>): void {
  const tools = body.tools ?? [];
  const names = checkToolNames(
    tools.map((tool) => tool.function.name),
    (i) => `/tools/${i}/function/name`,
  );
  const choice = body.tool_choice;
  if (choice !== undefined && tools.length === 0)
    throw validationFailed([{ pointer: '/tool_choice', detail: 'is only allowed with tools' }]);
  if (typeof choice === 'object') checkChosenTool(choice.function.name, names, '/tool_choice/function/name');
  body.messages.forEach((message, i) => {
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) known.add(call.id);
      if (textOf(message.content) === '' && !message.tool_calls)
        throw validationFailed([
          { pointer: `/messages/${i}/content`, detail: 'is required for an assistant message without tool_calls' },
        ]);
    } else if (message.role === 'tool' && !known.has(message.tool_call_id)) {
      throw validationFailed([
        {
          pointer: `/messages/${i}/tool_call_id`,
          detail: `${message.tool_call_id} is not the id of a tool call of an earlier assistant message`,
        },
      ]);
    }
  });
}

/** The request's image parts, where they are: in user messages' content parts. */
export function* imageParts(messages: RequestMessage[]): Generator<ImagePart> {
  for (const [i, message] of messages.entries()) {
    if (message.role !== 'user' || typeof message.content === 'string') continue;
    for (const [j, part] of message.content.entries()) {
      if (part.type !== 'image_url') continue;
      yield { pointer: `/messages/${i}/content/${j}`, url: part.image_url.url, detail: part.image_url.detail };
    }
  }
}

function toolChoiceOf(choice: Request['tool_choice']): EngineToolChoice | undefined {
  if (choice === undefined) return undefined;
  return typeof choice === 'string' ? choice : { name: choice.function.name };
}

function toolsOf(tools: Request['tools']): EngineTool[] | undefined {
  if (!tools || tools.length === 0) return undefined;
  return tools.map(({ function: fn }) => ({
    name: fn.name,
    ...(fn.description !== undefined ? { description: fn.description } : {}),
    parameters: (fn.parameters ?? { type: 'object', properties: {} }) as JSONSchema7,
    ...(fn.strict != null ? { strict: fn.strict } : {}),
  }));
}

/** A request message as the engine takes it (`developer` instructs as `system` does), with its images read. */
function engineMessage(message: RequestMessage, images: Map<string, EngineContentPart>, i: number): EngineMessage {
  switch (message.role) {
    case 'system':
    case 'developer':
      return { role: 'system', content: textOf(message.content) };
    case 'user':
      if (typeof message.content === 'string') return { role: 'user', content: message.content };
      return {
        role: 'user',
        content: message.content.map((part, j) =>
          part.type === 'text' ? { type: 'text', text: part.text } : images.get(`/messages/${i}/content/${j}`)!,
        ),
      };
    case 'assistant':
      return {
        role: 'assistant',
        content: textOf(message.content),
        ...(message.tool_calls ? { toolCalls: message.tool_calls.map(fromWire) } : {}),
      };
    case 'tool':
      return { role: 'tool', toolCallId: message.tool_call_id, content: textOf(message.content) };
  }
}

function fromWire(call: Schemas['ChatCompletionMessageToolCall']): EngineToolCall {
  return { id: call.id, name: call.function.name, arguments: call.function.arguments };
}

/** A request message as its thread keeps it. */
export function savedMessage(message: RequestMessage): SavedMessage {
  const base = {
    role: message.role,
    name: ('name' in message ? message.name : null) ?? null,
    toolCalls: null,
    toolCallId: null,
  };
  switch (message.role) {
    case 'user':
      return {
        ...base,
        content:
          typeof message.content === 'string'
            ? message.content
            : message.content
                .map((part) => (part.type === 'text' ? part.text : imagePlaceholder(part.image_url.url)))
                .join(''),
      };
    case 'assistant': {
      const text = textOf(message.content);
      return {
        ...base,
        content: text === '' && message.tool_calls ? null : text,
        toolCalls: message.tool_calls?.map(fromWire) ?? null,
      };
    }
    case 'tool':
      return { ...base, content: textOf(message.content), toolCallId: message.tool_call_id };
    default:
      return { ...base, content: textOf(message.content) };
  }
}

export function usageBody(usage: TokenUsage): Schemas['ChatCompletionUsage'] {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedInputTokens },
  };
}

function responseFormat(
  body: Request,
  capabilities: readonly string[],
  model: string,
): GenerationRequest['responseFormat'] {
  const format = body.response_format;
  if (!format || format.type === 'text') return undefined;
  const needed = format.type === 'json_object' ? 'json_mode' : 'json_schema';
  if (!capabilities.includes(needed)) {
    throw validationFailed([
      {
        pointer: '/response_format',
        detail: `${format.type} is not supported by ${model} (it lacks the ${needed} capability)`,
      },
    ]);
  }
  if (format.type === 'json_object') return { type: 'json' };
  const { name, description, schema } = format.json_schema;
  return { type: 'json', name, description, schema: (schema ?? { type: 'object' }) as JSONSchema7 };
}

/** The answer's `content`: null when the model only called tools, as OpenAI's. */
function answerContent(text: string, toolCalls: EngineToolCall[]): string | null {
  return text === '' && toolCalls.length > 0 ? null : text;
}

/** Where this wire keeps what the engine may refuse: the output budget as the request sent it. */
export function refusalFields(body: Request): RefusalFields {
  return {
    output_budget:
      body.max_completion_tokens == null && body.max_tokens != null ? 'max_tokens' : 'max_completion_tokens',
    prompt: 'messages',
    logprobs: 'logprobs',
  };
}

/** What the request asks of the engine, in the engine's words: the conversation (`history`, then its messages), sampling, tools. */
export function generationOf(
  body: Request,
  model: CatalogueEntry,
  history: EngineMessage[],
  images: Map<string, EngineContentPart>,
  logprobs: number | null,
): Pick<
  GenerationRequest,
  | 'messages'
  | 'maxOutputTokens'
  | 'temperature'
  | 'topP'
  | 'presencePenalty'
  | 'frequencyPenalty'
  | 'seed'
  | 'stop'
  | 'responseFormat'
  | 'reasoningEffort'
  | 'n'
  | 'tools'
  | 'toolChoice'
  | 'parallelToolCalls'
  | 'logprobs'
> {
  return {
    messages: [...history, ...body.messages.map((message, i) => engineMessage(message, images, i))],
    maxOutputTokens: body.max_completion_tokens ?? body.max_tokens ?? null,
    temperature: body.temperature,
    topP: body.top_p,
    presencePenalty: body.presence_penalty,
    frequencyPenalty: body.frequency_penalty,
    seed: body.seed,
    stop: typeof body.stop === 'string' ? [body.stop] : (body.stop ?? undefined),
    responseFormat: responseFormat(body, model.capabilities, model.id),
    reasoningEffort: model.capabilities.includes('reasoning') ? body.reasoning_effort : null,
    n: body.n ?? 1,
    tools: toolsOf(body.tools),
    toolChoice: toolChoiceOf(body.tool_choice),
    parallelToolCalls: body.parallel_tool_calls ?? true,
    logprobs,
  };
}

/** The answer of the first choice, as its thread keeps it. */
export function savedAnswer(result: Generated, usage: Schemas['ChatCompletionUsage']): Exchange['answer'] {
  const first = result.choices[0]!;
  return {
    content: answerContent(first.text, first.toolCalls),
    toolCalls: first.toolCalls,
    finishReason: first.finishReason,
    usage,
    costUsd: result.costUsd,
  };
}

/** A whole answer as a `chat.completion` object (the fields this server adds: its thread, voice, cost, models tried). */
export function completionOf(
  result: Generated,
  usage: Schemas['ChatCompletionUsage'],
  at: { id: string; created: number; threadId: string | null; voiceId: string | null },
): Schemas['ChatCompletion'] {
  return {
    id: at.id,
    object: 'chat.completion',
    created: at.created,
    model: result.model.id,
    choices: result.choices.map((choice, index) => ({
      index,
      message: {
        role: 'assistant',
        content: answerContent(choice.text, choice.toolCalls),
        refusal: null,
        ...(choice.toolCalls.length > 0 ? { tool_calls: wireToolCalls(choice.toolCalls) } : {}),
      },
      finish_reason: choice.finishReason,
      logprobs: choice.logprobs ? wireLogprobs(choice.logprobs) : null,
    })),
    usage,
    thread_id: at.threadId,
    voice_id: at.voiceId,
    cost_usd: result.costUsd,
    ...(result.modelsTried ? { models_tried: result.modelsTried } : {}),
  };
}

/** The first choice of a streamed answer, gathered from its events for its thread. */
export class StreamedAnswer {
  #text = '';
  readonly #calls: EngineToolCall[] = [];
  #finish: FinishReason = 'stop';

  add(event: GenerationEvent): void {
    if (event.type === 'usage' || event.type === 'model' || event.choice !== 0) return;
    if (event.type === 'text') this.#text += event.text;
    else if (event.type === 'tool-call')
      this.#calls[event.index] = { id: event.id, name: event.name, arguments: event.arguments };
    else if (event.type === 'finish') this.#finish = event.finishReason;
  }

  answer(usage: Schemas['ChatCompletionUsage'], costUsd: number): Exchange['answer'] {
    return {
      content: answerContent(this.#text, this.#calls),
      toolCalls: this.#calls,
      finishReason: this.#finish,
      usage,
      costUsd,
    };
  }
}

/** The engine's events as `chat.completion.chunk` events, each naming the model that answers. */
export class CompletionChunks {
  /** With fallback models, the engine's first event names the model that answers: every chunk names it. */
  model: string;
  /** The models tried before it, listed by the first chunk after the engine named them. */
  #modelsTried: Chunk['models_tried'];
  /** The choices that have begun: the first chunk of a choice names the role, as OpenAI's does. */
  readonly #started = new Set<number>();
  readonly #at: { id: string; created: number; threadId: string | null; logprobs: boolean };

  constructor(model: string, at: { id: string; created: number; threadId: string | null; logprobs: boolean }) {
    this.model = model;
    this.#at = at;
  }

  /** The chunks of an engine event other than its usage (a model, a finished call's whole arguments: none). */
  *of(event: Exclude<GenerationEvent, { type: 'usage' }>): Generator<ServerSentEvent<Chunk>> {
    if (event.type === 'model') {
      this.#answeredBy(event.model.id, event.tried);
    } else if (event.type === 'text') {
      yield this.#chunk([
        {
          index: event.choice,
          delta: { ...this.#role(event.choice), content: event.text },
          finish_reason: null,
          logprobs: this.#at.logprobs ? wireLogprobs(event.logprobs ?? []) : null,
        },
      ]);
    } else if (event.type === 'tool-call-start') {
      // As OpenAI streams a call: its first fragment names it, with empty arguments; the others add arguments.
      const call = {
        index: event.index,
        id: event.id,
        type: 'function' as const,
        function: { name: event.name, arguments: '' },
      };
      yield this.#chunk([
        {
          index: event.choice,
          delta: { ...this.#role(event.choice), tool_calls: [call] },
          finish_reason: null,
          logprobs: null,
        },
      ]);
    } else if (event.type === 'tool-call-delta') {
      yield this.#chunk([
        {
          index: event.choice,
          delta: { tool_calls: [{ index: event.index, function: { arguments: event.argumentsDelta } }] },
          finish_reason: null,
          logprobs: null,
        },
      ]);
    } else if (event.type === 'finish') {
      const delta = this.#started.has(event.choice) ? {} : { role: 'assistant' as const, content: '' };
      this.#started.add(event.choice);
      yield this.#chunk([
        {
          index: event.choice,
          delta,
          finish_reason: event.finishReason,
          logprobs: event.logprobs?.length ? wireLogprobs(event.logprobs) : null,
        },
      ]);
    }
  }

  /** The last chunk of `stream_options.include_usage`: no choices, the usage and cost. */
  usage(usage: Schemas['ChatCompletionUsage'], costUsd: number): ServerSentEvent<Chunk> {
    return this.#chunk([], usage, costUsd);
  }

  #answeredBy(model: string, tried: ModelTried[]): void {
    this.model = model;
    this.#modelsTried = tried;
  }

  #role(choice: number) {
    return this.#started.has(choice) ? {} : (this.#started.add(choice), { role: 'assistant' as const });
  }

  #chunk(choices: Chunk['choices'], usage: Chunk['usage'] = null, cost: number | null = null): ServerSentEvent<Chunk> {
    const data: Chunk = {
      id: this.#at.id,
      object: 'chat.completion.chunk',
      created: this.#at.created,
      model: this.model,
      choices,
      usage,
      thread_id: this.#at.threadId,
      cost_usd: cost,
    };
    if (this.#modelsTried) data.models_tried = this.#modelsTried;
    this.#modelsTried = undefined;
    return { data };
  }
}

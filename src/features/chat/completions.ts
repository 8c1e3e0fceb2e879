// POST /v1/chat/completions, wire-compatible with OpenAI's Chat Completions: the request becomes an engine request,
// and the engine's events become a `chat.completion` object or a stream of `chat.completion.chunk` events ending
// with `data: [DONE]`. `store: true` and `thread_id` save the exchange (threads.ts) once the answer is complete.
import type { JSONSchema7 } from '@ai-sdk/provider';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers, ServerSentEvent } from '../../../generated/operations.ts';
import { byRequest } from '../../platform/audit.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { notFound, validationFailed } from '../../platform/problems.ts';
import {
  type EngineContentPart,
  type EngineMessage,
  type EngineTool,
  type EngineToolCall,
  type EngineToolChoice,
  type GenerationRequest,
  placed,
  type RefusalFields,
  type TokenUsage,
} from '../engine/index.ts';
import { projectFallbacks } from '../projects/index.ts';
import { logprobsAsked, wireLogprobs } from './logprobs.ts';
import { checkImages, type ImagePart, readImages } from './request-images.ts';
import { requestModel } from './request-model.ts';
import { checkChosenTool, checkToolNames } from './request-tools.ts';
import {
  createThread,
  dropEmptyThread,
  type Exchange,
  imagePlaceholder,
  replayedMessage,
  type SavedMessage,
  saveExchange,
  THREAD_LIMIT,
  threadFull,
  threadMessages,
  threadsOf,
  wireToolCalls,
} from './threads.ts';

type Schemas = components['schemas'];
type Request = Schemas['ChatCompletionRequest'];
type Chunk = Schemas['ChatCompletionChunk'];
type RequestMessage = Schemas['ChatCompletionRequestMessage'];

function textOf(content: string | Schemas['ChatCompletionContentPartText'][] | null | undefined): string {
  if (content == null) return '';
  return typeof content === 'string' ? content : content.map((part) => part.text).join('');
}

/** The tools, tool choice and messages that need more than the schema: unique names, known calls, a choice among the tools. */
function checkToolFields(body: Request, known: Set<string>): void {
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
function* imageParts(messages: RequestMessage[]): Generator<ImagePart> {
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
function savedMessage(message: RequestMessage): SavedMessage {
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

function usageBody(usage: TokenUsage): Schemas['ChatCompletionUsage'] {
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

export const completionHandlers = {
  async createChatCompletion(request, context) {
    const body = request.body;
    const engine = context.platform.services.engine;
    const { db } = context.platform;
    const workspaceId = context.caller.workspace.id;
    const model = requestModel(engine, body);
    const logprobs = logprobsAsked(body);
    // Where this wire keeps what the engine may refuse: the output budget as the request sent it.
    const fields: RefusalFields = {
      output_budget:
        body.max_completion_tokens == null && body.max_tokens != null ? 'max_tokens' : 'max_completion_tokens',
      prompt: 'messages',
      logprobs: 'logprobs',
    };
    const place = (error: unknown): never => {
      throw placed(error, fields);
    };

    const history: EngineMessage[] = [];
    /** The tool calls of the conversation so far, which a tool message may answer. */
    const knownCalls = new Set<string>();
    if (body.thread_id) {
      const thread = await threadsOf(db, workspaceId).where('id', '=', body.thread_id).executeTakeFirst();
      if (!thread) throw notFound('chat thread', body.thread_id);
      if (Number(thread.message_count) + body.messages.length + 1 > THREAD_LIMIT)
        throw threadFull(thread.id, Number(thread.message_count));
      for (const row of await threadMessages(db, thread.id)) {
        const message = replayedMessage(row);
        if (!message) continue;
        if (message.role === 'assistant') for (const call of message.toolCalls ?? []) knownCalls.add(call.id);
        history.push(message);
      }
    }
    checkToolFields(body, knownCalls);
    const found = checkImages(imageParts(body.messages), model);
    const messages: SavedMessage[] = body.messages.map(savedMessage);
    const voiceId = body.voice_id ?? null;
    const projectId = body.project_id ?? null;
    // The project's fallback models when the request names none (not with n over 1: a choice each from another model).
    const projectDefaults = projectId ? await projectFallbacks(context.platform.db, workspaceId, projectId) : [];
    // The images last, once the request is otherwise known to be good and not refused by a spent limit; what they
    // hold is given back with the answer.
    const images = await readImages(found, projectId, context);
    const fallbackModels =
      body.models ?? ((body.n ?? 1) === 1 && projectDefaults.length > 0 ? projectDefaults : undefined);
    const generation: GenerationRequest = {
      workspaceId,
      apiKeyId: context.caller.apiKey.id,
      userId: context.caller.userId,
      origin: byRequest(context),
      feature: 'chat',
      model: model.id,
      ...(fallbackModels ? { fallbackModels, fallbackModelsDefault: !body.models } : {}),
      projectId,
      messages: [...history, ...body.messages.map((message, i) => engineMessage(message, images, i))],
      voiceId,
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
      signal: context.signal,
      now: context.now,
    };

    let saving = body.thread_id
      ? { threadId: body.thread_id, create: null }
      : body.store
        ? { threadId: newId('thr', context.now), create: { metadata: body.metadata ?? {} } }
        : null;
    let saved = false;
    /** The thread keeps the model that answered (with fallback models, the one of them that did). */
    const save = async (answer: Exchange['answer'], answeredBy: string) => {
      if (!saving) return;
      await saveExchange(db, workspaceId, { ...saving, model: answeredBy, voiceId, messages, answer }, context.now);
      saved = true;
    };
    const id = newId('chatcmpl', context.now);
    const created = Math.floor(context.now.getTime() / 1000);
    const threadId = saving?.threadId ?? null;

    if (!body.stream) {
      const result = await engine.generate(generation, { whole: true }).catch(place);
      const usage = usageBody(result.usage);
      const first = result.choices[0]!;
      await save(
        {
          content: answerContent(first.text, first.toolCalls),
          toolCalls: first.toolCalls,
          finishReason: first.finishReason,
          usage,
          costUsd: result.costUsd,
        },
        result.model.id,
      );
      return {
        status: 200,
        contentType: 'application/json',
        body: {
          id,
          object: 'chat.completion',
          created,
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
          thread_id: threadId,
          voice_id: voiceId,
          cost_usd: result.costUsd,
          ...(result.modelsTried ? { models_tried: result.modelsTried } : {}),
        },
      };
    }

    const events = await engine.stream(generation).catch(place);
    // The first chunk names the thread: it exists from then on, even if the stream never ends (its messages are saved
    // with the answer).
    let createdThread: string | null = null;
    if (saving?.create) {
      const thread = { ...saving, create: saving.create, model: model.id, voiceId, messages };
      // Not created: the call is closed unread, which settles it.
      await createThread(db, workspaceId, thread, context.now).catch(async (error: unknown) => {
        await events.return(undefined);
        throw error;
      });
      createdThread = saving.threadId;
      saving = { threadId: saving.threadId, create: null };
    }
    const includeUsage = body.stream_options?.include_usage === true;
    // With fallback models, the engine's first event names the model that answers: every chunk names it, and the
    // first one lists the models tried before it.
    let answeredBy = model.id;
    let modelsTried: Chunk['models_tried'];
    const chunk = (
      choices: Chunk['choices'],
      usage: Chunk['usage'] = null,
      cost: number | null = null,
    ): ServerSentEvent<Chunk> => {
      const data: Chunk = {
        id,
        object: 'chat.completion.chunk',
        created,
        model: answeredBy,
        choices,
        usage,
        thread_id: threadId,
        cost_usd: cost,
      };
      if (modelsTried) data.models_tried = modelsTried;
      modelsTried = undefined;
      return { data };
    };
    return {
      status: 200,
      contentType: 'text/event-stream',
      events: (async function* () {
        const started = new Set<number>();
        let firstText = '';
        const firstCalls: EngineToolCall[] = [];
        let firstFinish: Exchange['answer']['finishReason'] = 'stop';
        // The first chunk of a choice names the role, as OpenAI's does.
        const role = (choice: number) =>
          started.has(choice) ? {} : (started.add(choice), { role: 'assistant' as const });
        try {
          for (let step = await events.next().catch(place); !step.done; step = await events.next().catch(place)) {
            const event = step.value;
            if (event.type === 'model') {
              answeredBy = event.model.id;
              modelsTried = event.tried;
            } else if (event.type === 'text') {
              if (event.choice === 0) firstText += event.text;
              yield chunk([
                {
                  index: event.choice,
                  delta: { ...role(event.choice), content: event.text },
                  finish_reason: null,
                  logprobs: logprobs === null ? null : wireLogprobs(event.logprobs ?? []),
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
              yield chunk([
                {
                  index: event.choice,
                  delta: { ...role(event.choice), tool_calls: [call] },
                  finish_reason: null,
                  logprobs: null,
                },
              ]);
            } else if (event.type === 'tool-call-delta') {
              yield chunk([
                {
                  index: event.choice,
                  delta: { tool_calls: [{ index: event.index, function: { arguments: event.argumentsDelta } }] },
                  finish_reason: null,
                  logprobs: null,
                },
              ]);
            } else if (event.type === 'tool-call') {
              if (event.choice === 0)
                firstCalls[event.index] = { id: event.id, name: event.name, arguments: event.arguments };
            } else if (event.type === 'finish') {
              if (event.choice === 0) firstFinish = event.finishReason;
              const delta = started.has(event.choice) ? {} : { role: 'assistant' as const, content: '' };
              started.add(event.choice);
              yield chunk([
                {
                  index: event.choice,
                  delta,
                  finish_reason: event.finishReason,
                  logprobs: event.logprobs?.length ? wireLogprobs(event.logprobs) : null,
                },
              ]);
            } else {
              const usage = usageBody(event.usage);
              await save(
                {
                  content: answerContent(firstText, firstCalls),
                  toolCalls: firstCalls,
                  finishReason: firstFinish,
                  usage,
                  costUsd: event.costUsd,
                },
                answeredBy,
              );
              if (includeUsage) yield chunk([], usage, event.costUsd);
            }
          }
        } finally {
          // A stream that ends before its answer is saved (the client left, the call failed, the server stopped)
          // leaves no empty thread behind; then the call is closed, which records its usage.
          if (createdThread && !saved)
            await dropEmptyThread(db, workspaceId, createdThread).catch((error: unknown) =>
              context.platform.logger.warn({ err: error, thread_id: createdThread }, 'an empty thread was left behind'),
            );
          await events.return(undefined);
        }
        yield { text: '[DONE]' };
      })(),
    };
  },
} satisfies Pick<Handlers<RequestContext>, 'createChatCompletion'>;

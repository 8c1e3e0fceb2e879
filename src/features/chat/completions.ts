// POST /v1/chat/completions, wire-compatible with OpenAI's Chat Completions: the request becomes an engine request,
// and the engine's events become a `chat.completion` object or a stream of `chat.completion.chunk` events ending
// with `data: [DONE]`. `store: true` and `thread_id` save the exchange (threads.ts) once the answer is complete.
import type { JSONSchema7 } from '@ai-sdk/provider';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers, ServerSentEvent } from '../../../generated/operations.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { notFound, validationFailed } from '../../platform/problems.ts';
import { byRequest } from '../../platform/audit.ts';
import type { EngineMessage, GenerationRequest, TokenUsage } from '../engine/engine.ts';
import { saveExchange, THREAD_LIMIT, threadFull, threadMessages, threadsOf, type Exchange, type SavedMessage } from './threads.ts';

type Schemas = components['schemas'];
type Request = Schemas['ChatCompletionRequest'];
type Chunk = Schemas['ChatCompletionChunk'];

function textOf(content: Schemas['ChatCompletionRequestMessage']['content']): string {
  return typeof content === 'string' ? content : content.map((part) => part.text).join('');
}

/** `developer` messages instruct the model as `system` ones do. */
function engineRole(role: SavedMessage['role']): EngineMessage['role'] {
  return role === 'developer' ? 'system' : role;
}

function usageBody(usage: TokenUsage): Schemas['ChatCompletionUsage'] {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedInputTokens },
  };
}

function responseFormat(body: Request, capabilities: readonly string[], model: string): GenerationRequest['responseFormat'] {
  const format = body.response_format;
  if (!format || format.type === 'text') return undefined;
  const needed = format.type === 'json_object' ? 'json_mode' : 'json_schema';
  if (!capabilities.includes(needed)) {
    throw validationFailed([{ pointer: '/response_format', detail: `${format.type} is not supported by ${model} (it lacks the ${needed} capability)` }]);
  }
  if (format.type === 'json_object') return { type: 'json' };
  const { name, description, schema } = format.json_schema;
  return { type: 'json', name, description, schema: (schema ?? { type: 'object' }) as JSONSchema7 };
}

export const completionHandlers = {
  async createChatCompletion(request, context) {
    const body = request.body;
    const engine = context.platform.services.engine;
    const { db } = context.platform;
    const workspaceId = context.caller.workspace.id;
    const model = engine.model(body.model);

    const history: EngineMessage[] = [];
    if (body.thread_id) {
      const thread = await threadsOf(db, workspaceId).where('id', '=', body.thread_id).executeTakeFirst();
      if (!thread) throw notFound('chat thread', body.thread_id);
      if (Number(thread.message_count) + body.messages.length + 1 > THREAD_LIMIT) throw threadFull(thread.id, Number(thread.message_count));
      for (const message of await threadMessages(db, thread.id)) {
        if (message.content !== null) history.push({ role: engineRole(message.role), content: message.content });
      }
    }
    const messages: SavedMessage[] = body.messages.map((message) => ({ role: message.role, content: textOf(message.content), name: message.name ?? null }));
    const voiceId = body.voice_id ?? null;
    const generation: GenerationRequest = {
      workspaceId,
      apiKeyId: context.caller.apiKey.id,
      userId: context.caller.userId,
      origin: byRequest(context),
      feature: 'chat',
      model: model.id,
      messages: [...history, ...messages.map((m) => ({ role: engineRole(m.role), content: m.content }))],
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
      signal: context.signal,
      now: context.now,
    };

    const saving = body.thread_id ? { threadId: body.thread_id, create: null } : body.store ? { threadId: newId('thr', context.now), create: { metadata: body.metadata ?? {} } } : null;
    const save = async (answer: Exchange['answer']) => {
      if (!saving) return;
      await saveExchange(db, workspaceId, { ...saving, model: model.id, voiceId, messages, answer }, context.now);
    };
    const id = newId('chatcmpl', context.now);
    const created = Math.floor(context.now.getTime() / 1000);
    const threadId = saving?.threadId ?? null;

    if (!body.stream) {
      const result = await engine.generate(generation);
      const usage = usageBody(result.usage);
      const first = result.choices[0]!;
      await save({ content: first.text, finishReason: first.finishReason, usage, costUsd: result.costUsd });
      return {
        status: 200,
        contentType: 'application/json',
        body: {
          id,
          object: 'chat.completion',
          created,
          model: model.id,
          choices: result.choices.map((choice, index) => ({
            index,
            message: { role: 'assistant', content: choice.text, refusal: null },
            finish_reason: choice.finishReason,
            logprobs: null,
          })),
          usage,
          thread_id: threadId,
          voice_id: voiceId,
          cost_usd: result.costUsd,
        },
      };
    }

    const events = await engine.stream(generation);
    const includeUsage = body.stream_options?.include_usage === true;
    const chunk = (choices: Chunk['choices'], usage: Chunk['usage'] = null, cost: number | null = null): ServerSentEvent<Chunk> => ({
      data: { id, object: 'chat.completion.chunk', created, model: model.id, choices, usage, thread_id: threadId, cost_usd: cost },
    });
    return {
      status: 200,
      contentType: 'text/event-stream',
      events: (async function* () {
        const started = new Set<number>();
        let firstText = '';
        let firstFinish: Exchange['answer']['finishReason'] = 'stop';
        for await (const event of events) {
          if (event.type === 'text') {
            if (event.choice === 0) firstText += event.text;
            // The first chunk of a choice names the role, as OpenAI's does.
            const delta = started.has(event.choice) ? { content: event.text } : { role: 'assistant' as const, content: event.text };
            started.add(event.choice);
            yield chunk([{ index: event.choice, delta, finish_reason: null, logprobs: null }]);
          } else if (event.type === 'finish') {
            if (event.choice === 0) firstFinish = event.finishReason;
            const delta = started.has(event.choice) ? {} : { role: 'assistant' as const, content: '' };
            started.add(event.choice);
            yield chunk([{ index: event.choice, delta, finish_reason: event.finishReason, logprobs: null }]);
          } else {
            const usage = usageBody(event.usage);
            await save({ content: firstText, finishReason: firstFinish, usage, costUsd: event.costUsd });
            if (includeUsage) yield chunk([], usage, event.costUsd);
          }
        }
        yield { text: '[DONE]' };
      })(),
    };
  },
} satisfies Pick<Handlers<RequestContext>, 'createChatCompletion'>;

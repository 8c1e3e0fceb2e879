// POST /v1/chat/completions, wire-compatible with OpenAI's Chat Completions: the request becomes an engine request,
// and the engine's events become a `chat.completion` object or a stream of `chat.completion.chunk` events ending
// with `data: [DONE]` (convert-chat-completions.ts maps each way). `store: true` and `thread_id` save the exchange
// (threads.ts) once the answer is complete.
import type { Handlers } from '../../../generated/operations.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { placed } from '../engine/index.ts';
import { projectFallbacks } from '../projects/index.ts';
import { chatGeneration } from './chat-generation.ts';
import {
  CompletionChunks,
  checkToolFields,
  completionOf,
  generationOf,
  imageParts,
  refusalFields,
  StreamedAnswer,
  savedAnswer,
  savedMessage,
  usageBody,
} from './convert-chat-completions.ts';
import { logprobsAsked } from './logprobs.ts';
import { checkImages, readImages } from './request-images.ts';
import { requestModel } from './request-model.ts';
import {
  createThread,
  dropEmptyThread,
  type Exchange,
  type SavedMessage,
  saveExchange,
  threadHistory,
} from './threads.ts';

export const completionHandlers = {
  async createChatCompletion(request, context) {
    const body = request.body;
    const engine = context.platform.services.engine;
    const { db } = context.platform;
    const workspaceId = context.caller.workspace.id;
    const model = requestModel(engine, body);
    const logprobs = logprobsAsked(body);
    const fields = refusalFields(body);
    const place = (error: unknown): never => {
      throw placed(error, fields);
    };

    // The conversation so far: the thread it continues (its messages, the answer), or none.
    const { history, knownCalls } = body.thread_id
      ? await threadHistory(db, workspaceId, body.thread_id, body.messages.length + 1)
      : { history: [], knownCalls: new Set<string>() };
    checkToolFields(body, knownCalls);
    const found = checkImages(imageParts(body.messages), model);
    const messages: SavedMessage[] = body.messages.map(savedMessage);
    const voiceId = body.voice_id ?? null;
    const projectId = body.project_id ?? null;
    // The project's fallback models when the request names none.
    const projectDefaults = projectId ? await projectFallbacks(db, workspaceId, projectId) : [];
    // The images last, once the request is otherwise known to be good and not refused by a spent limit; what they
    // hold is given back with the answer.
    const images = await readImages(found, projectId, context);
    const generation = chatGeneration(
      context,
      // Not the project's fallback models with n over 1: a choice each from another model.
      { model, models: body.models, projectDefaults: (body.n ?? 1) === 1 ? projectDefaults : [], projectId, voiceId },
      generationOf(body, model, history, images, logprobs),
    );

    let saving = body.thread_id
      ? { threadId: body.thread_id, create: null }
      : body.store
        ? { threadId: newId('thr', context.now), create: { metadata: body.metadata ?? {} } }
        : null;
    let saved = false;
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
      await save(savedAnswer(result, usage), result.model.id);
      return {
        status: 200,
        contentType: 'application/json',
        body: completionOf(result, usage, { id, created, threadId, voiceId }),
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
    const chunks = new CompletionChunks(model.id, { id, created, threadId, logprobs: logprobs !== null });
    return {
      status: 200,
      contentType: 'text/event-stream',
      events: (async function* () {
        const answer = new StreamedAnswer();
        try {
          for (let step = await events.next().catch(place); !step.done; step = await events.next().catch(place)) {
            const event = step.value;
            if (event.type !== 'usage') {
              answer.add(event);
              yield* chunks.of(event);
              continue;
            }
            const usage = usageBody(event.usage);
            // The thread keeps the model that answered (with fallback models, the one of them that did).
            await save(answer.answer(usage, event.costUsd), chunks.model);
            if (includeUsage) yield chunks.usage(usage, event.costUsd);
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

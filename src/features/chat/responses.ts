// OpenAI's Responses API (POST /v1/responses, GET and DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items)
// through the content engine: convert-responses.ts maps the request and the answer, response-store.ts keeps responses
// in chat threads.
import type { Handlers, ServerSentEvent } from '../../../generated/operations.ts';
import type { RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { Problem, validationFailed } from '../../platform/problems.ts';
import { type FinishReason, placed, type TokenUsage } from '../engine/index.ts';
import { projectFallbacks } from '../projects/index.ts';
import { chatGeneration } from './chat-generation.ts';
import {
  checkToolOutputs,
  checkTools,
  finishedResponse,
  generationOf,
  imageParts,
  inProgressResponse,
  inputMessagesOf,
  messageIdOf,
  type Outcome,
  outputItemsOf,
  RESPONSE_FIELDS,
  ResponseEvents,
  type ResponseObject,
  type StreamEvent,
} from './convert-responses.ts';
import type { ModelTried } from './engine-types.ts';
import { checkImages, readImages } from './request-images.ts';
import { requestModel } from './request-model.ts';
import {
  conversationOf,
  insertReferencedItems,
  listedItem,
  responseNotFound,
  responsesOf,
  storedResponse,
  storeResponse,
} from './response-store.ts';

const place = (error: unknown): never => {
  throw placed(error, RESPONSE_FIELDS);
};

/**
 * The problem a stream that failed after it began ends with (`response.failed`): a refusal placed at this API's fields,
 * a problem as it is, anything else an internal error, logged.
 */
function streamFailure(error: unknown, context: RequestContext): Problem {
  const failure = placed(error, RESPONSE_FIELDS);
  if (failure instanceof Problem) return failure;
  context.platform.logger.error({ err: error, request_id: context.requestId }, 'a streamed response failed');
  return new Problem(
    'internal_error',
    `The response failed. Quote request id ${context.requestId} when contacting support.`,
  );
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
    const { messages, references } = inputMessagesOf(body.input, images);
    // The conversation so far: the thread up to the previous response's output.
    const previousId = body.previous_response_id ?? null;
    const conversation = await conversationOf(db, workspaceId, previousId, store, messages.length, context.now);
    await insertReferencedItems(db, workspaceId, references, messages, conversation.replayed);
    checkToolOutputs(conversation.history, messages);

    const projectId = body.project_id ?? null;
    // The project's fallback models when the request names none.
    const projectDefaults = projectId ? await projectFallbacks(db, workspaceId, projectId) : [];
    const generation = chatGeneration(
      context,
      { model, models: body.models, projectDefaults, projectId, voiceId: body.voice_id ?? null },
      generationOf(body, model, conversation.history, messages),
    );

    // `let`: with fallback models, the engine's first event names the model that answered (answeredBy).
    let base = inProgressResponse(body, {
      id: newId('resp', context.now),
      model: model.id,
      now: context.now,
      previousId,
      store,
    });
    /** The response as answered by `model`, after the models tried before it (only with fallback models). */
    const answeredBy = (answering: string, tried: ModelTried[]) => {
      base = { ...base, model: answering, models_tried: tried };
    };
    /** The finished response object, saved when stored. */
    const finish = async (outcome: Outcome): Promise<ResponseObject> => {
      const { placement } = conversation;
      const done = finishedResponse(base, outcome, placement?.threadId ?? null);
      if (placement)
        await storeResponse(db, workspaceId, { ...conversation, placement }, messages, outcome, done, context.now);
      return done;
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
        const stream = new ResponseEvents(context.now);
        // The first engine event is awaited before anything is sent, so that a refusal before the first token (a
        // provider's rate limit) is still an ordinary problem response with its status.
        const iterator = events[Symbol.asyncIterator]();
        // Closed whatever happens to this stream (a client gone while a write waits): the engine then ends the call and
        // records its usage.
        try {
          let step = await iterator.next().catch(place);
          if (!step.done && step.value.type === 'model') answeredBy(step.value.model.id, step.value.tried);
          yield stream.send({ type: 'response.created', response: base });
          yield stream.send({ type: 'response.in_progress', response: base });
          let finishReason: FinishReason = 'stop';
          let usage: TokenUsage | null = null;
          let costUsd = 0;
          try {
            for (; !step.done; step = await iterator.next()) {
              const event = step.value;
              if (event.type === 'model' || (event.type !== 'usage' && event.choice !== 0)) continue;
              if (event.type === 'finish') finishReason = event.finishReason;
              else if (event.type === 'usage') ({ usage, costUsd } = event);
              else yield* stream.of(event);
            }
            // A generation its client abandoned ends without usage: nothing more is sent or saved.
            if (!usage) return;
            // An answer with neither text nor calls is one empty message, as when not streamed.
            if (stream.items.length === 0) yield* stream.openMessage();
            yield* stream.finished(await finish({ items: stream.items, finishReason, usage, costUsd }));
          } catch (error) {
            if (context.signal.aborted) return;
            yield stream.failed(base, streamFailure(error, context));
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

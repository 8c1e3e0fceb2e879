// Fallback models: a request may name models to try in turn when its model's provider fails before the first token
// with a rate limit or an outage ("Fallbacks" in docs/engine.md). Each is checked as the request's model is before any
// call; the attempts are made in order, each admitted, called and accounted on its own (the engine's `attempt`).
import type { Logger } from 'pino';
import { Problem, validationFailed } from '../../platform/problems.ts';
import { missingCapability } from './capabilities.ts';
import type { Catalogue } from './catalogue.ts';
import { type Candidate, fitModel, type PromptCount } from './fit.ts';
import type { EngineMessage, GenerationEvent, GenerationRequest, ModelTried } from './generation.ts';
import type { PreparedGeneration } from './middleware.ts';

/** The failures worth trying another model for: the provider's rate limit and its outages (5xx, timeout, no connection). */
const FALLBACK_CODES = new Set(['upstream_rate_limited', 'upstream_unavailable']);

/** One attempt at a candidate: the call admitted, made and accounted; its events (the first may throw). */
export type Attempt = (
  candidate: Candidate,
  call: GenerationRequest & { maxOutputTokens: number },
) => Promise<AsyncGenerator<GenerationEvent>>;

/**
 * Fallback model `i` of the request, checked as the request's model is, the problem pointing at `/models/<i>`: not
 * in the catalogue, not a chat model, or unable to serve the request (a capability it needs, the output limit, the
 * context window) is refused; one this server cannot call is skipped (a list names models for any deployment).
 */
export function fallbackCandidate(
  catalogue: Catalogue,
  id: string,
  i: number,
  request: GenerationRequest,
  messages: EngineMessage[],
  prompt?: PromptCount,
): Candidate | ModelTried {
  const pointer = `/models/${i}`;
  const model = catalogue.get(id);
  if (!model)
    throw new Problem('model_not_found', `No model ${id} in the catalogue; GET /v1/models lists them.`, {
      errors: [{ pointer, detail: 'is not a model of the catalogue' }],
    });
  const refuse = (detail: string) => validationFailed([{ pointer, detail }]);
  if (id === request.model) throw refuse(`${id} is the request's model; a fallback is another model`);
  if (!model.capabilities.includes('chat'))
    throw refuse(`${id} has no chat capability; GET /v1/models?capability=chat lists the chat models`);
  if (!catalogue.available(model)) return { model: id, code: 'model_unavailable', status: 422 };
  const missing = missingCapability(model, request);
  if (missing) throw refuse(`${id} lacks the ${missing} capability this request needs`);
  if (request.maxOutputTokens != null && request.maxOutputTokens > model.max_output_tokens)
    throw refuse(`${id} writes at most ${model.max_output_tokens} tokens, fewer than the request's output budget`);
  const fitted = fitModel(model, request, messages, prompt);
  if (!fitted) throw refuse(`${id} has a context window of ${model.context_window} tokens, too small for this request`);
  return fitted;
}

/**
 * Calls the candidates in order until one gives its first event: a candidate that fails before it with a rate limit
 * or an outage (after no retries: the next model is the retry; the last one gets the server's retries) gives way to
 * the next. What one streamed is the client's, so a failure after its first event ends the generation.
 */
export async function* withFallbacks(
  candidates: (Candidate | ModelTried)[],
  generation: PreparedGeneration,
  attempt: Attempt,
  logger: Logger,
): AsyncGenerator<GenerationEvent> {
  const { request } = generation;
  const tried: ModelTried[] = [];
  const lastCallable = candidates.findLastIndex((candidate) => 'promptTokens' in candidate);
  for (const [i, candidate] of candidates.entries()) {
    // A model this server cannot call is listed as skipped, in its place.
    if (!('promptTokens' in candidate)) {
      tried.push(candidate);
      continue;
    }
    const { model, maxOutputTokens } = candidate;
    const last = i === lastCallable;
    const events = await attempt(candidate, {
      ...generation.request,
      maxOutputTokens,
      maxRetries: last ? request.maxRetries : 0,
      reasoningEffort: model.capabilities.includes('reasoning') ? request.reasoningEffort : null,
    });
    let first: IteratorResult<GenerationEvent>;
    try {
      first = await events.next();
    } catch (error) {
      if (last || request.signal.aborted || !(error instanceof Problem) || !FALLBACK_CODES.has(error.code)) throw error;
      logger.info({ model: model.id, code: error.code }, 'a model failed before its first token; trying the next one');
      tried.push({ model: model.id, code: error.code, status: error.status });
      continue;
    }
    // Closed whatever its reader does: a reader that stops at one of the first two events (the policy blocking the
    // first text) must still end the call and record its usage.
    try {
      yield { type: 'model', model, tried };
      if (first.done) return;
      yield first.value;
      yield* events;
    } finally {
      await events.return(undefined);
    }
    return;
  }
}

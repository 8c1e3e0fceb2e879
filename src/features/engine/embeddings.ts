// Embeddings through the engine: `engine.embed(request)` is the one way anything embeds (POST /v1/embeddings,
// knowledge-base chunks and search queries). It checks the request against the model (its per-input token limit, the
// vector lengths it can give), calls the provider's AI SDK embedding model (`doEmbed`, as the chat path calls
// `doStream`) in batches the provider accepts, retrying what the provider calls retryable, and records one usage row
// per request (feature as given, input tokens only), priced from the catalogue, whatever happened: what was embedded
// before a failure is billed.
import type { EmbeddingModelV4 } from '@ai-sdk/provider';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Metrics } from '../../platform/metrics.ts';
import { Problem, validationFailed } from '../../platform/problems.ts';
import type { Database } from '../../storage/schema.ts';
import type { CatalogueEntry } from './catalogue-entry.ts';
import type { UsageFeature } from './generation.ts';
import { providerSpan, recordProviderCall } from './observability.ts';
import { priceOf } from './pricing.ts';
import { providerOutcome, upstreamProblem } from './provider-problems.ts';
import type { ProvidersConfig } from './providers/registry.ts';
import { withRetries } from './retries.ts';
import { recordUsage } from './usage-records.ts';

/** OpenAI's limit of tokens in one embeddings request, which the engine keeps to in each call of every provider. */
export const MAX_TOKENS_PER_CALL = 300_000;

export interface EmbeddingRequest {
  workspaceId: string;
  /** The API key the call is made with (usage by key); null for work no key started. */
  apiKeyId: string | null;
  /** The project the embeddings are for (its spend limit applies); null or absent for none. */
  projectId?: string | null;
  feature: UsageFeature;
  /** A catalogue id of a model with the `embeddings` capability. */
  model: string;
  inputs: string[];
  /** The tokens of each input, when the caller has counted them (countTokensEach); counted by the engine otherwise. */
  inputTokens?: number[];
  /** The vectors' length, for models that let it be chosen; the model's own when left out. */
  dimensions?: number | null;
  /** Where an input is in the request, for a problem that names it (default `/input/<i>`). */
  inputPointer?: (index: number) => string;
  signal: AbortSignal;
  now: Date;
}

export interface Embeddings {
  model: CatalogueEntry;
  /** One vector per input, in order. */
  vectors: number[][];
  /** The tokens of the inputs, as the provider counted them (counted here when it reports none). */
  tokens: number;
  costUsd: number;
}

export interface EmbeddingServices {
  config: ProvidersConfig;
  db: Kysely<Database>;
  logger: Logger;
  metrics: Metrics;
  /** The AI SDK model of a catalogue entry, built once. */
  embeddingModel(entry: CatalogueEntry): EmbeddingModelV4;
}

/** The problem of a `dimensions` the model cannot give, or null. */
function dimensionsProblem(model: CatalogueEntry, dimensions: number): string | null {
  const range = model.dimensions_range;
  if (!range) return `${model.id} always answers ${model.dimensions} dimensions; leave dimensions out`;
  if (dimensions < range.min || dimensions > range.max)
    return `must be from ${range.min} to ${range.max} for ${model.id}`;
  return null;
}

/** Inputs in consecutive batches of at most `maxCount` inputs and MAX_TOKENS_PER_CALL tokens. */
function batches(tokens: number[], maxCount: number): Array<{ start: number; end: number; tokens: number }> {
  const found: Array<{ start: number; end: number; tokens: number }> = [];
  let start = 0;
  let sum = 0;
  tokens.forEach((count, i) => {
    if (i > start && (i - start >= maxCount || sum + count > MAX_TOKENS_PER_CALL)) {
      found.push({ start, end: i, tokens: sum });
      start = i;
      sum = 0;
    }
    sum += count;
  });
  if (tokens.length > start) found.push({ start, end: tokens.length, tokens: sum });
  return found;
}

/** Embeds the request's inputs with `model` (found and checked for the capability by the engine). */
export async function embedWith(
  services: EmbeddingServices,
  model: CatalogueEntry,
  request: EmbeddingRequest,
  counted: number[],
): Promise<Embeddings> {
  const pointer = request.inputPointer ?? ((index: number) => `/input/${index}`);
  const dimensions = request.dimensions ?? undefined;
  if (dimensions !== undefined) {
    const problem = dimensionsProblem(model, dimensions);
    if (problem) throw validationFailed([{ pointer: '/dimensions', detail: problem }]);
  }
  const tooLong = counted.flatMap((tokens, index) =>
    tokens > model.context_window
      ? [
          {
            pointer: pointer(index),
            detail: `is ${tokens} tokens; ${model.id} takes at most ${model.context_window} tokens an input`,
          },
        ]
      : [],
  );
  if (tooLong.length > 0) throw validationFailed(tooLong.slice(0, 100));
  if (request.inputs.length === 0) return { model, vectors: [], tokens: 0, costUsd: 0 };

  const embeddingModel = services.embeddingModel(model);
  const maxPerCall = Math.min(2048, (await embeddingModel.maxEmbeddingsPerCall) ?? 2048);
  const timeout = AbortSignal.timeout(services.config.timeoutMs);
  const signal = AbortSignal.any([request.signal, timeout]);
  const vectors: number[][] = [];
  let tokens = 0;
  try {
    for (const batch of batches(counted, maxPerCall)) {
      const values = request.inputs.slice(batch.start, batch.end);
      let result: Awaited<ReturnType<EmbeddingModelV4['doEmbed']>>;
      const startedAt = performance.now();
      const seconds = () => (performance.now() - startedAt) / 1000;
      const span = providerSpan({ operation: 'embeddings', provider: model.provider, model: model.id });
      try {
        result = await withRetries(
          () =>
            embeddingModel.doEmbed({
              values,
              dimensions,
              abortSignal: signal,
              // The sandbox reports the tokens counted here (an input given as token ids is as many tokens as ids).
              providerOptions: { sandbox: { inputTokens: counted.slice(batch.start, batch.end) } },
            }),
          services.config.maxRetries,
          signal,
        );
      } catch (error) {
        // A problem of our own (a worker thread that ended: 503 service_unavailable) is answered as it is.
        const problem = error instanceof Problem ? error : upstreamProblem(error, model, timeout.aborted);
        recordProviderCall(
          services.metrics,
          model.id,
          model.provider,
          request.signal.aborted ? 'aborted' : providerOutcome(problem, timeout.aborted),
          seconds(),
        );
        // The provider's HTTP status on the span (failSpan), with our code for it.
        span.fail(error, problem.code);
        span.end(() => ({ usage: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 }, costUsd: 0 }));
        throw problem;
      }
      recordProviderCall(services.metrics, model.id, model.provider, 'ok', seconds());
      span.end(() => {
        const used = { inputTokens: result.usage?.tokens ?? batch.tokens, cachedInputTokens: 0, outputTokens: 0 };
        return { usage: used, costUsd: priceOf(model, used) };
      });
      if (result.embeddings.length !== values.length) {
        throw upstreamProblem(
          new Error(`it answered ${result.embeddings.length} embeddings for ${values.length} inputs`),
          model,
          false,
        );
      }
      vectors.push(...result.embeddings);
      // What the provider reported, else (Google reports none) what was counted here.
      tokens += result.usage?.tokens ?? batch.tokens;
    }
  } finally {
    // One row for the request: nothing when nothing was embedded (a call refused costs nothing).
    const usage = { inputTokens: tokens, cachedInputTokens: 0, outputTokens: 0 };
    await recordUsage(services, model, request, [{ usage, costUsd: priceOf(model, usage) }]);
  }
  return {
    model,
    vectors,
    tokens,
    costUsd: priceOf(model, { inputTokens: tokens, cachedInputTokens: 0, outputTokens: 0 }),
  };
}

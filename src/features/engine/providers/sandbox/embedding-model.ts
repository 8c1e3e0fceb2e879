// The sandbox embedding model (`sandbox-embedding`) as an AI SDK model, so that the engine calls it as it calls a
// provider's: the vectors of embedding.ts, and the inputs' tokens counted with o200k_base (tokens.ts). Long inputs are
// embedded in worker threads of their own (embedding-worker.ts), off the event loop.
import type { EmbeddingModelV4, EmbeddingModelV4CallOptions, EmbeddingModelV4Result } from '@ai-sdk/provider';
import { workerPool } from '../../../../platform/worker-pool.ts';
import { countTokensEach, lengthOf, OFF_LOOP_CHARS } from '../../text-pool.ts';
import { countTokens } from '../../tokens.ts';
import { SANDBOX_EMBEDDING_DIMENSIONS, SANDBOX_EMBEDDING_MAX_DIMENSIONS, sandboxEmbedding } from './embedding.ts';
import type * as EmbeddingWorker from './embedding-worker.ts';

/** Runs one of embedding-worker.ts's functions in a pool of threads. */
const offLoop = workerPool<typeof EmbeddingWorker>(new URL('./embedding-worker.ts', import.meta.url));

/** The sandbox embedding model as an AI SDK model, so that the engine calls it as it calls a provider's. */
export function sandboxEmbeddingModel(modelId: string): EmbeddingModelV4 {
  return {
    specificationVersion: 'v4',
    provider: 'sandbox',
    modelId,
    maxEmbeddingsPerCall: 2048,
    supportsParallelCalls: true,
    async doEmbed(options: EmbeddingModelV4CallOptions): Promise<EmbeddingModelV4Result> {
      options.abortSignal?.throwIfAborted();
      const dimensions = options.dimensions ?? SANDBOX_EMBEDDING_DIMENSIONS;
      if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > SANDBOX_EMBEDDING_MAX_DIMENSIONS) {
        throw new RangeError(
          `sandbox-embedding: dimensions must be an integer from 1 to ${SANDBOX_EMBEDDING_MAX_DIMENSIONS}, got ${dimensions}`,
        );
      }
      const values = options.values;
      // The engine's count of each input, when it gives one (it has counted them, and an input it was given as token
      // ids is as many tokens as ids); else counted here.
      const given = (options.providerOptions?.sandbox as { inputTokens?: unknown } | undefined)?.inputTokens;
      const counted =
        Array.isArray(given) && given.length === values.length && given.every((n) => Number.isInteger(n))
          ? (given as number[]).reduce((sum, n) => sum + n, 0)
          : undefined;
      // Long texts are embedded in the pool and counted in the text pool, off the event loop.
      if (lengthOf(values) >= OFF_LOOP_CHARS) {
        const [embeddings, tokens] = await Promise.all([
          offLoop('embedEach', { texts: values, dimensions }),
          counted ?? countTokensEach(values).then((each) => each.reduce((sum, n) => sum + n, 0)),
        ]);
        return { embeddings, usage: { tokens }, warnings: [] };
      }
      return {
        embeddings: values.map((value) => sandboxEmbedding(value, dimensions)),
        usage: { tokens: counted ?? values.reduce((sum, value) => sum + countTokens(value), 0) },
        warnings: [],
      };
    },
  };
}

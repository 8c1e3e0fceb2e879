// POST /v1/embeddings, wire-compatible with OpenAI's Embeddings API: its inputs as texts or token ids
// (embedding-inputs.ts), the request's limits (OpenAI's: 2,048 inputs, 300,000 tokens in all; each input within the
// model's context window, checked by the engine), then the engine's vectors as numbers or as base64 of little-endian
// float32, with the usage and its cost.
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import type { RequestContext } from '../../platform/context.ts';
import { validationFailed } from '../../platform/problems.ts';
import { MAX_TOKENS_PER_CALL, tokens } from '../engine/index.ts';
import { embeddingInputs } from './embedding-inputs.ts';

type Embedding = components['schemas']['Embedding'];

/** The vector as OpenAI's `base64` encoding: its float32 values, little-endian, in base64. */
export function base64Vector(vector: Float32Array): string {
  const bytes = new DataView(new ArrayBuffer(vector.length * 4));
  vector.forEach((value, i) => {
    bytes.setFloat32(i * 4, value, true);
  });
  return Buffer.from(bytes.buffer).toString('base64');
}

export const embeddingHandlers = {
  async createEmbedding(request, context) {
    const body = request.body;
    const engine = context.platform.services.engine;
    const inputs = embeddingInputs(body.input);
    // The model first: a chat model is refused before its inputs are counted.
    engine.model(body.model, 'embeddings');
    // Texts counted up to the limit only (past it the answer is the same refusal), long inputs off the event loop;
    // an input of token ids is as many tokens as it has ids.
    const inputTokens = inputs.ids
      ? inputs.ids.map((ids) => ids.length)
      : await tokens.countTokensEach(inputs.texts, MAX_TOKENS_PER_CALL);
    const total = inputTokens.reduce((sum, tokens) => sum + tokens, 0);
    if (total > MAX_TOKENS_PER_CALL)
      throw validationFailed([
        {
          pointer: '/input',
          detail: `is over ${MAX_TOKENS_PER_CALL} tokens in all; at most ${MAX_TOKENS_PER_CALL} tokens a request`,
        },
      ]);

    const embedded = await engine.embed({
      workspaceId: context.caller.workspace.id,
      apiKeyId: context.caller.apiKey.id,
      feature: 'embeddings',
      model: body.model,
      // Token ids are embedded as the text they stand for (the models take text), counted as the ids they are.
      inputs: inputs.ids ? await tokens.decodeTokenIdsEach(inputs.ids) : inputs.texts,
      inputTokens,
      dimensions: body.dimensions ?? null,
      inputPointer: inputs.pointer,
      signal: context.signal,
      now: context.now,
    });
    const base64 = body.encoding_format === 'base64';
    const data = embedded.vectors.map((vector, index): Embedding => {
      // Float32, as the providers' own answers are: the numbers and the base64 of one vector are the same values.
      const values = Float32Array.from(vector);
      return { object: 'embedding', index, embedding: base64 ? base64Vector(values) : Array.from(values) };
    });
    return {
      status: 200,
      contentType: 'application/json',
      body: {
        object: 'list',
        data,
        model: embedded.model.id,
        usage: { prompt_tokens: embedded.tokens, total_tokens: embedded.tokens },
        cost_usd: embedded.costUsd,
      },
    };
  },
} satisfies Pick<Handlers<RequestContext>, 'createEmbedding'>;

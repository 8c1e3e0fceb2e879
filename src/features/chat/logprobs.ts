// Log probabilities on the Chat Completions wire: what a request asks for (`logprobs`, `top_logprobs`) as the engine
// takes it, and the engine's tokens as a choice's or a chunk's `logprobs` object.
import type { components } from '../../../generated/openapi.ts';
import { validationFailed } from '../../platform/problems.ts';
import type { TokenLogprob } from '../engine/index.ts';

type Schemas = components['schemas'];

/** How many alternatives the request asks for at each position (0 to 20), or null when it asks for no logprobs. */
export function logprobsAsked(
  body: Pick<Schemas['ChatCompletionRequest'], 'logprobs' | 'top_logprobs'>,
): number | null {
  if (body.logprobs === true) return body.top_logprobs ?? 0;
  // As OpenAI: alternatives without the log probabilities they belong to are a mistake, not nothing.
  if (body.top_logprobs != null)
    throw validationFailed([{ pointer: '/top_logprobs', detail: 'is only allowed with logprobs: true' }]);
  return null;
}

/** Tokens as OpenAI's `logprobs` of a choice or a chunk (no model here refuses in a separate field). */
export function wireLogprobs(tokens: readonly TokenLogprob[]): Schemas['ChatCompletionLogprobs'] {
  return {
    content: tokens.map(({ token, logprob, bytes, topLogprobs }) => ({
      token,
      logprob,
      bytes,
      top_logprobs: topLogprobs,
    })),
    refusal: null,
  };
}

// Whether a request fits a model's context window, and the room it leaves the answer: the check the engine makes of
// the request's model and of each fallback model before any call.
import type { CatalogueEntry } from './catalogue-entry.ts';
import type { EngineMessage, GenerationRequest } from './generation.ts';
import { toolsOf } from './prompt.ts';
import { countTokensEach, lengthOf, OFF_LOOP_CHARS } from './text-pool.ts';
import { countedText, countPromptTokens, countTokens, promptImageTokens } from './tokens.ts';

/** A model of a generation, with what it leaves for the answer. */
export interface Candidate {
  model: CatalogueEntry;
  /** Counted when first asked (fitModel). */
  promptTokens: () => number;
  maxOutputTokens: number;
}

/** The tokens of a prompt's messages (each as countedText, framing aside) and of its tools as JSON. */
export interface PromptCount {
  messages: number;
  tools: number;
}

/**
 * A long prompt's tokens, counted now in the text pool (off the event loop, as countTokensEach counts), for the
 * context-window check and the usage to use rather than counting in place; undefined for a prompt short enough to be
 * counted in place when asked.
 */
export async function countLongPrompt(
  request: GenerationRequest,
  messages: EngineMessage[],
): Promise<PromptCount | undefined> {
  const texts = messages.map(countedText);
  const tools = request.tools?.length ? JSON.stringify(request.tools) : '';
  if (lengthOf(texts) + tools.length < OFF_LOOP_CHARS) return undefined;
  const counts = await countTokensEach([...texts, tools]);
  return { messages: counts.slice(0, -1).reduce((sum, n) => sum + n, 0), tools: counts.at(-1) ?? 0 };
}

/**
 * The prompt's tokens as the model counts them: the messages, the images, the tools it is offered. A long prompt's
 * texts were counted before (`counted`, countLongPrompt).
 */
export function promptTokens(
  model: CatalogueEntry,
  request: GenerationRequest,
  messages: EngineMessage[],
  counted?: PromptCount,
): number {
  const tools = toolsOf(request, model);
  if (counted)
    return (
      3 + 3 * messages.length + counted.messages + promptImageTokens(messages) + (tools.length > 0 ? counted.tools : 0)
    );
  return (
    countPromptTokens(messages.map((message) => ({ content: countedText(message) }))) +
    promptImageTokens(messages) +
    (tools.length > 0 ? countTokens(JSON.stringify(tools)) : 0)
  );
}

/**
 * At least the prompt's tokens, without counting them: a token of the encoding is at least one byte of UTF-8, so the
 * bytes of what `promptTokens` counts bound its count.
 */
function promptTokensBound(model: CatalogueEntry, request: GenerationRequest, messages: EngineMessage[]): number {
  const tools = toolsOf(request, model);
  let bound = 3 + promptImageTokens(messages) + (tools.length > 0 ? Buffer.byteLength(JSON.stringify(tools)) : 0);
  for (const message of messages) bound += 3 + Buffer.byteLength(countedText(message));
  return bound;
}

/**
 * The model with the room the request leaves it (its output limit), or null when the request does not fit its
 * context window. Counting the prompt's tokens costs more than the rest of a call's preparation, so they are
 * counted here only when the bound of them leaves the request near the context window (where the count decides);
 * otherwise when first asked (a spend limit's reservation, the usage of a call cut short).
 */
export function fitModel(
  model: CatalogueEntry,
  request: GenerationRequest,
  messages: EngineMessage[],
  prompt?: PromptCount,
): Candidate | null {
  const wanted = request.maxOutputTokens ?? model.max_output_tokens;
  const bound = promptTokensBound(model, request, messages);
  if (model.context_window - bound >= Math.max(1, wanted)) {
    // With at least the room the bound leaves, the exact count gives the same answer: it fits, with `wanted`.
    let counted: number | undefined;
    return {
      model,
      promptTokens: () => (counted ??= promptTokens(model, request, messages, prompt)),
      maxOutputTokens: wanted,
    };
  }
  const counted = promptTokens(model, request, messages, prompt);
  const room = model.context_window - counted;
  const maxOutputTokens = request.maxOutputTokens ?? Math.min(model.max_output_tokens, room);
  return room < 1 || maxOutputTokens > room ? null : { model, promptTokens: () => counted, maxOutputTokens };
}

// Token counting where a provider does not report it: before a call (the context-window check), for the sandbox
// models, and for the part of a stream generated before its client went away. OpenAI's o200k_base encoding, exact
// for current OpenAI models and a close estimate for the others (their own counts, when reported, are billed).
import { decode, encode } from 'gpt-tokenizer/encoding/o200k_base';

export function countTokens(text: string): number {
  return text.length === 0 ? 0 : encode(text).length;
}

/** The first `max` tokens of `text`, and whether it was cut. */
export function truncateTokens(text: string, max: number): { text: string; truncated: boolean } {
  const tokens = encode(text);
  if (tokens.length <= max) return { text, truncated: false };
  return { text: decode(tokens.slice(0, max)), truncated: true };
}

/**
 * The prompt tokens of a conversation as OpenAI counts chat messages: each message's content, plus 3 tokens of
 * framing per message and 3 that prime the answer.
 */
export function countPromptTokens(messages: ReadonlyArray<{ content: string }>): number {
  let total = 3;
  for (const message of messages) total += 3 + countTokens(message.content);
  return total;
}

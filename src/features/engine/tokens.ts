// Token counting where a provider does not report it: before a call (the context-window check), for the sandbox
// models, and for the part of a stream generated before its client went away. OpenAI's o200k_base encoding, exact
// for current OpenAI models and a close estimate for the others (their own counts, when reported, are billed).
import { createRequire } from 'node:module';

type Encoding = typeof import('gpt-tokenizer/encoding/o200k_base');
let o200k: Encoding | undefined;
/**
 * The encoding, loaded on first use: its tables are 16 MB of heap, which a server that has counted no tokens yet
 * (most of its idle life, and every process that serves no content) need not hold. Loading takes some 100 ms, once.
 */
function encoding(): Encoding {
  return (o200k ??= createRequire(import.meta.url)('gpt-tokenizer/encoding/o200k_base') as Encoding);
}
const encode = (text: string) => encoding().encode(text);
const decode = (tokens: number[]) => encoding().decode(tokens);

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

// Token counting where a provider does not report it: before a call (the context-window check), for the sandbox
// models, and for the part of a stream generated before its client went away. OpenAI's o200k_base encoding, exact
// for current OpenAI models and a close estimate for the others (their own counts, when reported, are billed).
import { createRequire } from 'node:module';
import type { EngineMessage } from './generation.ts';
import { imageInfo, imageTokens } from './image-info.ts';

type Encoding = typeof import('gpt-tokenizer/encoding/o200k_base');
let o200k: Encoding | undefined;
/**
 * The encoding, loaded on first use: its tables take much heap, which a server that has counted no tokens yet (most
 * of its idle life, and every process that serves no content) need not hold, and loading them takes a while, once.
 */
function encoding(): Encoding {
  return (o200k ??= createRequire(import.meta.url)('gpt-tokenizer/encoding/o200k_base') as Encoding);
}
// Text that spells a special token (`<|endoftext|>`) is a user's text, counted as the characters it is: the
// encoding's default refuses it with an error.
const AS_TEXT = { disallowedSpecial: new Set<string>() };
const encode = (text: string) => encoding().encode(text, AS_TEXT);
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

/** A message as text, for its token count: its text, its tool calls' names and arguments. */
export function countedText(message: EngineMessage): string {
  if (message.role === 'assistant')
    return message.content + (message.toolCalls ?? []).map((call) => call.name + call.arguments).join('');
  if (typeof message.content === 'string') return message.content;
  return message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** The prompt tokens of the images, by OpenAI's rule for its vision models (image-info.ts; an image of unknown size counts 85). */
export function promptImageTokens(messages: EngineMessage[]): number {
  let total = 0;
  for (const message of messages) {
    if (message.role !== 'user' || typeof message.content === 'string') continue;
    for (const part of message.content)
      if (part.type === 'image')
        total += imageTokens(part.data instanceof URL ? null : imageInfo(part.data), part.detail);
  }
  return total;
}

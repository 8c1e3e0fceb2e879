// Token ids as OpenAI's Embeddings API takes them (`input` as arrays of ids): ids of cl100k_base, the encoding of
// OpenAI's embedding models, which OpenAI's tokenizer (tiktoken) and LangChain also use for a model they do not know.
// Every embedding model here takes them as the text they stand for (the AI SDK's embedding models take text).
import { createRequire } from 'node:module';

/** The highest id of cl100k_base's ordinary tokens (the contract's maximum); those above are special tokens. */
export const MAX_TOKEN_ID = 100_255;

let table: (string | number[])[] | undefined;

/**
 * The encoding's table of token bytes (a token's text, or the bytes of a token that holds part of a character),
 * loaded by the first request that sends ids.
 */
function tokenTable(): (string | number[])[] {
  return (table ??= createRequire(import.meta.url)('gpt-tokenizer/bpeRanks/cl100k_base').default as (
    | string
    | number[]
  )[]);
}

/**
 * The text of token ids (0 to MAX_TOKEN_ID). Bytes that form no whole character (ids cut inside one) read as U+FFFD.
 * Read from the table rather than with the package's decode, which keeps the bytes of a character cut at the end of
 * one call for the start of its next call, any caller's.
 */
export function decodeTokenIds(ids: readonly number[]): string {
  const tokens = tokenTable();
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let cut: number[] = [];
  for (const id of ids) {
    const token = Number.isInteger(id) && id >= 0 && id <= MAX_TOKEN_ID ? tokens[id] : undefined;
    if (token === undefined) throw new RangeError(`${id} is not a token id of cl100k_base`);
    if (typeof token !== 'string') {
      cut.push(...token);
      continue;
    }
    if (cut.length > 0) {
      parts.push(decoder.decode(Uint8Array.from(cut)));
      cut = [];
    }
    parts.push(token);
  }
  if (cut.length > 0) parts.push(decoder.decode(Uint8Array.from(cut)));
  return parts.join('');
}

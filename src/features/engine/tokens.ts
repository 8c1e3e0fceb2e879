// Token counting where a provider does not report it: before a call (the context-window check), for the sandbox
// models, and for the part of a stream generated before its client went away. OpenAI's o200k_base encoding, exact
// for current OpenAI models and a close estimate for the others (their own counts, when reported, are billed).
import { createRequire } from 'node:module';
import type { EngineMessage } from './generation.ts';
import { imageInfo, imageTokens } from './image-info.ts';

type Encoding = typeof import('gpt-tokenizer/encoding/o200k_base');
let o200k: Encoding | undefined;
/**
 * The encoding, loaded by the first call that needs it: its tables take much heap, which a process that counts no
 * tokens (the command-line tool, a worker that runs no generation yet) need not hold. A server loads it before it says
 * it is ready (loadEncoding, the engine feature's preload), since loading takes a while, once.
 */
function encoding(): Encoding {
  return (o200k ??= createRequire(import.meta.url)('gpt-tokenizer/encoding/o200k_base') as Encoding);
}

/** Loads the encoding now (a server, before it says it is ready). */
export function loadEncoding(): void {
  encoding();
}
// Text that spells a special token (`<|endoftext|>`) is a user's text, counted as the characters it is: the
// encoding's default refuses it with an error.
const AS_TEXT = { disallowedSpecial: new Set<string>() };
const encode = (text: string) => encoding().encode(text, AS_TEXT);

let byteTable: (string | number[])[] | undefined;
const utf8 = new TextEncoder();

/**
 * The UTF-8 bytes of a token of the encoding (some tokens hold part of a character), from the encoding's own table
 * (the one the encoder holds).
 */
export function tokenBytes(token: number): Uint8Array {
  byteTable ??= createRequire(import.meta.url)('gpt-tokenizer/bpeRanks/o200k_base').default as (string | number[])[];
  const entry = byteTable[token];
  if (entry === undefined) throw new RangeError(`${token} is not a token of o200k_base`);
  return typeof entry === 'string' ? utf8.encode(entry) : Uint8Array.from(entry);
}

/**
 * The text of tokens; bytes of a character cut at the end are left out. Not the package's decode: it keeps those
 * bytes in a decoder it shares between calls, so they would begin the text of its next call, any caller's.
 */
function decode(tokens: number[]): string {
  const bytes = tokens.map(tokenBytes);
  const joined = new Uint8Array(bytes.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of bytes) {
    joined.set(part, at);
    at += part.length;
  }
  return new TextDecoder().decode(joined, { stream: true });
}

/**
 * The longest slice of text handed to the encoder. Byte-pair encoding costs the square of a piece's length, and a
 * piece is a whole word (letters with no space, CJK text, a run of one character): encoding slices of at most this
 * many characters keeps the cost linear in the text.
 */
export const MAX_SLICE_CHARS = 256;

const SPACE = 0x20;
const isWhitespace = (code: number) => /\s/.test(String.fromCharCode(code));
const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/**
 * `text` in slices of at most MAX_SLICE_CHARS characters, joined they are `text`. A slice ends before a space that
 * follows a non-space where one is in reach: the encoding's pre-tokenizer starts a piece there whatever comes next,
 * so the tokens of such slices are the text's own. Only a run of more than MAX_SLICE_CHARS characters with no such
 * space (a long word, a run of whitespace) is cut inside, never between the halves of a surrogate pair; its count is
 * then an estimate, at most about one token a cut more than the exact one.
 */
export function* tokenSlices(text: string): Generator<string> {
  let start = 0;
  while (text.length - start > MAX_SLICE_CHARS) {
    let cut = -1;
    for (let i = start + MAX_SLICE_CHARS; i > start && cut === -1; i--)
      if (text.charCodeAt(i) === SPACE && !isWhitespace(text.charCodeAt(i - 1))) cut = i;
    if (cut === -1) {
      cut = start + MAX_SLICE_CHARS;
      if (isHighSurrogate(text.charCodeAt(cut - 1))) cut -= 1;
    }
    yield text.slice(start, cut);
    start = cut;
  }
  if (start < text.length) yield text.slice(start);
}

/**
 * The tokens of `text` (tokenSlices: exact for text of words, an estimate for words over MAX_SLICE_CHARS). With
 * `limit`, counting stops once the count exceeds it, and the answer is then a number over `limit`, not the count:
 * a check against a limit costs the limit, not the text.
 */
export function countTokens(text: string, limit = Number.POSITIVE_INFINITY): number {
  let total = 0;
  for (const slice of tokenSlices(text)) {
    total += encode(slice).length;
    if (total > limit) return total;
  }
  return total;
}

/** The token ids of `text`, slice by slice as countTokens counts them: as many as it counts. */
export function encodeTokens(text: string): number[] {
  const tokens: number[] = [];
  for (const slice of tokenSlices(text)) for (const token of encode(slice)) tokens.push(token);
  return tokens;
}

/** The first `max` tokens of `text`, and whether it was cut. */
export function truncateTokens(text: string, max: number): { text: string; truncated: boolean } {
  // The slices' tokens are their own, so the text of the whole slices kept is the text up to the slice that is cut:
  // only that slice's kept tokens are decoded.
  let kept = 0;
  let at = 0;
  for (const slice of tokenSlices(text)) {
    const encoded = encode(slice);
    if (kept + encoded.length > max)
      return { text: text.slice(0, at) + decode(encoded.slice(0, max - kept)), truncated: true };
    kept += encoded.length;
    at += slice.length;
  }
  return { text, truncated: false };
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

// Log probabilities of generated tokens, in the shape of OpenAI's Chat Completions (`logprobs.content`): each token
// with its log probability, its UTF-8 bytes and the most likely tokens at its position. Providers give them in that
// shape (OpenAI's chunks and answers, the sandbox's metadata), so one reader (logprobsOf) takes them from any of them.
import type { JSONObject } from '@ai-sdk/provider';
import type { TokenLogprob, TopLogprob } from './generation.ts';
import { encodeTokens, tokenBytes } from './tokens.ts';

/** The most alternatives a request may ask for at each position (OpenAI's bound of `top_logprobs`). */
export const MAX_TOP_LOGPROBS = 20;

/** OpenAI's value for a token too unlikely to have a log probability of its own. */
export const UNLIKELY_LOGPROB = -9999;

const strict = new TextDecoder('utf-8', { fatal: true });

/**
 * A token's text from its bytes: the characters they are, or, when they are not whole characters (a token holding
 * part of an emoji), `bytes:` and each byte as `\xNN`.
 */
export function tokenText(bytes: Uint8Array): string {
  try {
    return strict.decode(bytes);
  } catch {
    return `bytes:${Array.from(bytes, (byte) => `\\x${byte.toString(16).padStart(2, '0')}`).join('')}`;
  }
}

/** The bytes a token's text stands for: the escaped bytes of `bytes:\xNN…`, else its UTF-8. */
function bytesOfText(token: string): number[] {
  const escaped = /^bytes:((?:\\x[0-9a-fA-F]{2})+)$/.exec(token);
  if (escaped)
    return escaped[1]!
      .split('\\x')
      .slice(1)
      .map((hex) => Number.parseInt(hex, 16));
  return Array.from(Buffer.from(token, 'utf8'));
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A provider's log probability within OpenAI's range (its -9999 for "very unlikely"; never above certain). */
const logprobIn = (value: number) => Math.min(0, Math.max(UNLIKELY_LOGPROB, value));

function topOf(value: unknown): TopLogprob | undefined {
  if (!isRecord(value) || typeof value.token !== 'string' || typeof value.logprob !== 'number') return undefined;
  const given = value.bytes;
  const bytes =
    Array.isArray(given) && given.every((byte) => Number.isInteger(byte) && byte >= 0 && byte <= 255)
      ? (given as number[])
      : given === null
        ? null
        : bytesOfText(value.token);
  return { token: value.token, logprob: logprobIn(value.logprob), bytes };
}

/**
 * The tokens of an OpenAI-shaped list (`logprobs.content` of a chunk or an answer: `{token, logprob, bytes,
 * top_logprobs}` each), or undefined when `value` is no such list. A token without `bytes` gets those its text
 * stands for; alternatives beyond MAX_TOP_LOGPROBS are left out.
 */
export function logprobsOf(value: unknown): TokenLogprob[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const tokens: TokenLogprob[] = [];
  for (const item of value) {
    const token = topOf(item);
    if (!token) return undefined;
    const top = isRecord(item) && Array.isArray(item.top_logprobs) ? item.top_logprobs : [];
    const topLogprobs = top
      .map(topOf)
      .filter((alternative): alternative is TopLogprob => alternative !== undefined)
      .slice(0, MAX_TOP_LOGPROBS);
    tokens.push({ ...token, topLogprobs });
  }
  return tokens;
}

/** The log probabilities of an OpenAI Chat Completions chunk or answer (its first choice's), or undefined. */
export function chatLogprobsOf(body: unknown): TokenLogprob[] | undefined {
  if (!isRecord(body) || !Array.isArray(body.choices)) return undefined;
  const choice: unknown = body.choices[0];
  if (!isRecord(choice) || !isRecord(choice.logprobs)) return undefined;
  return logprobsOf(choice.logprobs.content);
}

/** A token's log probability in OpenAI's JSON shape (what the sandbox puts in its metadata). */
export function wireTokenLogprob(token: TokenLogprob): JSONObject {
  const top = (t: TopLogprob): JSONObject => ({ token: t.token, logprob: t.logprob, bytes: t.bytes });
  return { ...top(token), top_logprobs: token.topLogprobs.map(top) };
}

/**
 * The tokens of a text no model sampled (what a rule wrote in place of the model's words: a redaction), each certain
 * (log probability 0) and without alternatives.
 */
export function certainLogprobs(text: string): TokenLogprob[] {
  return encodeTokens(text).map((id) => {
    const bytes = tokenBytes(id);
    return { token: tokenText(bytes), logprob: 0, bytes: Array.from(bytes), topLogprobs: [] };
  });
}

// The sandbox models' log probabilities: derived from the answer's text by a rule (docs/engine.md, "Log
// probabilities"), never sampled, so the same answer always has the same ones. The answer is cut into the tokens the
// engine counts (o200k_base); each token's log probability follows from a hash of it and the token before it, and
// its alternatives are other tokens of the answer, then common English tokens, sharing what probability is left.
import type { TokenLogprob, TopLogprob } from '../../generation.ts';
import { tokenText, UNLIKELY_LOGPROB } from '../../logprobs.ts';
import { encodeTokens, tokenBytes } from '../../tokens.ts';
import { fnv1a } from './embedding.ts';

/** Tokens that stand in as alternatives when the answer has too few tokens of its own. */
const COMMON = [' the', ' a', ',', '.', ' and', ' to', ' of', ' in', ' is', ' for', ' that', ' with', ' on', ' it'];
const COMMON_TOKENS = (() => {
  let tokens: number[] | undefined;
  return () => (tokens ??= COMMON.flatMap((text) => encodeTokens(text)));
})();

/** A hash of `key` as a number from 0 (inclusive) to 1. */
const unit = (key: string) => fnv1a(key) / 2 ** 32;

/** Six decimals, as much as a log probability is worth; never below OpenAI's "very unlikely". */
const rounded = (logprob: number) => Math.max(UNLIKELY_LOGPROB, Math.round(logprob * 1e6) / 1e6);

/** A token's text and bytes, once per token of an answer (its alternatives recur at every position). */
type Described = Map<number, { token: string; bytes: number[] }>;

function alternative(described: Described, token: number, logprob: number): TopLogprob {
  let found = described.get(token);
  if (!found) {
    const bytes = tokenBytes(token);
    described.set(token, (found = { token: tokenText(bytes), bytes: Array.from(bytes) }));
  }
  return { token: found.token, logprob: rounded(logprob), bytes: found.bytes };
}

/** The log probabilities of the tokens of `text`, each with `top` alternatives at most (0 to 20). */
export function sandboxLogprobs(text: string, top: number): TokenLogprob[] {
  const tokens = encodeTokens(text);
  const candidates = [...new Set([...tokens, ...COMMON_TOKENS()])];
  const described: Described = new Map();
  return tokens.map((token, i) => {
    const previous = i === 0 ? -1 : tokens[i - 1]!;
    const h = unit(`${previous}:${token}`);
    // Mostly confident (h cubed), now and then a token that had rivals: from 0 down to -2.5.
    const probability = Math.exp(-2.5 * h ** 3);
    const chosen = alternative(described, token, Math.log(probability));
    if (top === 0) return { ...chosen, topLogprobs: [] };
    // The alternatives share what is left: the first half of it, the next a quarter, and so on.
    const left = 1 - probability;
    const listed = [chosen];
    let at = Math.floor(unit(`alternatives:${previous}:${token}`) * candidates.length);
    for (let k = 1; k < top && k < candidates.length; k++, at++) {
      if (candidates[at % candidates.length] === token) at++;
      const other = candidates[at % candidates.length]!;
      listed.push(alternative(described, other, left > 0 ? Math.log(left / 2 ** k) : UNLIKELY_LOGPROB));
    }
    listed.sort((a, b) => b.logprob - a.logprob);
    return { ...chosen, topLogprobs: listed };
  });
}

const strict = new TextDecoder('utf-8', { fatal: true });

/** Whether `bytes` are whole characters. */
function whole(bytes: number[]): boolean {
  try {
    strict.decode(Uint8Array.from(bytes));
    return true;
  } catch {
    return false;
  }
}

/**
 * The text of an answer with log probabilities as it streams: a token a chunk, as OpenAI's models stream, except
 * that tokens holding parts of one character go out together (a chunk's text is whole characters).
 */
export function sandboxLogprobChunks(text: string, top: number): { text: string; logprobs: TokenLogprob[] }[] {
  const chunks: { text: string; logprobs: TokenLogprob[] }[] = [];
  let bytes: number[] = [];
  let logprobs: TokenLogprob[] = [];
  for (const token of sandboxLogprobs(text, top)) {
    bytes.push(...(token.bytes ?? []));
    logprobs.push(token);
    if (!whole(bytes)) continue;
    chunks.push({ text: Buffer.from(bytes).toString('utf8'), logprobs });
    bytes = [];
    logprobs = [];
  }
  if (logprobs.length > 0) chunks.push({ text: Buffer.from(bytes).toString('utf8'), logprobs });
  return chunks;
}

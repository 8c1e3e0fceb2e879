// The work on long texts that the text pool (text-pool.ts) runs in worker threads, off the event loop.
import { decodeTokenIds } from './token-ids.ts';
import { countTokens } from './tokens.ts';

/**
 * The tokens of each text, counted until their total exceeds `limit`: then the counts end with the text that passed
 * it (its count then a number over what is left of the limit: countTokens).
 */
export function countEach({ texts, limit }: { texts: string[]; limit: number }): number[] {
  const counts: number[] = [];
  let total = 0;
  for (const text of texts) {
    const count = countTokens(text, limit - total);
    counts.push(count);
    total += count;
    if (total > limit) break;
  }
  return counts;
}

/** The text of each input of token ids. */
export function decodeEach({ inputs }: { inputs: number[][] }): string[] {
  return inputs.map(decodeTokenIds);
}

// The work on long texts that the text pool (text-pool.ts) runs in worker threads, off the event loop.
import { sandboxEmbedding } from './sandbox-embedding.ts';
import { countTokens } from './tokens.ts';

/** The tokens of each text. */
export function countEach(texts: string[]): number[] {
  return texts.map((text) => countTokens(text));
}

/** The tokens of all the texts, counted until they exceed `limit` (then a number over it). */
export function countTotal({ texts, limit }: { texts: string[]; limit: number }): number {
  let total = 0;
  for (const text of texts) {
    total += countTokens(text, limit - total);
    if (total > limit) break;
  }
  return total;
}

/** The sandbox embedding of each text. */
export function embedEach({ texts, dimensions }: { texts: string[]; dimensions: number }): number[][] {
  return texts.map((text) => sandboxEmbedding(text, dimensions));
}

// Work on long texts runs in a pool of worker threads (piscina), so that one request's text does not hold the event
// loop every other request is served on: the token counting of texts of OFF_LOOP_CHARS characters or more, and the
// decoding of OFF_LOOP_TOKEN_IDS token ids or more. Less is worked on in place, where a thread's round trip would cost
// more than the work.
import { workerPool } from '../../platform/worker-pool.ts';
import * as TextWorker from './text-worker.ts';

const { countEach, decodeEach } = TextWorker;

/** The characters (of all the texts of one call) from which the work goes to a worker thread. */
export const OFF_LOOP_CHARS = 64 * 1024;

/** The token ids (of all the inputs of one call) from which decoding them goes to a worker thread: about as much text. */
export const OFF_LOOP_TOKEN_IDS = 16 * 1024;

export const lengthOf = (texts: readonly string[]) => texts.reduce((sum, text) => sum + text.length, 0);

/** Runs one of text-worker.ts's functions in the pool. */
const offLoop = workerPool<typeof TextWorker>(new URL('./text-worker.ts', import.meta.url));

/**
 * The tokens of each text. With `limit`, counting stops once their total exceeds it: the counts then end with the
 * text that passed it, a number over what was left of the limit (a check against a limit costs the limit).
 */
export async function countTokensEach(texts: string[], limit = Number.POSITIVE_INFINITY): Promise<number[]> {
  if (lengthOf(texts) >= OFF_LOOP_CHARS) return offLoop('countEach', { texts, limit });
  return countEach({ texts, limit });
}

/** The text of each input of token ids (cl100k_base, token-ids.ts); an id outside the encoding throws a RangeError. */
export async function decodeTokenIdsEach(inputs: number[][]): Promise<string[]> {
  if (inputs.reduce((sum, ids) => sum + ids.length, 0) >= OFF_LOOP_TOKEN_IDS) return offLoop('decodeEach', { inputs });
  return decodeEach({ inputs });
}

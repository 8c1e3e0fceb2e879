import { setTimeout as sleep } from 'node:timers/promises';
import { APICallError } from '@ai-sdk/provider';
import { retryAfterSeconds } from './provider-problems.ts';

/** How long to wait before retry `attempt` (from 0): the provider's `retry-after(-ms)` when it asks for under a minute, else 2 s, 4 s, 8 s… */
function retryDelayMs(error: APICallError, attempt: number): number {
  const seconds = retryAfterSeconds(error.responseHeaders);
  const asked = seconds === undefined ? NaN : Number(seconds) * 1000;
  return asked >= 0 && asked <= 60_000 ? asked : 2000 * 2 ** attempt;
}

/**
 * Starts a call, trying again what the provider calls retryable (429, 5xx, a connection that failed) up to
 * `maxRetries` times. Only the start of a call is retried: a stream that broke after its first token is not restarted.
 */
export async function withRetries<T>(start: () => PromiseLike<T>, maxRetries: number, signal: AbortSignal): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (attempt >= maxRetries || signal.aborted || !APICallError.isInstance(error) || !error.isRetryable) throw error;
      await sleep(retryDelayMs(error, attempt), undefined, { signal });
    }
  }
}

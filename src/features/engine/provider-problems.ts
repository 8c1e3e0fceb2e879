// A provider's failure as the problem our clients get, and as the outcome the metrics count.
import { APICallError } from '@ai-sdk/provider';
import { Problem } from '../../platform/problems.ts';
import type { CatalogueEntry } from './catalogue-entry.ts';
import type { ProviderOutcome } from './observability.ts';
import { LocalContextExceeded } from './providers/local.ts';
import { promptOverContext } from './refusal.ts';

/** Seconds to wait that the provider asked for (`retry-after`, `retry-after-ms`), if it did. */
export function retryAfterSeconds(headers: Record<string, string> | undefined): string | undefined {
  if (!headers) return undefined;
  const ms = Number(headers['retry-after-ms']);
  if (Number.isFinite(ms) && ms >= 0) return String(Math.ceil(ms / 1000));
  const raw = headers['retry-after'];
  if (raw === undefined) return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return String(Math.ceil(seconds));
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : String(Math.max(0, Math.ceil((date - Date.now()) / 1000)));
}

/** A provider's failure as our problem: rate limits and outages keep their `Retry-After`; never a 500. */
export function upstreamProblem(error: unknown, model: CatalogueEntry, timedOut: boolean): Problem {
  const cause = error;
  const who = `The provider of ${model.id} (${model.provider})`;
  if (timedOut) return new Problem('upstream_unavailable', `${who} did not answer in time.`);
  if (cause instanceof LocalContextExceeded) return promptOverContext(cause.contextSize, cause.promptTokens);
  if (!APICallError.isInstance(cause)) {
    const message = cause instanceof Error ? cause.message : String(cause);
    return new Problem('upstream_unavailable', `${who} could not be reached: ${message}`.slice(0, 2000));
  }
  const status = cause.statusCode;
  const retryAfter = retryAfterSeconds(cause.responseHeaders);
  const headers: Record<string, string> = retryAfter === undefined ? {} : { 'Retry-After': retryAfter };
  const wait = retryAfter === undefined ? '' : `; retry in ${retryAfter} seconds`;
  // A successful answer whose stream broke (the connection cut mid-way) is an outage, not a refusal of the request.
  if (status !== undefined && status < 400)
    return new Problem('upstream_unavailable', `${who} broke off its answer: ${cause.message}`.slice(0, 2000));
  if (status === 429)
    return new Problem('upstream_rate_limited', `${who} is rate limiting this service${wait}.`, { headers });
  if (status === undefined || status >= 500 || status === 408) {
    return new Problem('upstream_unavailable', `${who} is unavailable (${status ?? 'no answer'})${wait}.`, { headers });
  }
  return new Problem('upstream_error', `${who} failed: ${status} ${cause.message}`.slice(0, 2000));
}

/** How a call that failed ended, for the metrics, from the problem it is answered with. */
export function providerOutcome(problem: Problem, timedOut: boolean): ProviderOutcome {
  if (timedOut) return 'timeout';
  if (problem.code === 'upstream_rate_limited') return 'rate_limited';
  if (problem.code === 'upstream_unavailable') return 'unavailable';
  if (problem.code === 'context_length_exceeded') return 'refused';
  return 'upstream_error';
}

// One delivery attempt: a POST of the raw body with the signed headers, no redirect followed, a complete answer
// within the attempt timeout (15 s, WEBHOOK_ATTEMPT_TIMEOUT_MS), connecting only to addresses the URL policy allows.
// The outcome is what an attempt records.
import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { guardedLookup, literalHostBlocked } from '../../platform/url-guard.ts';
import type { WebhookAttemptsTable } from './schema.ts';

export type AttemptError = NonNullable<WebhookAttemptsTable['error']>;

export interface AttemptOutcome {
  status: 'succeeded' | 'failed';
  responseStatusCode: number | null;
  /** The first 1,024 bytes of the answer as text. */
  responseBody: string | null;
  durationMs: number;
  error: AttemptError | null;
}

const RESPONSE_EXCERPT_BYTES = 1024;

// Keep-alive: an endpoint gets its events one after the other, so its connection is reused from one to the next.
const agents = {
  'http:': new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 256, timeout: 30_000 }),
  'https:': new https.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 256, timeout: 30_000 }),
};
const lookups = { true: guardedLookup(true), false: guardedLookup(false) };

const tlsCodes = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|EPROTO$|HOSTNAME_MISMATCH|ERR_OSSL)/;

function classify(error: NodeJS.ErrnoException, timedOut: boolean): AttemptError {
  if (timedOut) return 'timeout';
  const code = error.code ?? '';
  if (code === 'EADDRBLOCKED') return 'address_blocked';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL' || code === 'EAI_NODATA') return 'dns';
  if (code === 'ECONNREFUSED' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'EADDRNOTAVAIL')
    return 'connection_refused';
  if (tlsCodes.test(code) || /certificate|ssl|tls/i.test(error.message)) return 'tls';
  if (code === 'ETIMEDOUT') return 'timeout';
  return 'connection_reset';
}

/** Text of a response excerpt: invalid UTF-8 replaced, and no NUL (PostgreSQL text cannot hold it). */
function excerpt(bytes: Buffer): string {
  return new TextDecoder('utf-8')
    .decode(bytes)
    .replace(/\u0000/g, '\ufffd')
    .slice(0, RESPONSE_EXCERPT_BYTES);
}

/** An attempt without a complete answer within `timeoutMs` has failed (`timeout`). */
export async function sendAttempt(
  target: string,
  body: string,
  headers: Record<string, string>,
  allowLoopback: boolean,
  timeoutMs: number,
): Promise<AttemptOutcome> {
  const started = performance.now();
  // A kept-alive connection that the receiver closed while idle fails at once on reuse, before the receiver saw
  // anything: that is no answer of the receiver, so the request goes again (as Node advises). Several idle
  // connections of the pool can be stale at once; a new connection is never reused, so this ends.
  for (;;) {
    const outcome = await postOnce(target, body, headers, allowLoopback, timeoutMs, started);
    if (outcome !== 'stale_connection') return outcome;
  }
}

function postOnce(
  target: string,
  body: string,
  headers: Record<string, string>,
  allowLoopback: boolean,
  timeoutMs: number,
  started: number,
): Promise<AttemptOutcome | 'stale_connection'> {
  const duration = () => Math.min(60_000, Math.round(performance.now() - started));
  return new Promise((resolve) => {
    const failed = (error: AttemptError) =>
      resolve({ status: 'failed', responseStatusCode: null, responseBody: null, durationMs: duration(), error });
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return failed('dns');
    }
    if (
      literalHostBlocked(url, allowLoopback) ||
      (url.protocol !== 'https:' && !(allowLoopback && url.protocol === 'http:'))
    ) {
      return failed('address_blocked');
    }
    const transport = url.protocol === 'https:' ? https : http;
    let timedOut = false;
    let settled = false;
    const request = transport.request(url, {
      method: 'POST',
      agent: agents[url.protocol as 'http:' | 'https:'],
      lookup: lookups[`${allowLoopback}`] as never,
      headers: { ...headers, 'Content-Length': Buffer.byteLength(body) },
    });
    const timer = setTimeout(() => {
      timedOut = true;
      request.destroy(new Error('timeout'));
    }, timeoutMs);
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outcome();
    };
    request.on('error', (error: NodeJS.ErrnoException) =>
      finish(() => {
        const stale = request.reusedSocket && !timedOut && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
        if (stale) resolve('stale_connection');
        else failed(classify(error, timedOut));
      }),
    );
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      response.on('data', (chunk: Buffer) => {
        if (kept < RESPONSE_EXCERPT_BYTES) {
          chunks.push(chunk.subarray(0, RESPONSE_EXCERPT_BYTES - kept));
          kept += Math.min(chunk.length, RESPONSE_EXCERPT_BYTES - kept);
        }
      });
      response.on('error', (error: NodeJS.ErrnoException) => finish(() => failed(classify(error, timedOut))));
      // A connection closed before the end of the answer: no complete answer, a failed attempt.
      response.on('aborted', () => finish(() => failed(timedOut ? 'timeout' : 'connection_reset')));
      response.on('end', () =>
        finish(() => {
          const code = response.statusCode ?? 0;
          // Not an HTTP status (a broken server): no answer this API can show.
          if (code < 100 || code > 599) return failed('connection_reset');
          resolve({
            status: code >= 200 && code < 300 ? 'succeeded' : 'failed',
            responseStatusCode: code,
            responseBody: excerpt(Buffer.concat(chunks)),
            durationMs: duration(),
            error: null,
          });
        }),
      );
    });
    request.end(body);
  });
}

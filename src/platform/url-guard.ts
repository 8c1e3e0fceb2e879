// The SSRF guard of every URL the server itself connects to on someone's behalf (webhook deliveries, cited pages,
// knowledge-base crawls, chat images): https only (http where a feature allows it), and a host that resolves to
// public addresses only. A URL is checked when it is given (`checkPublicUrl`, a 422 with the feature's code) and
// every connection goes through `guardedLookup`, which checks the addresses it resolves, so a name that later
// resolves to a private address (DNS rebinding) is refused at connect time. `fetchGuarded` is one GET through it,
// each redirect hop checked as the first.
//
// WEBHOOKS_ALLOW_LOOPBACK=true (development only; the one switch for all of them) also accepts `http` and loopback
// or private (RFC 1918, unique local) targets, for servers on the developer's machine or network. Link-local (cloud
// metadata at 169.254.169.254), unspecified, multicast and reserved addresses stay refused.
import { type LookupAddress, type LookupAllOptions, lookup } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { Readable } from 'node:stream';
import ipaddr from 'ipaddr.js';
import { type ErrorCode, Problem } from './problems.ts';

const developmentRanges = new Set(['loopback', 'private', 'uniqueLocal']);

const DEVELOPMENT_HINT =
  ' For a server on this machine or network, start content-service with WEBHOOKS_ALLOW_LOOPBACK=true (development only).';

/** Whether an attempt may connect to this address. Only public unicast addresses pass in production. */
export function addressAllowed(address: string, allowLoopback: boolean): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  // ::ffff:127.0.0.1 is 127.0.0.1.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress())
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  const range = parsed.range();
  return range === 'unicast' || (allowLoopback && developmentRanges.has(range));
}

/**
 * The refusal names the rule, not the address: a caller who learned what a name resolves to could map the server's
 * internal network with it.
 */
const BLOCKED_RULE = 'an address in a private, loopback or link-local network, which this server does not call';

export class BlockedAddressError extends Error {
  readonly code = 'EADDRBLOCKED';
  constructor(hostname: string) {
    super(`${hostname} resolves to ${BLOCKED_RULE}`);
  }
}

function resolveAll(hostname: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    lookup(hostname, { all: true, verbatim: true } satisfies LookupAllOptions, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    );
  });
}

/** The URL's host without IPv6 brackets. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Checks a URL as it is set (a webhook endpoint's, a knowledge-base source's): the scheme, no credentials, and every
 * address of the host. Throws a 422 problem with `code` that says what is wrong. `http` is allowed with `allowHttp`.
 */
export async function checkPublicUrl(
  raw: string,
  options: {
    allowLoopback: boolean;
    allowHttp: boolean;
    /** NODE_ENV=production: no hint of the development setting, which cannot be set there. */
    production: boolean;
    pointer: string;
    code: ErrorCode;
    what: string;
  },
): Promise<URL> {
  const { allowLoopback, production, pointer } = options;
  // A refusal that the development setting would lift says so: it is what a developer with a local server needs.
  const refuse = (detail: string, developmentWouldAllow = false) =>
    new Problem(
      options.code,
      `The ${options.what} ${detail}.${developmentWouldAllow && !allowLoopback && !production ? DEVELOPMENT_HINT : ''}`,
      { errors: [{ pointer, detail }] },
    );
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse('is not an absolute URL');
  }
  if (url.protocol !== 'https:' && !(options.allowHttp && url.protocol === 'http:')) {
    throw refuse(options.allowHttp ? 'must use https or http' : 'must use https', url.protocol === 'http:');
  }
  if (url.username || url.password) throw refuse('must not contain credentials');
  const host = hostOf(url);
  if (isIP(host)) {
    if (!addressAllowed(host, allowLoopback))
      throw refuse(`points at ${host}, a private, loopback or link-local address`, addressAllowed(host, true));
    return url;
  }
  // In production a name that does not resolve and one that resolves to an internal address get the same answer: which
  // internal names exist is the operator's network map.
  const unreachable = `host ${host} does not resolve to a public address`;
  let addresses: LookupAddress[];
  try {
    addresses = await resolveAll(host);
  } catch {
    throw refuse(production ? unreachable : `host ${host} does not resolve`);
  }
  const blocked = addresses.find((a) => !addressAllowed(a.address, allowLoopback));
  if (blocked)
    throw refuse(
      production ? unreachable : `host ${host} resolves to ${BLOCKED_RULE}`,
      addresses.every((a) => addressAllowed(a.address, true)),
    );
  return url;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http(s).request: resolves like dns.lookup, then refuses (EADDRBLOCKED) when any address of the host
 * is not allowed. The connection goes to an address checked here, never to one resolved again later.
 */
export function guardedLookup(allowLoopback: boolean) {
  return (hostname: string, options: { all?: boolean; family?: number } | number, callback: LookupCallback): void => {
    const all = typeof options === 'object' && options.all === true;
    resolveAll(hostname).then(
      (addresses) => {
        const blocked = addresses.find((a) => !addressAllowed(a.address, allowLoopback));
        if (blocked) return callback(new BlockedAddressError(hostname), all ? [] : '', 0);
        if (all) return callback(null, addresses);
        const first = addresses[0]!;
        callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, all ? [] : '', 0),
    );
  };
}

/** For a URL whose host is an IP literal (no lookup happens): whether an attempt may connect. */
export function literalHostBlocked(url: URL, allowLoopback: boolean): string | undefined {
  const host = hostOf(url);
  return isIP(host) && !addressAllowed(host, allowLoopback) ? host : undefined;
}

const MAX_REDIRECTS = 5;
const lookups = { true: guardedLookup(true), false: guardedLookup(false) };

/**
 * A `fetch` that connects only to addresses the URL policy allows (node:http, as webhook deliveries do). It follows no
 * redirect; a string or bytes body is sent as is (the OpenID Connect token request's form).
 */
export function guardedFetch(allowPrivateNetworks: boolean): typeof fetch {
  return (input, init) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const transport = url.protocol === 'https:' ? https : http;
      const body = bodyBytes(init?.body);
      if (body === false) return reject(new TypeError('guardedFetch sends a string, bytes or a form only'));
      const request = transport.request(url, {
        method: init?.method ?? 'GET',
        // A fresh connection each time, not kept alive: these are one-off fetches of other people's servers.
        agent: false,
        lookup: lookups[`${allowPrivateNetworks}`] as never,
        headers: Object.fromEntries(new Headers(init?.headers).entries()),
        signal: init?.signal ?? undefined,
      });
      request.on('error', reject);
      request.on('response', (response) => {
        const status = response.statusCode ?? 0;
        if (status < 200 || status > 599) {
          response.destroy();
          return reject(new Error(`not an HTTP status: ${status}`));
        }
        const headers = new Headers();
        for (const [name, value] of Object.entries(response.headers))
          if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
        const empty = status === 204 || status === 205 || status === 304;
        if (empty) response.resume();
        resolve(
          new Response(empty ? null : (Readable.toWeb(response) as unknown as ReadableStream<Uint8Array>), {
            status,
            headers,
          }),
        );
      });
      request.end(body);
    });
}

function bodyBytes(body: RequestInit['body']): string | Uint8Array | undefined | false {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  if (body instanceof URLSearchParams) return body.toString();
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  return false;
}

export interface GuardedFetchOptions {
  /** The development setting (WEBHOOKS_ALLOW_LOOPBACK): also http, and loopback or private hosts. */
  allowPrivateNetworks: boolean;
  /** For the whole of the URL, redirects and body included. Default 5 s. */
  timeoutMs?: number;
  /** At most this much of the body is read. Default 2 MB. */
  maxBytes?: number;
  /**
   * Replaces the guarded transport (tests). The scheme and IP-literal checks still apply; the check of the
   * addresses a host name resolves to is the guarded transport's, so a replacement must do its own.
   */
  fetch?: typeof fetch;
  /** Also `http` to public hosts. Default: only when private networks are allowed (https only otherwise). */
  allowHttp?: boolean;
  /** Request headers (accept, user-agent); `accept-encoding: identity` is always sent. */
  headers?: Record<string, string>;
  /** Whether to read the body of a 2xx answer of this Content-Type (lower case, `''` when none). Default: always. */
  readBody?: (contentType: string) => boolean;
}

export interface GuardedResponse {
  /** The status of the last answer: a 3xx only when the redirects ran out. */
  status: number;
  /** Its Content-Type, lower case; `''` when it has none. */
  contentType: string;
  /** The start (at most `maxBytes`) of the body of a 2xx answer that `readBody` wanted; empty otherwise. */
  bytes: Uint8Array;
  /** Whether the body was longer than `maxBytes`. */
  truncated: boolean;
  /** The URL that answered, after the redirects. */
  finalUrl: string;
}

/** The URL policy refused a URL or a hop of its redirects: scheme, credentials, or a private, loopback or link-local address. */
export class UrlNotAllowedError extends Error {
  readonly url: string;
  constructor(url: string, reason: string) {
    super(`${url} ${reason}`);
    this.url = url;
  }
}

/**
 * One GET through the SSRF guard: redirects followed by hand (at most 5), each hop checked as the first; the
 * timeout covers the whole of it, redirects and body included. Throws `UrlNotAllowedError` when the policy refuses
 * a hop, the signal's `TimeoutError` when the time is up, and the transport's error (unreachable, reset) otherwise.
 * Any status is returned.
 */
export async function fetchGuarded(raw: string, options: GuardedFetchOptions): Promise<GuardedResponse> {
  const allow = options.allowPrivateNetworks;
  const allowHttp = options.allowHttp ?? allow;
  const doFetch = options.fetch ?? guardedFetch(allow);
  const signal = AbortSignal.timeout(options.timeoutMs ?? 5000);
  let url = new URL(raw);
  for (let redirects = 0; ; redirects++) {
    // Each hop is checked as the first: a redirect to http or to a private address is refused just the same.
    if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:'))
      throw new UrlNotAllowedError(url.href, `is not ${allowHttp ? 'an http or https' : 'an https'} URL`);
    if (url.username || url.password) throw new UrlNotAllowedError(url.href, 'contains credentials');
    const literal = literalHostBlocked(url, allow);
    if (literal)
      throw new UrlNotAllowedError(url.href, `points at ${literal}, a private, loopback or link-local address`);
    let response: Response;
    try {
      response = await doFetch(url.href, {
        redirect: 'manual',
        signal,
        headers: { ...options.headers, 'accept-encoding': 'identity' },
      });
    } catch (error) {
      // The guarded lookup refused the addresses the host resolves to.
      if (error instanceof BlockedAddressError || (error as { code?: unknown })?.code === 'EADDRBLOCKED')
        throw new UrlNotAllowedError(url.href, `is refused: ${(error as Error).message}`);
      throw signal.aborted ? signal.reason : error;
    }
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location && redirects < MAX_REDIRECTS) {
      await response.body?.cancel();
      url = new URL(location, url);
      continue;
    }
    const contentType = (response.headers.get('content-type') ?? '').toLowerCase();
    const result: GuardedResponse = {
      status: response.status,
      contentType,
      bytes: new Uint8Array(0),
      truncated: false,
      finalUrl: url.href,
    };
    if (!response.ok || !response.body || !(options.readBody?.(contentType) ?? true)) {
      await response.body?.cancel();
      return result;
    }
    // A body cut off by the timeout fails as the timeout (the transport only says `aborted`).
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    const { bytes, truncated } = await readAtMost(
      response.body,
      options.maxBytes ?? 2 * 1024 * 1024,
      Number.isNaN(declared) ? undefined : declared,
    ).catch((error: unknown) => {
      throw signal.aborted ? signal.reason : error;
    });
    return { ...result, bytes, truncated };
  }
}

/** The bytes read from a body between two turns of the event loop (readAtMost). */
export const READ_BYTES_PER_TURN = 1024 * 1024;

/**
 * The first `max` bytes of a body, and whether there was more; the rest is not downloaded. Each chunk is copied into
 * the result as it arrives (into a buffer of the declared length, or one that doubles), so that no single step copies
 * megabytes on the event loop while other requests wait. A body that arrives faster than it is read (on loopback, or
 * buffered) is handed over chunk after chunk as microtasks, which would read all of it before the event loop turned
 * once: every READ_BYTES_PER_TURN bytes the reading waits for the loop's next turn, so that other requests are served
 * in between.
 */
export async function readAtMost(
  body: ReadableStream<Uint8Array>,
  max: number,
  declaredLength?: number,
): Promise<{ bytes: Uint8Array; truncated: boolean }> {
  const reader = body.getReader();
  const expected = declaredLength !== undefined && Number.isSafeInteger(declaredLength) ? declaredLength : 0;
  let buffer = Buffer.allocUnsafe(Math.min(max, Math.max(expected, 64 * 1024)));
  let size = 0;
  let truncated = false;
  let sinceTurn = 0;
  for (;;) {
    if (sinceTurn >= READ_BYTES_PER_TURN) {
      sinceTurn = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const { done, value } = await reader.read();
    if (done) break;
    sinceTurn += value.length;
    if (value.length > max - size) truncated = true;
    const part = value.subarray(0, max - size);
    if (size + part.length > buffer.length) {
      const grown = Buffer.allocUnsafe(Math.min(max, Math.max(buffer.length * 2, size + part.length)));
      buffer.copy(grown, 0, 0, size);
      buffer = grown;
    }
    buffer.set(part, size);
    size += part.length;
    if (size >= max) {
      // A body of exactly `max` bytes is whole; one that goes on is not, even when a chunk ended at `max`.
      if (!truncated) truncated = await reader.read().then(({ done, value: next }) => !done && next.length > 0);
      break;
    }
  }
  await reader.cancel().catch(() => {});
  return { bytes: buffer.subarray(0, size), truncated };
}

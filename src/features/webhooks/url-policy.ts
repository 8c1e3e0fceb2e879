// SSRF protection for webhook URLs (DESIGN.md): https only, and a host that resolves to public addresses only. The
// URL is checked when it is set (422 invalid_webhook_url) and every attempt connects through `guardedLookup`, which
// checks the addresses it resolves, so a name that later resolves to a private address (DNS rebinding) is refused
// at connect time (`address_blocked`).
//
// WEBHOOKS_ALLOW_LOOPBACK=true (development only) also accepts `http` and loopback or private (RFC 1918, unique
// local) targets, for receivers on the developer's machine or network. Link-local (cloud metadata at
// 169.254.169.254), unspecified, multicast and reserved addresses stay refused.
import { lookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Problem } from '../../platform/problems.ts';

const developmentRanges = new Set(['loopback', 'private', 'uniqueLocal']);

/** Whether an attempt may connect to this address. Only public unicast addresses pass in production. */
export function addressAllowed(address: string, allowLoopback: boolean): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  // ::ffff:127.0.0.1 is 127.0.0.1.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  const range = parsed.range();
  return range === 'unicast' || (allowLoopback && developmentRanges.has(range));
}

export class BlockedAddressError extends Error {
  readonly code = 'EADDRBLOCKED';
  constructor(hostname: string, address: string) {
    super(`${hostname} resolves to ${address}, a private, loopback or link-local address`);
  }
}

function resolveAll(hostname: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    lookup(hostname, { all: true, verbatim: true } satisfies LookupAllOptions, (error, addresses) => (error ? reject(error) : resolve(addresses)));
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
  options: { allowLoopback: boolean; allowHttp: boolean; pointer: string; code: 'invalid_webhook_url' | 'invalid_source_url'; what: string },
): Promise<URL> {
  const { allowLoopback, pointer } = options;
  const refuse = (detail: string) => new Problem(options.code, `The ${options.what} ${detail}.`, { errors: [{ pointer, detail }] });
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse('is not an absolute URL');
  }
  if (url.protocol !== 'https:' && !(options.allowHttp && url.protocol === 'http:')) {
    throw refuse(options.allowHttp ? 'must use https or http' : 'must use https');
  }
  if (url.username || url.password) throw refuse('must not contain credentials');
  const host = hostOf(url);
  if (isIP(host)) {
    if (!addressAllowed(host, allowLoopback)) throw refuse(`points at ${host}, a private, loopback or link-local address`);
    return url;
  }
  let addresses: LookupAddress[];
  try {
    addresses = await resolveAll(host);
  } catch {
    throw refuse(`host ${host} does not resolve`);
  }
  const blocked = addresses.find((a) => !addressAllowed(a.address, allowLoopback));
  if (blocked) throw refuse(`host ${host} resolves to ${blocked.address}, a private, loopback or link-local address`);
  return url;
}

/** A webhook endpoint's URL: https (http too with the development setting that allows loopback). */
export async function checkWebhookUrl(raw: string, allowLoopback: boolean, pointer = '/url'): Promise<void> {
  await checkPublicUrl(raw, { allowLoopback, allowHttp: allowLoopback, pointer, code: 'invalid_webhook_url', what: 'webhook URL' });
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
        if (blocked) return callback(new BlockedAddressError(hostname, blocked.address), all ? [] : '', 0);
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

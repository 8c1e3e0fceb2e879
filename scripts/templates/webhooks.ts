// Webhook events of content-service: their typed payloads, and the signature scheme both sides share.
// A delivery carries `Service-Timestamp` (unix seconds) and `Service-Signature`: the lowercase hex HMAC-SHA256 of
// `<timestamp>.<raw body>` keyed with the endpoint secret (the whole `whsec_…` string, UTF-8). During a secret
// rotation the header holds one signature per active secret, comma-separated, newest first.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { components } from './openapi.ts';

/** Every event type the service emits. */
export const EVENT_TYPES = /*@EVENT_TYPES*/ as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** An event as delivered: the envelope with its typed `data`. */
export type WebhookEvent = components['schemas']['Event'];
/** The event of one type, e.g. `EventOf<'voice.trained'>`. */
export type EventOf<T extends EventType> = Extract<WebhookEvent, { type: T }>;

/** Signatures older (or newer) than this are refused: a captured request cannot be replayed later. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type WebhookVerificationFailure =
  | 'missing_header'
  | 'invalid_timestamp'
  | 'timestamp_outside_tolerance'
  | 'invalid_signature'
  | 'invalid_payload';

export class WebhookVerificationError extends Error {
  readonly reason: WebhookVerificationFailure;
  constructor(reason: WebhookVerificationFailure, message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.reason = reason;
  }
}

export interface VerifyWebhookOptions {
  /** How far the timestamp may be from now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** The current time in ms (default Date.now()); replaceable for tests. */
  now?: () => number;
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const bag = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(bag).find((k) => k.toLowerCase() === name.toLowerCase());
  const value = key === undefined ? undefined : bag[key];
  return Array.isArray(value) ? value.join(',') : value;
}

function toBuffer(body: string | Uint8Array): Buffer {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/** The `Service-Signature` value for one secret: lowercase hex HMAC-SHA256 of `<timestamp>.<raw body>`. */
export function signWebhookPayload(rawBody: string | Uint8Array, secret: string, timestamp: number): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(toBuffer(rawBody)).digest('hex');
}

/**
 * Checks a delivery and returns its typed event. Pass the raw body exactly as received (not re-serialised JSON),
 * the request headers, and the endpoint secret (or, while you rotate it, all secrets you accept). Throws a
 * WebhookVerificationError when a header is missing, the timestamp is outside the tolerance, no signature matches
 * (compared in constant time), or the body is not an event.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderBag,
  secret: string | readonly string[],
  options: VerifyWebhookOptions = {},
): WebhookEvent {
  const timestampHeader = header(headers, 'Service-Timestamp');
  const signatureHeader = header(headers, 'Service-Signature');
  if (!timestampHeader || !signatureHeader) {
    throw new WebhookVerificationError('missing_header', 'Service-Timestamp and Service-Signature are required.');
  }
  if (!/^\d{1,12}$/.test(timestampHeader.trim())) {
    throw new WebhookVerificationError('invalid_timestamp', 'Service-Timestamp is not a unix time in seconds.');
  }
  const timestamp = Number(timestampHeader.trim());
  const now = Math.floor((options.now ?? Date.now)() / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (Math.abs(now - timestamp) > tolerance) {
    throw new WebhookVerificationError(
      'timestamp_outside_tolerance',
      `Service-Timestamp is ${now - timestamp} s from now; at most ${tolerance} s is accepted.`,
    );
  }
  const secrets = typeof secret === 'string' ? [secret] : secret;
  const received = signatureHeader
    .split(',')
    .map((s) => s.trim())
    .filter((s) => /^[0-9a-f]{64}$/.test(s))
    .map((s) => Buffer.from(s, 'hex'));
  let matched = false;
  for (const key of secrets) {
    const expected = Buffer.from(signWebhookPayload(rawBody, key, timestamp), 'hex');
    // Every candidate is compared, so the time taken does not tell which one (or which byte) differed.
    for (const candidate of received) matched = timingSafeEqual(candidate, expected) || matched;
  }
  if (!matched) throw new WebhookVerificationError('invalid_signature', 'No Service-Signature matches the secret.');

  let event: unknown;
  try {
    event = JSON.parse(toBuffer(rawBody).toString('utf8'));
  } catch {
    throw new WebhookVerificationError('invalid_payload', 'The body is not JSON.');
  }
  const e = event as Partial<WebhookEvent> | null;
  if (!e || typeof e !== 'object' || typeof e.id !== 'string' || typeof e.type !== 'string' || typeof e.data !== 'object' || e.data === null) {
    throw new WebhookVerificationError('invalid_payload', 'The body is not an event envelope.');
  }
  const eventId = header(headers, 'Service-Event-Id');
  if (eventId !== undefined && eventId !== e.id) {
    throw new WebhookVerificationError('invalid_payload', 'Service-Event-Id does not match the event id.');
  }
  return e as WebhookEvent;
}

/** Narrows an event to one type: `if (isEventOf(event, 'voice.trained')) event.data…`. */
export function isEventOf<T extends EventType>(event: WebhookEvent, type: T): event is EventOf<T> {
  return event.type === type;
}

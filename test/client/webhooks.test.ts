// verifyWebhook and signWebhookPayload of generated/webhooks.ts, and the event examples of the contract.
import { createHmac } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import {
  EVENT_TYPES,
  isEventOf,
  signWebhookPayload,
  verifyWebhook,
  WebhookVerificationError,
} from '../../generated/webhooks.ts';
import { deref, firstExample, type Json, schemaErrors, spec } from '../support/spec.ts';

const secret = 'whsec_5WbX5kEWLlfzsGNjH64I8lOOqUB6e8FH';
const now = 1_763_651_007_000;
const timestamp = Math.floor(now / 1000);
const webhooks = Object.entries<Json>(spec.webhooks ?? {});
const firstEvent = firstExample(deref(webhooks[0]![1].post.requestBody).content['application/json']) as {
  id: string;
  type: string;
};
const rawBody = JSON.stringify(firstEvent);

function headersFor(body: string, signature = signWebhookPayload(body, secret, timestamp), ts = timestamp) {
  return { 'service-timestamp': String(ts), 'service-signature': signature, 'service-event-id': firstEvent.id };
}

function failure(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return (error as WebhookVerificationError).reason;
  }
  throw new Error('expected verifyWebhook to throw');
}

describe('signWebhookPayload', () => {
  test('is the lowercase hex HMAC-SHA256 of `<timestamp>.<raw body>` keyed with the secret', () => {
    const expected = createHmac('sha256', secret).update(`${timestamp}.${rawBody}`).digest('hex');
    expect(signWebhookPayload(rawBody, secret, timestamp)).toBe(expected);
    expect(expected).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('verifyWebhook', () => {
  test('returns the typed event of a correctly signed delivery', () => {
    const event = verifyWebhook(rawBody, headersFor(rawBody), secret, { now: () => now });
    expect(event).toEqual(firstEvent);
    expect(isEventOf(event, event.type)).toBe(true);
  });

  test('accepts a Buffer body and a Fetch Headers object', () => {
    const headers = new Headers(headersFor(rawBody));
    expect(verifyWebhook(Buffer.from(rawBody), headers, secret, { now: () => now }).id).toBe(firstEvent.id);
  });

  test('accepts any of several signatures during a secret rotation, and several secrets on the receiver side', () => {
    const oldSecret = 'whsec_old0000000000000000000000000000';
    const both = `${signWebhookPayload(rawBody, secret, timestamp)},${signWebhookPayload(rawBody, oldSecret, timestamp)}`;
    expect(verifyWebhook(rawBody, headersFor(rawBody, both), oldSecret, { now: () => now }).id).toBe(firstEvent.id);
    expect(verifyWebhook(rawBody, headersFor(rawBody, both), ['whsec_other', secret], { now: () => now }).id).toBe(
      firstEvent.id,
    );
  });

  test('rejects a changed body, a wrong secret and a malformed signature', () => {
    const tampered = rawBody.replace(firstEvent.id, 'evt_01JD00000000000000000000ZZ');
    expect(failure(() => verifyWebhook(tampered, headersFor(rawBody), secret, { now: () => now }))).toBe(
      'invalid_signature',
    );
    expect(failure(() => verifyWebhook(rawBody, headersFor(rawBody), 'whsec_wrong', { now: () => now }))).toBe(
      'invalid_signature',
    );
    expect(failure(() => verifyWebhook(rawBody, headersFor(rawBody, 'zz'), secret, { now: () => now }))).toBe(
      'invalid_signature',
    );
  });

  test('rejects timestamps more than five minutes old or ahead, and accepts them within', () => {
    const old = timestamp - 301;
    const oldHeaders = headersFor(rawBody, signWebhookPayload(rawBody, secret, old), old);
    expect(failure(() => verifyWebhook(rawBody, oldHeaders, secret, { now: () => now }))).toBe(
      'timestamp_outside_tolerance',
    );
    const ahead = timestamp + 301;
    const aheadHeaders = headersFor(rawBody, signWebhookPayload(rawBody, secret, ahead), ahead);
    expect(failure(() => verifyWebhook(rawBody, aheadHeaders, secret, { now: () => now }))).toBe(
      'timestamp_outside_tolerance',
    );
    const recent = timestamp - 299;
    const recentHeaders = headersFor(rawBody, signWebhookPayload(rawBody, secret, recent), recent);
    expect(verifyWebhook(rawBody, recentHeaders, secret, { now: () => now }).id).toBe(firstEvent.id);
  });

  test('rejects missing headers, a non-numeric timestamp, and a body that is not an event', () => {
    expect(failure(() => verifyWebhook(rawBody, {}, secret, { now: () => now }))).toBe('missing_header');
    const bad = { ...headersFor(rawBody), 'service-timestamp': 'yesterday' };
    expect(failure(() => verifyWebhook(rawBody, bad, secret, { now: () => now }))).toBe('invalid_timestamp');
    for (const notEvent of ['{"hello":"world"}', '{"id":"evt_1","type":"voice.trained","data":null}', 'not json']) {
      const notEventHeaders = { ...headersFor(notEvent), 'service-event-id': undefined };
      expect(failure(() => verifyWebhook(notEvent, notEventHeaders, secret, { now: () => now }))).toBe(
        'invalid_payload',
      );
    }
  });

  test('rejects a Service-Event-Id that differs from the body', () => {
    const headers = { ...headersFor(rawBody), 'service-event-id': 'evt_01JD00000000000000000000ZZ' };
    expect(failure(() => verifyWebhook(rawBody, headers, secret, { now: () => now }))).toBe('invalid_payload');
  });
});

describe('the event types of the contract', () => {
  test('the OpenAPI webhooks section lists every event type, and EVENT_TYPES is generated from it', () => {
    expect(webhooks.map(([type]) => type).sort()).toEqual([...EVENT_TYPES]);
    expect(EVENT_TYPES).toContain('chat.thread.deleted');
    expect(EVENT_TYPES).toContain('usage.limit_reached');
    expect(EVENT_TYPES.length).toBe(14);
  });

  test.each(webhooks)('the example of %s is a valid event of that type', (type, item) => {
    const media = deref(item.post.requestBody).content['application/json'];
    const example = firstExample(media) as { type: string };
    expect(example.type).toBe(type);
    expect(schemaErrors('/components/schemas/Event', example)).toEqual([]);
  });
});

// Webhook delivery as a receiver sees it, against real servers on SQLite and PostgreSQL and real loopback receivers:
// the signed request (headers, HMAC, verifyWebhook), secret rotation, event type filters, strict order per endpoint
// while its head fails, the retry schedule up to exhaustion, what GET /v1/webhooks/deliveries shows of every attempt
// (answer excerpts, connection errors, list filters), test events, replay, and the attempt timeout (15 s, shortened
// here with WEBHOOK_ATTEMPT_TIMEOUT_MS; test/platform/config-defaults.test.ts holds the default to docs/configuration.md).
// Time is a ManualClock: a retry falls due when the test moves the clock, and `wake()` sends it at once.
import { createHmac } from 'node:crypto';
import { ulid } from 'ulid';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { verifyWebhook, WebhookVerificationError } from '../../generated/webhooks.ts';
import { JITTER, MAX_ATTEMPTS, RETRY_WAITS_S } from '../../src/features/webhooks/schedule.ts';
import { ManualClock } from '../../src/platform/clock.ts';
import { expectProblem } from '../support/expect.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';

const DAY_MS = 86_400_000;
/** Long enough for a worker that would send something to have sent it: a wake is immediate, a poll every 250 ms. */
const QUIET_MS = 400;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function hmac(secret: string, timestamp: string, rawBody: Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex');
}

interface Delivery {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempt_count: number;
  next_attempt_at: string | null;
  manual: boolean;
  test: boolean;
  created_at: string;
  attempts: Array<{
    number: number;
    trigger: string;
    started_at: string;
    status: string;
    response_status_code: number | null;
    response_body: string | null;
    duration_ms: number;
    error: string | null;
  }>;
  payload: unknown;
}

describe.each(databaseKinds)('webhook delivery on %s', (kind) => {
  let server: TestServer;
  let clock: ManualClock;
  let receivers: Receiver[];
  let memberCount = 0;

  const start = (env: Record<string, string> = {}) =>
    startTestServer({ database: kind, clock, env: { WEBHOOKS_ALLOW_LOOPBACK: 'true', ...env } });

  beforeEach(async () => {
    clock = new ManualClock();
    receivers = [];
    server = await start();
  });
  afterEach(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await server?.close();
  });

  async function receiver(): Promise<Receiver> {
    const started = await startReceiver();
    receivers.push(started);
    return started;
  }

  async function createEndpoint(url: string, eventTypes: string[], extra: Record<string, unknown> = {}) {
    const answer = await server.call('POST', '/v1/webhooks/endpoints', {
      body: { url: `${url}/hook`, event_types: eventTypes, ...extra },
    });
    expect(answer.status).toBe(201);
    return answer.body as { id: string; secret: string };
  }

  async function addMember() {
    const answer = await server.call('POST', '/v1/members', {
      body: { email: `member-${++memberCount}@delivery.example`, role: 'viewer' },
    });
    expect(answer.status).toBe(201);
    return answer.body as { id: string };
  }

  async function removeMember(id: string) {
    expect((await server.call('DELETE', `/v1/members/${id}`)).status).toBe(204);
  }

  async function getDelivery(id: string): Promise<Delivery> {
    const answer = await server.call('GET', `/v1/webhooks/deliveries/${id}`);
    expect(answer.status).toBe(200);
    return answer.body as Delivery;
  }

  async function listDeliveries(query: string): Promise<Delivery[]> {
    const answer = await server.call('GET', `/v1/webhooks/deliveries?limit=100&${query}`);
    expect(answer.status).toBe(200);
    return answer.body.data as Delivery[];
  }

  /** The endpoint's deliveries in the order their events happened. */
  async function queueOf(endpointId: string): Promise<Delivery[]> {
    return (await listDeliveries(`endpoint_id=${endpointId}`)).reverse();
  }

  async function getEvent(id: string) {
    const answer = await server.call('GET', `/v1/events/${id}`);
    expect(answer.status).toBe(200);
    return answer.body;
  }

  /** The delivery once `count` attempts are recorded (the worker records an attempt after the receiver answered). */
  async function afterAttempts(id: string, count: number, tries = 100, intervalMs = 50): Promise<Delivery> {
    for (let i = 0; i < tries; i++) {
      const delivery = await getDelivery(id);
      if (delivery.attempt_count >= count) return delivery;
      await pause(intervalMs);
    }
    throw new Error(`delivery ${id} did not record ${count} attempts`);
  }

  /** Moves the clock to `at` and has the worker look for due deliveries now rather than at its next poll. */
  function moveClockTo(at: number): void {
    clock.set(new Date(at));
    server.workers.get('webhook-delivery')!.wake();
  }

  function expectWaitWithinJitter(
    attempt: Delivery['attempts'][number],
    nextAttemptAt: string | null,
    attemptNumber: number,
  ): void {
    const wait = RETRY_WAITS_S[attemptNumber - 1]! * 1000;
    // The ManualClock stands still during an attempt: it ended when it started.
    const after = Date.parse(nextAttemptAt!) - Date.parse(attempt.started_at);
    expect(after).toBeGreaterThanOrEqual(Math.floor(wait * (1 - JITTER)));
    expect(after).toBeLessThanOrEqual(Math.ceil(wait * (1 + JITTER)));
  }

  test('member events reach a subscribed receiver: one signed POST whose body is the event', async () => {
    const r = await receiver();
    const endpoint = await createEndpoint(r.url, ['workspace.member.added']);
    await addMember();
    const [request] = await r.waitFor(1);
    await pause(QUIET_MS);
    expect(r.requests).toHaveLength(1);

    expect(request!.method).toBe('POST');
    expect(request!.path).toBe('/hook');
    expect(request!.headers['content-type']).toBe('application/json');
    const timestamp = request!.headers['service-timestamp'] as string;
    expect(timestamp).toMatch(/^\d+$/);
    expect(Number(timestamp)).toBe(Math.floor(clock.now().getTime() / 1000));
    expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(60);
    expect(request!.headers['service-signature']).toBe(hmac(endpoint.secret, timestamp, request!.rawBody));
    expect(request!.headers['service-signature']).toMatch(/^[0-9a-f]{64}$/);
    expect(request!.headers['service-event-id']).toBe(request!.body.id);
    expect(request!.headers['service-event-type']).toBe(request!.body.type);
    expect(request!.body).toMatchObject({
      object: 'event',
      type: 'workspace.member.added',
      workspace_id: server.workspaceId,
      test: false,
    });
    expect(request!.body).toEqual(await getEvent(request!.body.id));

    const event = verifyWebhook(request!.rawBody, request!.headers, endpoint.secret);
    expect(event).toEqual(request!.body);
    const refusal = (body: Buffer, secret: string) => {
      try {
        verifyWebhook(body, request!.headers, secret);
      } catch (error) {
        return (error as WebhookVerificationError).reason;
      }
      return 'accepted';
    };
    expect(refusal(request!.rawBody, `whsec_${'A'.repeat(43)}`)).toBe('invalid_signature');
    const tampered = Buffer.from(request!.rawBody.toString('utf8').replace('"viewer"', '"owner"'));
    expect(tampered.equals(request!.rawBody)).toBe(false);
    expect(refusal(tampered, endpoint.secret)).toBe('invalid_signature');
  });

  test('after a rotation deliveries carry both signatures, the new one first, and only the new one after 24 h', async () => {
    const r = await receiver();
    const endpoint = await createEndpoint(r.url, ['workspace.member.added']);
    const rotated = await server.call('POST', `/v1/webhooks/endpoints/${endpoint.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const newSecret = rotated.body.secret as string;
    expect(newSecret).not.toBe(endpoint.secret);

    await addMember();
    const [during] = await r.waitFor(1);
    const timestamp = during!.headers['service-timestamp'] as string;
    expect((during!.headers['service-signature'] as string).split(',')).toEqual([
      hmac(newSecret, timestamp, during!.rawBody),
      hmac(endpoint.secret, timestamp, during!.rawBody),
    ]);
    const now = () => clock.now().getTime();
    expect(verifyWebhook(during!.rawBody, during!.headers, newSecret, { now }).id).toBe(during!.body.id);
    expect(verifyWebhook(during!.rawBody, during!.headers, endpoint.secret, { now }).id).toBe(during!.body.id);

    clock.advance(DAY_MS + 1000);
    await addMember();
    const after = (await r.waitFor(2))[1]!;
    const laterTimestamp = after.headers['service-timestamp'] as string;
    expect(after.headers['service-signature']).toBe(hmac(newSecret, laterTimestamp, after.rawBody));
    expect(verifyWebhook(after.rawBody, after.headers, newSecret, { now }).id).toBe(after.body.id);
    expect(() => verifyWebhook(after.rawBody, after.headers, endpoint.secret, { now })).toThrow(
      WebhookVerificationError,
    );
  });

  test('event type filters: each member event reaches exactly the endpoints that subscribe to it', async () => {
    const [exact, prefix, everything, chat, disabled] = await Promise.all([
      receiver(),
      receiver(),
      receiver(),
      receiver(),
      receiver(),
    ]);
    await createEndpoint(exact!.url, ['workspace.member.added']);
    await createEndpoint(prefix!.url, ['workspace.*']);
    await createEndpoint(everything!.url, ['*']);
    const chatEndpoint = await createEndpoint(chat!.url, ['chat.*']);
    const disabledEndpoint = await createEndpoint(disabled!.url, ['*'], { enabled: false });

    const member = await addMember();
    await removeMember(member.id);
    await Promise.all([exact!.waitFor(1), prefix!.waitFor(2), everything!.waitFor(2)]);
    await pause(QUIET_MS);

    const types = (r: Receiver) => r.requests.map((request) => request.body.type);
    expect(types(exact!)).toEqual(['workspace.member.added']);
    expect(types(prefix!)).toEqual(['workspace.member.added', 'workspace.member.removed']);
    expect(types(everything!)).toEqual(['workspace.member.added', 'workspace.member.removed']);
    expect(chat!.requests).toHaveLength(0);
    expect(disabled!.requests).toHaveLength(0);
    expect(await listDeliveries(`endpoint_id=${chatEndpoint.id}`)).toEqual([]);
    expect(await listDeliveries(`endpoint_id=${disabledEndpoint.id}`)).toEqual([]);
  });

  test('order: while the first event fails the later ones wait, then go out one by one in sequence order', async () => {
    const r = await receiver();
    r.respond = (request) => {
      const first = r.requests[0]!.body.id;
      const seen = r.requests.filter((earlier) => earlier.body.id === request.body.id).length;
      return { status: request.body.id === first && seen <= 3 ? 500 : 200 };
    };
    const endpoint = await createEndpoint(r.url, ['workspace.member.added']);
    for (let i = 0; i < 5; i++) await addMember();
    await r.waitFor(1);

    const queue = await queueOf(endpoint.id);
    expect(queue).toHaveLength(5);
    const head = queue[0]!;
    for (let attempt = 1; attempt <= 3; attempt++) {
      const current = await afterAttempts(head.id, attempt);
      expect(current).toMatchObject({ status: 'pending', attempt_count: attempt });
      expect(current.next_attempt_at).not.toBeNull();
      for (const waiting of queue.slice(1)) {
        expect(await getDelivery(waiting.id)).toMatchObject({
          status: 'pending',
          attempt_count: 0,
          next_attempt_at: null,
          attempts: [],
        });
      }
      expect(r.requests).toHaveLength(attempt);
      moveClockTo(Date.parse(current.next_attempt_at!));
      await r.waitFor(attempt + 1);
    }
    const received = await r.waitFor(8);
    await pause(QUIET_MS);
    expect(r.requests).toHaveLength(8);
    expect(received.map((request) => request.body.id)).toEqual([head, head, head, ...queue].map((d) => d.event_id));
    const sequences = received.slice(3).map((request) => request.body.sequence as number);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    expect(new Set(sequences).size).toBe(5);
    expect((await afterAttempts(head.id, 4)).status).toBe('delivered');
  });

  test('exhaustion: retries follow RETRY_WAITS_S within the jitter, 24 failures end the delivery, then the queue moves on', async () => {
    const r = await receiver();
    r.respond = () => ({ status: 503, body: 'down' });
    const endpoint = await createEndpoint(r.url, ['workspace.member.added']);
    await addMember();
    await addMember();
    await r.waitFor(1);
    const [first, second] = await queueOf(endpoint.id);

    for (let n = 1; n <= MAX_ATTEMPTS; n++) {
      const delivery = await afterAttempts(first!.id, n);
      const attempt = delivery.attempts[n - 1]!;
      expect(attempt).toMatchObject({
        number: n,
        trigger: 'scheduled',
        status: 'failed',
        response_status_code: 503,
        response_body: 'down',
        error: null,
      });
      if (n === MAX_ATTEMPTS) {
        expect(delivery).toMatchObject({ status: 'failed', attempt_count: MAX_ATTEMPTS, next_attempt_at: null });
        break;
      }
      expect(delivery).toMatchObject({ status: 'pending', attempt_count: n });
      expectWaitWithinJitter(attempt, delivery.next_attempt_at, n);
      // Just before the time actually drawn, which is at or after 95 % of the wait: nothing may go out.
      const ended = Date.parse(attempt.started_at);
      moveClockTo(Date.parse(delivery.next_attempt_at!) - 1);
      await pause(QUIET_MS);
      expect(r.requests).toHaveLength(n);
      moveClockTo(ended + Math.ceil(RETRY_WAITS_S[n - 1]! * 1000 * (1 + JITTER)) + 1);
      await r.waitFor(n + 1, 5000);
    }
    const received = await r.waitFor(MAX_ATTEMPTS + 1);
    expect(received.slice(0, MAX_ATTEMPTS).every((request) => request.body.id === first!.event_id)).toBe(true);
    expect(received[MAX_ATTEMPTS]!.body.id).toBe(second!.event_id);
    expect(await afterAttempts(second!.id, 1)).toMatchObject({ status: 'pending', attempt_count: 1 });
  }, 90_000);

  test('a delivery shows every attempt: the first 1,024 bytes of the answer, invalid UTF-8 and NUL replaced, and the payload', async () => {
    const r = await receiver();
    const longBody = Array.from({ length: 2048 }, (_, i) => String.fromCharCode(33 + (i % 90))).join('');
    r.respond = () =>
      r.requests.length === 1
        ? { status: 500, body: longBody }
        : { status: 200, body: Buffer.from([0x6f, 0x6b, 0x00, 0xc3, 0x28, 0xff, 0x41]) };
    const endpoint = await createEndpoint(r.url, ['workspace.*']);
    await addMember();
    const [request] = await r.waitFor(1);
    const [queued] = await queueOf(endpoint.id);
    const failed = await afterAttempts(queued!.id, 1);
    const firstAttemptAt = clock.now().toISOString();
    moveClockTo(Date.parse(failed.next_attempt_at!));
    await r.waitFor(2);
    const delivery = await afterAttempts(queued!.id, 2);

    expect(delivery).toMatchObject({
      id: queued!.id,
      endpoint_id: endpoint.id,
      event_id: request!.body.id,
      event_type: 'workspace.member.added',
      status: 'delivered',
      attempt_count: 2,
      next_attempt_at: null,
      manual: false,
      test: false,
      delivered_at: clock.now().toISOString(),
      last_response_status_code: 200,
    });
    expect(delivery.attempts).toEqual([
      {
        number: 1,
        trigger: 'scheduled',
        started_at: firstAttemptAt,
        status: 'failed',
        response_status_code: 500,
        response_body: longBody.slice(0, 1024),
        duration_ms: expect.any(Number),
        error: null,
      },
      {
        number: 2,
        trigger: 'scheduled',
        started_at: clock.now().toISOString(),
        status: 'succeeded',
        response_status_code: 200,
        response_body: 'ok\ufffd\ufffd(\ufffdA',
        duration_ms: expect.any(Number),
        error: null,
      },
    ]);
    expect(Buffer.byteLength(delivery.attempts[0]!.response_body!)).toBe(1024);
    for (const attempt of delivery.attempts) expect(attempt.duration_ms).toBeGreaterThanOrEqual(0);
    expect(delivery.payload).toEqual(await getEvent(request!.body.id));
  });

  test('a connection closed without an answer is connection_reset; a closed port is connection_refused', async () => {
    const resetting = await receiver();
    resetting.respond = () => ({ status: 200, destroy: true });
    const closed = await startReceiver();
    const closedUrl = closed.url;
    await closed.close();
    const resetEndpoint = await createEndpoint(resetting.url, ['workspace.member.added']);
    const refusedEndpoint = await createEndpoint(closedUrl, ['workspace.member.added']);
    await addMember();
    await resetting.waitFor(1);

    const noAnswer = { status: 'failed', response_status_code: null, response_body: null };
    const [reset] = await queueOf(resetEndpoint.id);
    expect((await afterAttempts(reset!.id, 1)).attempts).toEqual([
      {
        number: 1,
        trigger: 'scheduled',
        started_at: expect.any(String),
        duration_ms: expect.any(Number),
        ...noAnswer,
        error: 'connection_reset',
      },
    ]);
    const [refused] = await queueOf(refusedEndpoint.id);
    const refusedDelivery = await afterAttempts(refused!.id, 1);
    expect(refusedDelivery.attempts).toEqual([
      {
        number: 1,
        trigger: 'scheduled',
        started_at: expect.any(String),
        duration_ms: expect.any(Number),
        ...noAnswer,
        error: 'connection_refused',
      },
    ]);
    expect(refusedDelivery).toMatchObject({ status: 'pending', attempt_count: 1, last_response_status_code: null });
  });

  test('the delivery list filters by endpoint, event, type (exact and wildcard), status and creation time, and pages', async () => {
    const ok = await receiver();
    const failing = await receiver();
    failing.respond = () => ({ status: 500 });
    const all = await createEndpoint(ok.url, ['workspace.*']);
    const added = await createEndpoint(failing.url, ['workspace.member.added']);

    const t0 = clock.now().toISOString();
    const member = await addMember();
    clock.advance(60_000);
    const t1 = clock.now().toISOString();
    await removeMember(member.id);
    clock.advance(60_000);
    const t2 = clock.now().toISOString();
    await addMember();
    await ok.waitFor(3);
    await failing.waitFor(1);

    const okQueue = await queueOf(all.id);
    const failingQueue = await queueOf(added.id);
    expect(okQueue.map((d) => d.event_type)).toEqual([
      'workspace.member.added',
      'workspace.member.removed',
      'workspace.member.added',
    ]);
    expect(failingQueue).toHaveLength(2);
    for (const d of okQueue) await afterAttempts(d.id, 1);
    await afterAttempts(failingQueue[0]!.id, 1);
    const [e1, e2, e3] = okQueue.map((d) => d.event_id);
    const everyId = [...okQueue, ...failingQueue]
      .map((d) => d.id)
      .sort()
      .reverse();

    const ids = async (query: string) => (await listDeliveries(query)).map((d) => d.id);
    const sorted = (list: Delivery[]) =>
      list
        .map((d) => d.id)
        .sort()
        .reverse();
    expect(await ids('')).toEqual(everyId);
    expect(await ids(`endpoint_id=${all.id}`)).toEqual(sorted(okQueue));
    expect(await ids(`event_id=${e1}`)).toEqual(sorted([okQueue[0]!, failingQueue[0]!]));
    expect(await ids(`event_id=${e2}`)).toEqual([okQueue[1]!.id]);
    expect(await ids('event_type=workspace.member.removed')).toEqual([okQueue[1]!.id]);
    expect(await ids('event_type=workspace.member.*')).toEqual(everyId);
    expect(await ids('event_type=*')).toEqual(everyId);
    expect(await ids('event_type=chat.*')).toEqual([]);
    expect(await ids('status=delivered')).toEqual(sorted(okQueue));
    expect(await ids('status=pending')).toEqual(sorted(failingQueue));
    expect(await ids('status=failed')).toEqual([]);
    expect(await ids(`created_gte=${t1}`)).toEqual(sorted([okQueue[1]!, okQueue[2]!, failingQueue[1]!]));
    expect(await ids(`created_lt=${t1}`)).toEqual(sorted([okQueue[0]!, failingQueue[0]!]));
    expect(await ids(`created_gte=${t1}&created_lt=${t2}`)).toEqual([okQueue[1]!.id]);
    expect(await ids(`created_gte=${t0}&endpoint_id=${added.id}&event_id=${e3}`)).toEqual([failingQueue[1]!.id]);

    expect(
      (await server.call('PATCH', `/v1/webhooks/endpoints/${added.id}`, { body: { enabled: false } })).status,
    ).toBe(200);
    expect(await ids('status=failed')).toEqual(sorted(failingQueue));
    expect(await ids('status=pending')).toEqual([]);

    const paged: string[] = [];
    let path: string | null = '/v1/webhooks/deliveries?limit=2';
    for (let page = 0; path && page < 10; page++) {
      const answer: Answer = await server.call('GET', path);
      expect(answer.status).toBe(200);
      expect(answer.body.data.length).toBeLessThanOrEqual(2);
      paged.push(...answer.body.data.map((d: Delivery) => d.id));
      if (answer.body.next_cursor) {
        expect(answer.headers.get('link')).toContain('rel="next"');
        path = `/v1/webhooks/deliveries?limit=2&cursor=${answer.body.next_cursor}`;
      } else {
        path = null;
      }
    }
    expect(path).toBeNull();
    expect(paged).toEqual(everyId);
  });

  test('a test event: 202 with a pending manual delivery of the example payload, attempted once even when it fails', async () => {
    const r = await receiver();
    r.respond = () => ({ status: 500 });
    const endpoint = await createEndpoint(r.url, ['workspace.*']);
    const catalogue = (await server.call('GET', '/v1/event-types')).body.data as Array<{
      type: string;
      example_payload: { id: string; data: unknown };
    }>;
    const example = catalogue.find((entry) => entry.type === 'workspace.member.added')!.example_payload;

    const answer = await server.call('POST', `/v1/webhooks/endpoints/${endpoint.id}/test`);
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({
      object: 'webhook_delivery',
      endpoint_id: endpoint.id,
      event_type: 'workspace.member.added',
      status: 'pending',
      attempt_count: 0,
      test: true,
      manual: true,
      attempts: [],
    });
    const [request] = await r.waitFor(1);
    expect(request!.body).toMatchObject({
      object: 'event',
      type: 'workspace.member.added',
      test: true,
      workspace_id: server.workspaceId,
      id: answer.body.event_id,
    });
    expect(request!.body.id).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(request!.body.id).not.toBe(example.id);
    expect(request!.body.data).toEqual(example.data);
    expect(request!.headers['service-event-id']).toBe(request!.body.id);
    expect(
      verifyWebhook(request!.rawBody, request!.headers, endpoint.secret, { now: () => clock.now().getTime() }).id,
    ).toBe(request!.body.id);

    const delivery = await afterAttempts(answer.body.id, 1);
    expect(delivery).toMatchObject({
      status: 'failed',
      attempt_count: 1,
      next_attempt_at: null,
      test: true,
      manual: true,
    });
    expect(delivery.attempts).toMatchObject([
      { number: 1, trigger: 'manual', status: 'failed', response_status_code: 500 },
    ]);
    moveClockTo(clock.now().getTime() + 3600_000);
    await pause(QUIET_MS);
    expect(r.requests).toHaveLength(1);
  });

  test('a test event of a named type, even one the endpoint does not subscribe to, and to a disabled endpoint', async () => {
    const r = await receiver();
    const endpoint = await createEndpoint(r.url, ['workspace.*']);
    const named = await server.call('POST', `/v1/webhooks/endpoints/${endpoint.id}/test`, {
      body: { event_type: 'chat.thread.deleted' },
    });
    expect(named.status).toBe(202);
    expect(named.body).toMatchObject({ event_type: 'chat.thread.deleted', test: true, manual: true });
    const [request] = await r.waitFor(1);
    expect(request!.body).toMatchObject({ type: 'chat.thread.deleted', test: true, workspace_id: server.workspaceId });
    expect(request!.headers['service-event-type']).toBe('chat.thread.deleted');

    const off = await receiver();
    const disabled = await createEndpoint(off.url, ['*'], { enabled: false });
    const firstType = (await server.call('GET', '/v1/event-types')).body.data[0].type as string;
    const answer = await server.call('POST', `/v1/webhooks/endpoints/${disabled.id}/test`);
    expect(answer.status).toBe(202);
    const [received] = await off.waitFor(1);
    expect(received!.body).toMatchObject({ type: firstType, test: true, id: answer.body.event_id });
    expect((await afterAttempts(answer.body.id, 1)).status).toBe('delivered');
  });

  test('replay to one endpoint (disabled or not subscribed) and to every subscribed endpoint sends the same bytes again', async () => {
    const [prefix, everything, disabled, chat] = await Promise.all([receiver(), receiver(), receiver(), receiver()]);
    const prefixEndpoint = await createEndpoint(prefix!.url, ['workspace.*']);
    const everythingEndpoint = await createEndpoint(everything!.url, ['*']);
    const disabledEndpoint = await createEndpoint(disabled!.url, ['*'], { enabled: false });
    const chatEndpoint = await createEndpoint(chat!.url, ['chat.*']);
    const member = await addMember();
    await removeMember(member.id);
    const originals = await prefix!.waitFor(2);
    await everything!.waitFor(2);
    const [e1, e2] = originals.map((request) => request.body.id as string);
    const originalBody = new Map(originals.map((request) => [request.body.id as string, request.rawBody]));

    const replay = async (body: Record<string, unknown>) => {
      const answer = await server.call('POST', '/v1/webhooks/replay', { body });
      expect(answer.status).toBe(202);
      expect(answer.body.object).toBe('webhook_replay');
      for (const d of answer.body.data) expect(d).toMatchObject({ manual: true, test: false, status: 'pending' });
      return answer.body.data as Delivery[];
    };
    const expectSameBytes = (request: { body: { id: string }; rawBody: Buffer; headers: Record<string, unknown> }) => {
      expect(request.rawBody.equals(originalBody.get(request.body.id)!)).toBe(true);
      expect(request.headers['service-event-id']).toBe(request.body.id);
    };

    const toDisabled = await replay({ event_ids: [e1], endpoint_id: disabledEndpoint.id });
    expect(toDisabled.map((d) => [d.endpoint_id, d.event_id])).toEqual([[disabledEndpoint.id, e1]]);
    expectSameBytes((await disabled!.waitFor(1))[0]!);

    const toChat = await replay({ event_ids: [e2], endpoint_id: chatEndpoint.id });
    expect(toChat.map((d) => [d.endpoint_id, d.event_id])).toEqual([[chatEndpoint.id, e2]]);
    expectSameBytes((await chat!.waitFor(1))[0]!);

    const toAll = await replay({ event_ids: [e2, e1] });
    expect(toAll.map((d) => d.event_id)).toEqual([e2, e2, e1, e1]);
    expect(new Set(toAll.slice(0, 2).map((d) => d.endpoint_id))).toEqual(
      new Set([prefixEndpoint.id, everythingEndpoint.id]),
    );
    expect(new Set(toAll.slice(2).map((d) => d.endpoint_id))).toEqual(
      new Set([prefixEndpoint.id, everythingEndpoint.id]),
    );
    for (const r of [prefix!, everything!]) {
      const again = (await r.waitFor(4)).slice(2);
      expect(new Set(again.map((request) => request.body.id))).toEqual(new Set([e1, e2]));
      again.forEach(expectSameBytes);
    }
    for (const d of [...toDisabled, ...toChat, ...toAll]) {
      const delivery = await afterAttempts(d.id, 1);
      expect(delivery).toMatchObject({ status: 'delivered', manual: true });
      expect(delivery.attempts.map((a) => a.trigger)).toEqual(['manual']);
    }
    await pause(QUIET_MS);
    expect([prefix!, everything!, disabled!, chat!].map((r) => r.requests.length)).toEqual([4, 4, 1, 1]);
  });

  test('replay is all or nothing: unknown events and endpoints are 404, events older than 30 days 422 event_too_old', async () => {
    const r = await receiver();
    const endpoint = await createEndpoint(r.url, ['workspace.*']);
    await addMember();
    const [original] = await r.waitFor(1);
    const e1 = original!.body.id as string;
    const before = (await listDeliveries('')).map((d) => d.id);

    const unknown = `evt_${ulid(clock.now().getTime())}`;
    const missing = await server.call('POST', '/v1/webhooks/replay', { body: { event_ids: [e1, unknown] } });
    expectProblem(missing, 404, 'not_found');
    expect(missing.body.errors[0].pointer).toBe('/event_ids/1');
    const noEndpoint = await server.call('POST', '/v1/webhooks/replay', {
      body: { event_ids: [e1], endpoint_id: `whe_${ulid(clock.now().getTime())}` },
    });
    expectProblem(noEndpoint, 404, 'not_found');
    const ancient = `evt_${ulid(clock.now().getTime() - 40 * DAY_MS)}`;
    const tooOldId = await server.call('POST', '/v1/webhooks/replay', {
      body: { event_ids: [e1, ancient], endpoint_id: endpoint.id },
    });
    expectProblem(tooOldId, 422, 'event_too_old');
    expect(tooOldId.body.errors[0].pointer).toBe('/event_ids/1');
    // The pattern admits ids whose time part is past the largest ULID time; such an id names no event.
    const impossible = await server.call('POST', '/v1/webhooks/replay', {
      body: { event_ids: [e1, 'evt_ZZZZZZZZZZZZZZZZZZZZZZZZZZ'] },
    });
    expectProblem(impossible, 404, 'not_found');
    expect(impossible.body.errors[0].pointer).toBe('/event_ids/1');
    // The largest ULID time (year 10889) is in the future, not more than 30 days ago.
    const future = await server.call('POST', '/v1/webhooks/replay', {
      body: { event_ids: ['evt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ'] },
    });
    expectProblem(future, 404, 'not_found');
    expect((await listDeliveries('')).map((d) => d.id)).toEqual(before);

    clock.advance(31 * DAY_MS);
    const tooOld = await server.call('POST', '/v1/webhooks/replay', {
      body: { event_ids: [e1], endpoint_id: endpoint.id },
    });
    expectProblem(tooOld, 422, 'event_too_old');
    expect(tooOld.body.errors[0].pointer).toBe('/event_ids/0');
    await pause(QUIET_MS);
    expect(r.requests).toHaveLength(1);
  });

  test('a replayed delivery that fails is retried on the schedule', async () => {
    const r = await receiver();
    const endpoint = await createEndpoint(r.url, ['workspace.*']);
    await addMember();
    const [original] = await r.waitFor(1);
    r.respond = () => ({ status: r.requests.length === 2 ? 502 : 200 });

    const answer = await server.call('POST', '/v1/webhooks/replay', {
      body: { event_ids: [original!.body.id], endpoint_id: endpoint.id },
    });
    expect(answer.status).toBe(202);
    const id = answer.body.data[0].id as string;
    await r.waitFor(2);
    const failed = await afterAttempts(id, 1);
    expect(failed).toMatchObject({ status: 'pending', attempt_count: 1, manual: true });
    expect(failed.attempts).toMatchObject([
      { number: 1, trigger: 'manual', status: 'failed', response_status_code: 502 },
    ]);
    expectWaitWithinJitter(failed.attempts[0]!, failed.next_attempt_at, 1);

    moveClockTo(Date.parse(failed.next_attempt_at!));
    const [, first, retry] = await r.waitFor(3);
    expect(retry!.rawBody.equals(first!.rawBody)).toBe(true);
    const delivered = await afterAttempts(id, 2);
    expect(delivered).toMatchObject({ status: 'delivered', attempt_count: 2 });
    expect(delivered.attempts.map((a) => [a.trigger, a.status])).toEqual([
      ['manual', 'failed'],
      ['scheduled', 'succeeded'],
    ]);
  });

  test('an attempt without an answer within the attempt timeout fails with timeout', async () => {
    const ATTEMPT_TIMEOUT_MS = 2000;
    await server.close();
    server = await start({ WEBHOOK_ATTEMPT_TIMEOUT_MS: String(ATTEMPT_TIMEOUT_MS) });
    const r = await receiver();
    r.respond = () => ({ status: 200, hang: true });
    const endpoint = await createEndpoint(r.url, ['workspace.member.added']);
    await addMember();
    await r.waitFor(1);
    const [queued] = await queueOf(endpoint.id);
    // Polled slowly: the key's rate limit counts every poll.
    const delivery = await afterAttempts(queued!.id, 1, 120, 250);
    expect(delivery.attempts).toEqual([
      {
        number: 1,
        trigger: 'scheduled',
        started_at: expect.any(String),
        status: 'failed',
        response_status_code: null,
        response_body: null,
        duration_ms: expect.any(Number),
        error: 'timeout',
      },
    ]);
    expect(delivery.attempts[0]!.duration_ms).toBeGreaterThanOrEqual(ATTEMPT_TIMEOUT_MS);
    expect(delivery).toMatchObject({ status: 'pending', attempt_count: 1 });
  });
});

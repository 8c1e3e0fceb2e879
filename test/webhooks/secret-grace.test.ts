// The end of a rotated webhook secret's grace period, to the millisecond (ManualClock, a real receiver on loopback):
// an attempt that starts one millisecond before `previous_secret_expires_at` is signed with both secrets; one that
// starts at that instant, with the new secret only. On SQLite only: the comparison is the worker's, not the database's.
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/platform/clock.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const DAY_MS = 86_400_000;

const hmac = (secret: string, timestamp: string, rawBody: Buffer) =>
  createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex');

describe('the previous webhook secret', () => {
  let server: TestServer;
  let receiver: Receiver;
  const clock = new ManualClock('2026-05-01T12:00:00.000Z');

  beforeAll(async () => {
    receiver = await startReceiver();
    server = await startTestServer({ clock, env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } });
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  test('signs attempts until its expiry, and not from that millisecond on', async () => {
    const created = await server.call('POST', '/v1/webhooks/endpoints', {
      body: { url: `${receiver.url}/hook`, event_types: ['workspace.member.added'] },
    });
    expect(created.status).toBe(201);
    const rotatedAt = clock.now().getTime();
    const rotated = await server.call('POST', `/v1/webhooks/endpoints/${created.body.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const [oldSecret, newSecret] = [created.body.secret as string, rotated.body.secret as string];
    expect(Date.parse(rotated.body.previous_secret_expires_at)).toBe(rotatedAt + DAY_MS);

    const signaturesOfNextDelivery = async (email: string) => {
      const before = receiver.requests.length;
      expect((await server.call('POST', '/v1/members', { body: { email, role: 'viewer' } })).status).toBe(201);
      const request = (await receiver.waitFor(before + 1))[before]!;
      const timestamp = request.headers['service-timestamp'] as string;
      const signatures = (request.headers['service-signature'] as string).split(',');
      return signatures.map((signature) =>
        signature === hmac(newSecret, timestamp, request.rawBody)
          ? 'new'
          : signature === hmac(oldSecret, timestamp, request.rawBody)
            ? 'old'
            : signature,
      );
    };

    clock.set(new Date(rotatedAt + DAY_MS - 1));
    expect(await signaturesOfNextDelivery('last-moment@grace.example')).toEqual(['new', 'old']);
    clock.set(new Date(rotatedAt + DAY_MS));
    expect(await signaturesOfNextDelivery('expired@grace.example')).toEqual(['new']);
  });
});

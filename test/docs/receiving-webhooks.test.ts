// The guide "Receiving webhooks" and its example receiver (examples/webhook-receiver.ts): the example, run in-process
// and as its own process, receives real deliveries of a real server (verification, de-duplication, rotation, forged and
// old requests), and the guide's page of the portal shows that very file and the schedule of schedule.ts.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { ulid } from 'ulid';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type RunningReceiver, secretsFromEnv, startReceiver } from '../../examples/webhook-receiver.ts';
import type { components } from '../../generated/openapi.ts';
import { signWebhookPayload, verifyWebhook, type WebhookEvent } from '../../generated/webhooks.ts';
import { scheduleTable } from '../../src/features/webhooks/schedule.ts';
import { hasChromium, launchChromium } from '../support/chromium.ts';
import { navigationOf } from '../support/portal.ts';
import { projectRoot } from '../support/prism.ts';
import { type Answer, startTestServer, type TestServer } from '../support/server.ts';

const examplePath = join(projectRoot, 'examples', 'webhook-receiver.ts');
const guidePath = join(projectRoot, 'docs', 'guides', 'receiving-webhooks.md');

/** Polls `probe` until it returns a value, at most `timeoutMs`. */
async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function expectProblem(answer: { status: number; headers: Headers; body: unknown }, status: number, code: string) {
  expect(answer.status).toBe(status);
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(answer.body).toMatchObject({ status, code });
}

describe('the example receiver against a real server', () => {
  let server: TestServer;
  let receiver: RunningReceiver;
  let endpointId: string;
  let secret: string;
  let memberEvent: WebhookEvent;
  let counter = 0;

  const handled = (receiver: RunningReceiver, id: string) => receiver.events.filter((e) => e.id === id);
  const waitForHandled = (receiver: RunningReceiver, id: string) =>
    until(`the receiver to handle ${id}`, () => handled(receiver, id)[0]);

  async function addMember(): Promise<string> {
    const answer = await server.call('POST', '/v1/members', {
      body: { email: `member-${++counter}@receiver.example`, role: 'editor' },
    });
    expect(answer.status).toBe(201);
    const events = await server.call('GET', '/v1/events?type=workspace.member.added&limit=100');
    const event = (events.body.data as WebhookEvent[]).find(
      (e) => e.type === 'workspace.member.added' && e.data.user_id === answer.body.id,
    );
    expect(event, 'the event of the new member is listed').toBeDefined();
    return event!.id;
  }

  /** The delivery of the event to the endpoint once it has ended (the one created by a replay with `manual`). */
  async function endedDelivery(eventId: string, manual: boolean): Promise<components['schemas']['WebhookDelivery']> {
    const id = await until(`a delivery of ${eventId}`, async () => {
      const list = await server.call('GET', `/v1/webhooks/deliveries?event_id=${eventId}&endpoint_id=${endpointId}`);
      return (list.body.data as Array<{ id: string; manual: boolean }>).find((d) => d.manual === manual)?.id;
    });
    return until(`delivery ${id} to end`, async () => {
      const delivery = await server.call('GET', `/v1/webhooks/deliveries/${id}`);
      return delivery.body.status === 'pending' ? undefined : delivery.body;
    });
  }

  /** POSTs a body to the receiver as the test builds it, outside the server. */
  async function post(url: string, body: string, headers: Record<string, string>): Promise<Answer> {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body,
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: JSON.parse(text), text };
  }

  /** An event the receiver has never seen, with the shape of a real one. */
  function freshEvent(): string {
    return JSON.stringify({ ...memberEvent, id: `evt_${ulid()}` });
  }

  /** Sends a correctly signed, new event and waits until it is handled: whatever was sent before it was handled by then. */
  async function sendValidAndWait(): Promise<void> {
    const body = freshEvent();
    const timestamp = Math.floor(Date.now() / 1000);
    const answer = await post(receiver.url, body, {
      'Service-Timestamp': String(timestamp),
      'Service-Signature': signWebhookPayload(body, secret, timestamp),
    });
    expect(answer.status).toBe(200);
    await waitForHandled(receiver, JSON.parse(body).id);
  }

  beforeAll(async () => {
    server = await startTestServer({ database: 'sqlite', env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } });
    // The secret is known only once the endpoint exists: create it disabled, start the receiver with the secret, then
    // point the endpoint at the receiver and enable it, as one would when deploying a receiver.
    const created = await server.call('POST', '/v1/webhooks/endpoints', {
      body: { url: 'http://127.0.0.1:9/pending', event_types: ['workspace.member.*'], enabled: false },
    });
    expect(created.status).toBe(201);
    endpointId = created.body.id;
    secret = created.body.secret;
    receiver = await startReceiver({ secrets: [secret], host: '127.0.0.1', handle: () => {} });
    const enabled = await server.call('PATCH', `/v1/webhooks/endpoints/${endpointId}`, {
      body: { url: `${receiver.url}/`, enabled: true },
    });
    expect(enabled.status).toBe(200);
  });

  afterAll(async () => {
    await receiver?.close();
    await server?.close();
  });

  test('verifies a real delivery and hands the event to its handler', async () => {
    const eventId = await addMember();
    memberEvent = await waitForHandled(receiver, eventId);
    const listed = await server.call('GET', `/v1/events/${eventId}`);
    expect(memberEvent).toEqual(listed.body);
    expect(memberEvent).toMatchObject({ type: 'workspace.member.added', test: false });

    const delivery = await endedDelivery(eventId, false);
    expect(delivery.status).toBe('delivered');
    expect(delivery.attempts).toHaveLength(1);
    expect(delivery.attempts[0]).toMatchObject({
      status: 'succeeded',
      response_status_code: 200,
      response_body: '{"received":true}',
    });
  });

  test('verifies a test event and hands it to its handler with `test: true`', async () => {
    const answer = await server.call('POST', `/v1/webhooks/endpoints/${endpointId}/test`, {
      body: { event_type: 'workspace.member.removed' },
    });
    expect(answer.status).toBe(202);
    const event = await waitForHandled(receiver, answer.body.event_id);
    expect(event).toMatchObject({ type: 'workspace.member.removed', test: true, workspace_id: server.workspaceId });
  });

  test('answers a replay 200 without handling the event a second time', async () => {
    const replay = await server.call('POST', '/v1/webhooks/replay', {
      body: { event_ids: [memberEvent.id], endpoint_id: endpointId },
    });
    expect(replay.status).toBe(202);
    expect(replay.body.data).toHaveLength(1);
    const delivery = await endedDelivery(memberEvent.id, true);
    expect(delivery.status).toBe('delivered');
    expect(delivery.attempts[0]).toMatchObject({
      trigger: 'manual',
      response_status_code: 200,
      response_body: '{"received":true,"duplicate":true}',
    });
    // Handling runs right after the answer; a valid event sent after the replay's is handled after it would have been.
    await sendValidAndWait();
    expect(handled(receiver, memberEvent.id)).toHaveLength(1);
  });

  test('refuses forged requests with 400 and the reason, and does not handle them', async () => {
    const timestamp = Math.floor(Date.now() / 1000);
    const forged = freshEvent();
    expectProblem(
      await post(receiver.url, forged, {
        'Service-Timestamp': String(timestamp),
        'Service-Signature': signWebhookPayload(forged, 'whsec_not-the-secret', timestamp),
      }),
      400,
      'invalid_signature',
    );
    // Signed with the real secret, then changed on the way.
    const original = freshEvent();
    const tampered = original.replace('"role":"editor"', '"role":"owner"');
    expect(tampered).not.toBe(original);
    expectProblem(
      await post(receiver.url, tampered, {
        'Service-Timestamp': String(timestamp),
        'Service-Signature': signWebhookPayload(original, secret, timestamp),
      }),
      400,
      'invalid_signature',
    );
    const unsigned = freshEvent();
    expectProblem(await post(receiver.url, unsigned, {}), 400, 'missing_header');

    await sendValidAndWait();
    for (const body of [forged, tampered, unsigned]) expect(handled(receiver, JSON.parse(body).id)).toEqual([]);
  });

  test('refuses a correctly signed request whose timestamp is more than 300 s away', async () => {
    const now = Math.floor(Date.now() / 1000);
    const sent: string[] = [];
    // The receiver reads its clock after `now` is taken: +330 leaves room for the seconds in between (the limit is 300).
    for (const timestamp of [now - 301, now - 3600, now + 330]) {
      const body = freshEvent();
      sent.push(body);
      const answer = await post(receiver.url, body, {
        'Service-Timestamp': String(timestamp),
        'Service-Signature': signWebhookPayload(body, secret, timestamp),
      });
      expectProblem(answer, 400, 'timestamp_outside_tolerance');
    }
    await sendValidAndWait();
    for (const body of sent) expect(handled(receiver, JSON.parse(body).id)).toEqual([]);
  });

  test('keeps verifying deliveries while the secret is rotated', async () => {
    const rotated = await server.call('POST', `/v1/webhooks/endpoints/${endpointId}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.previous_secret_expires_at).not.toBeNull();
    const newSecret: string = rotated.body.secret;
    expect(newSecret).not.toBe(secret);

    // The receiver still has only the old secret: the old secret keeps signing for 24 hours.
    await waitForHandled(receiver, await addMember());

    // The receiver as one runs it: its own process, configured with both secrets, the new one first.
    const child = spawn(process.execPath, [examplePath], {
      cwd: projectRoot,
      env: { ...process.env, WEBHOOK_SECRETS: `${newSecret},${secret}`, PORT: '0', HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const lines: string[] = [];
      createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line));
      const url = await until(
        'the receiver process to listen',
        () => lines.map((l) => /^listening on (http:\S+)$/.exec(l)?.[1]).find(Boolean),
        20_000,
      );
      expect(
        (await server.call('PATCH', `/v1/webhooks/endpoints/${endpointId}`, { body: { url: `${url}/` } })).status,
      ).toBe(200);
      const eventId = await addMember();
      await until(`the receiver process to handle ${eventId}`, () =>
        lines.find((l) => l === `handled workspace.member.added ${eventId}`),
      );
      expect((await endedDelivery(eventId, false)).status).toBe('delivered');
    } finally {
      child.kill('SIGTERM');
    }
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);

    // A receiver that already switched to the new secret alone accepts the deliveries too.
    const switched = await startReceiver({ secrets: [newSecret], host: '127.0.0.1', handle: () => {} });
    try {
      expect(
        (await server.call('PATCH', `/v1/webhooks/endpoints/${endpointId}`, { body: { url: `${switched.url}/` } }))
          .status,
      ).toBe(200);
      await waitForHandled(switched, await addMember());
    } finally {
      await switched.close();
    }
  });

  test('reads its secrets from WEBHOOK_SECRETS (comma-separated) or WEBHOOK_SECRET', () => {
    expect(secretsFromEnv({ WEBHOOK_SECRETS: 'whsec_new, whsec_old', WEBHOOK_SECRET: 'whsec_other' })).toEqual([
      'whsec_new',
      'whsec_old',
    ]);
    expect(secretsFromEnv({ WEBHOOK_SECRET: 'whsec_only' })).toEqual(['whsec_only']);
    expect(secretsFromEnv({ WEBHOOK_SECRETS: '', WEBHOOK_SECRET: 'whsec_only' })).toEqual(['whsec_only']);
    expect(secretsFromEnv({})).toEqual([]);
  });

  test('listens on 127.0.0.1 only unless told otherwise, as its header says', async () => {
    const local = await startReceiver({ secrets: [secret], handle: () => {} });
    try {
      expect(local.address).toBe('127.0.0.1');
      expect(local.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await local.close();
    }
    const everywhere = await startReceiver({ secrets: [secret], host: '0.0.0.0', handle: () => {} });
    try {
      expect(everywhere.address).toBe('0.0.0.0');
    } finally {
      await everywhere.close();
    }
  });
});

describe.skipIf(!hasChromium)('the guide', () => {
  const source = readFileSync(guidePath, 'utf8');
  const example = readFileSync(examplePath, 'utf8');
  const site = mkdtempSync(join(tmpdir(), 'content-service-docs-'));
  let page: string;
  let browser: Browser;

  beforeAll(async () => {
    // Its own output directory: test/docs/docs.test.ts may be building docs/site/ at the same time.
    execFileSync(process.execPath, [join(projectRoot, 'scripts', 'build-docs.ts'), site], {
      cwd: projectRoot,
      stdio: 'ignore',
    });
    page = readFileSync(join(site, 'receiving-webhooks.html'), 'utf8');
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    rmSync(site, { recursive: true, force: true });
  });

  const decode = (html: string) =>
    html
      .replace(/<[^>]+>/g, '')
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&quot;/g, '"')
      .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
      .replace(/&amp;/g, '&');

  test('keeps include markers in the Markdown source, with a link to the example for readers on GitHub', () => {
    expect(source).toContain(
      '<!-- include: examples/webhook-receiver.ts -->\nThe code is in [`examples/webhook-receiver.ts`](../../examples/webhook-receiver.ts)',
    );
    expect(source).toContain('<!-- include: retry-schedule -->\n');
    expect(source.match(/<!-- end include -->/g)).toHaveLength(2);
  });

  test('the delivery it shows is correctly signed with the example secret', () => {
    const [, head, body] = /```http\n([\s\S]*?)\n\n(.*)\n```/.exec(source)!;
    const headers = Object.fromEntries(
      head!
        .split('\n')
        .slice(1)
        .map((line) => line.split(': ') as [string, string]),
    );
    const timestamp = Number(headers['Service-Timestamp']);
    const event = verifyWebhook(body!, headers, 'whsec_Q2h7vN4kR9pX1mT6sW3yB8cF5gJ0dL2eH7aK4nP9rUz', {
      now: () => timestamp * 1000,
    });
    expect(event).toMatchObject({ id: headers['Service-Event-Id'], type: headers['Service-Event-Type'] });
  });

  test('its page shows the example file exactly and the schedule of schedule.ts', () => {
    const blocks = [...page.matchAll(/<pre><code class="language-ts">([\s\S]*?)<\/code><\/pre>/g)].map((m) =>
      decode(m[1]!),
    );
    expect(blocks).toContain(example);
    expect(page).not.toContain('<!-- include:');
    expect(page).not.toContain('](../../examples/');

    const rows = [...page.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((m) =>
      [...m[1]!.matchAll(/<t[hd]>([\s\S]*?)<\/t[hd]>/g)].map((c) => decode(c[1]!).trim()),
    );
    const expected = scheduleTable()
      .split('\n')
      .filter((line) => !line.startsWith('|---'))
      .map((line) => line.slice(2, -2).split(' | '));
    expect(expected).toHaveLength(25);
    const start = rows.findIndex((row) => row[0] === 'attempt');
    expect(rows.slice(start, start + expected.length)).toEqual(expected);
  });

  test('the AsyncAPI page links to it', () => {
    expect(readFileSync(join(site, 'asyncapi.html'), 'utf8')).toContain(
      '<a href="receiving-webhooks.html">Receiving webhooks</a>',
    );
  });

  test('opens in Chromium with its sections and the example, without a request leaving the file system', async () => {
    const tab = await browser.newPage();
    const external: string[] = [];
    tab.on('request', (request) => {
      if (!/^(file|data|blob):/.test(request.url())) external.push(request.url());
    });
    await tab.goto(pathToFileURL(join(site, 'receiving-webhooks.html')).href);
    expect(await tab.locator('h1').allInnerTexts()).toEqual(['Receiving webhooks']);
    expect(await tab.locator('h2').allInnerTexts()).toEqual([
      'Creating an endpoint',
      'What a delivery looks like',
      'Verifying a delivery',
      'Rejecting old timestamps',
      'De-duplicating on id',
      'Answering fast',
      'Order and sequence',
      'Retries',
      'Rotating the secret',
      'Test events and replay',
      'Inspecting deliveries',
      'A complete receiver',
    ]);
    expect(await tab.locator('nav.portal a').evaluateAll((links) => links.map((a) => a.getAttribute('href')))).toEqual(
      navigationOf('receiving-webhooks.html'),
    );
    const code = await tab.locator('pre code.language-ts').evaluateAll((blocks) => blocks.map((b) => b.textContent));
    expect(code).toContain(example);
    expect(external).toEqual([]);
    await tab.close();
  });
});

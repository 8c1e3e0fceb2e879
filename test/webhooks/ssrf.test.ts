// The SSRF policy of webhook URLs (url-policy.ts): what a production server refuses when a URL is set (scheme,
// credentials, every private, loopback, link-local, reserved or unresolvable host, literal or after DNS), what the
// development setting WEBHOOKS_ALLOW_LOOPBACK=true also accepts and what it still refuses, the address table itself,
// the configuration guard around the setting, and the check at attempt time: a URL accepted by a development server
// is refused by a production one when it sends.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { addressAllowed } from '../../src/platform/url-guard.ts';
import { eventually } from '../support/expect.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { type Answer, freshDatabase, startTestServer, type TestServer } from '../support/server.ts';

function expectUrlRefused(answer: Answer, label: string): void {
  expect({
    url: label,
    status: answer.status,
    code: answer.body?.code,
    pointers: answer.body?.errors?.map((e: { pointer: string }) => e.pointer),
  }).toEqual({
    url: label,
    status: 422,
    code: 'invalid_webhook_url',
    pointers: ['/url'],
  });
}

/** Refused by a production server whatever the setting of the development flag would be. */
const refusedInProduction = [
  'http://example.com/hook', // not https
  'https://127.0.0.1/',
  'https://localhost/', // a name: refused after DNS resolves it to loopback
  'https://10.0.0.1/',
  'https://172.16.5.4/',
  'https://192.168.1.1/',
  'https://169.254.169.254/latest/meta-data',
  'https://[::1]/',
  'https://[fe80::1]/',
  'https://[fc00::1]/',
  'https://[::ffff:127.0.0.1]/',
  'https://0.0.0.0/',
  'https://100.64.0.1/', // carrier-grade NAT
  'https://2130706433/', // 127.0.0.1 written as one decimal number
  'https://user:pass@93.184.216.34/hook',
  'ftp://93.184.216.34/hook',
  'https://does-not-exist.invalid/', // does not resolve
];

describe('webhook URLs on a server without WEBHOOKS_ALLOW_LOOPBACK', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ database: 'sqlite' });
  });
  afterAll(async () => {
    await server?.close();
  });

  test.each(refusedInProduction)('create refuses %s with 422 invalid_webhook_url at /url', async (url) => {
    expectUrlRefused(await server.call('POST', '/v1/webhooks/endpoints', { body: { url, event_types: ['*'] } }), url);
  });

  test('a public IP literal is accepted without any DNS lookup', async () => {
    // Created disabled: nothing in this suite should try to reach a public address.
    const answer = await server.call('POST', '/v1/webhooks/endpoints', {
      body: { url: 'https://93.184.216.34/hook', event_types: ['*'], enabled: false },
    });
    expect(answer.status).toBe(201);
    expect(answer.body.url).toBe('https://93.184.216.34/hook');
  });

  test('PATCH refuses the same URLs and keeps the endpoint as it was', async () => {
    const created = await server.call('POST', '/v1/webhooks/endpoints', {
      body: { url: 'https://93.184.216.34/hook', event_types: ['*'], enabled: false },
    });
    expect(created.status).toBe(201);
    const path = `/v1/webhooks/endpoints/${created.body.id}`;
    for (const url of refusedInProduction) {
      expectUrlRefused(await server.call('PATCH', path, { body: { url } }), url);
    }
    const { secret: _secret, ...unchanged } = created.body;
    expect((await server.call('GET', path)).body).toEqual(unchanged);
    expect((await server.call('GET', '/v1/audit-logs?action=webhook_endpoint.updated')).body.data).toEqual([]);
  });

  test('the refusal says what is wrong with the URL', async () => {
    const detail = async (url: string) =>
      (await server.call('POST', '/v1/webhooks/endpoints', { body: { url, event_types: ['*'] } })).body.errors[0]
        .detail as string;
    expect(await detail('http://example.com/hook')).toMatch(/https/);
    expect(await detail('https://user:pass@93.184.216.34/hook')).toMatch(/credentials/);
    // The rule, not the address a name resolves to: a caller could map internal DNS with it.
    const local = await detail('https://localhost/');
    expect(local).toMatch(/localhost resolves to an address in a private, loopback or link-local network/);
    expect(local).not.toMatch(/127\.0\.0\.1|::1/);
    expect(await detail('https://does-not-exist.invalid/')).toMatch(/does not resolve/);
  });

  test('a refusal the development setting would lift names it; one it would not lift does not', async () => {
    const problem = async (url: string) =>
      (await server.call('POST', '/v1/webhooks/endpoints', { body: { url, event_types: ['*'] } })).body;
    const hint = /start content-service with WEBHOOKS_ALLOW_LOOPBACK=true \(development only\)\.$/;
    for (const url of [
      'http://127.0.0.1:3000/',
      'https://localhost/',
      'https://10.0.0.1/',
      'http://example.com/hook',
    ]) {
      const refused = await problem(url);
      expect(refused, url).toMatchObject({ status: 422, code: 'invalid_webhook_url' });
      expect(refused.detail, url).toMatch(hint);
      expect(refused.errors[0].detail, url).not.toMatch(/WEBHOOKS_ALLOW_LOOPBACK/);
    }
    for (const url of ['https://169.254.169.254/', 'https://user:pass@93.184.216.34/hook'])
      expect((await problem(url)).detail, url).not.toMatch(/WEBHOOKS_ALLOW_LOOPBACK/);
  });
});

describe('webhook and knowledge-source URLs on a server with NODE_ENV=production', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ database: 'sqlite', env: { NODE_ENV: 'production' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  test('an internal name and one that does not resolve get the same answer, with no hint of the development setting', async () => {
    const refusal = async (url: string) => {
      const answer = await server.call('POST', '/v1/webhooks/endpoints', { body: { url, event_types: ['*'] } });
      expect(answer.status, url).toBe(422);
      return answer.body as { detail: string; errors: { detail: string }[] };
    };
    const internal = await refusal('https://localhost/hook');
    const missing = await refusal('https://does-not-exist.invalid/hook');
    expect(internal.errors[0]!.detail).toBe('host localhost does not resolve to a public address');
    expect(missing.errors[0]!.detail).toBe('host does-not-exist.invalid does not resolve to a public address');
    for (const url of ['http://127.0.0.1:3000/', 'https://10.0.0.1/', 'http://example.com/hook'])
      expect((await refusal(url)).detail, url).not.toMatch(/WEBHOOKS_ALLOW_LOOPBACK/);
    expect(internal.detail).not.toMatch(/WEBHOOKS_ALLOW_LOOPBACK/);

    const base = await server.call('POST', '/v1/knowledge-bases', { body: { name: 'Help centre' } });
    expect(base.status, base.text).toBe(201);
    const source = await server.call('POST', `/v1/knowledge-bases/${base.body.id}/sources`, {
      body: { type: 'url', url: 'https://localhost/docs' },
    });
    expect(source.status, source.text).toBe(422);
    expect(source.body.errors[0].detail).toBe('host localhost does not resolve to a public address');
  });
});

describe('webhook URLs on a server with WEBHOOKS_ALLOW_LOOPBACK=true', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ database: 'sqlite', env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  // Created disabled: no event should be sent to these addresses.
  test.each([
    'http://127.0.0.1:9/hook',
    'http://localhost:9/hook',
    'https://10.0.0.1/',
    'https://[fc00::1]/',
    'http://192.168.1.1/',
  ])('accepts %s', async (url) => {
    const answer = await server.call('POST', '/v1/webhooks/endpoints', {
      body: { url, event_types: ['*'], enabled: false },
    });
    expect(answer.status, answer.text).toBe(201);
  });

  test.each([
    'https://169.254.169.254/',
    'http://169.254.169.254/latest/meta-data',
    'https://[fe80::1]/',
    'https://0.0.0.0/',
    'https://100.64.0.1/',
    'https://user:pass@127.0.0.1/',
    'ftp://127.0.0.1/',
  ])('still refuses %s', async (url) => {
    expectUrlRefused(await server.call('POST', '/v1/webhooks/endpoints', { body: { url, event_types: ['*'] } }), url);
  });
});

describe('addressAllowed', () => {
  // [address, allowed in production, allowed with WEBHOOKS_ALLOW_LOOPBACK=true]
  const table: Array<[string, boolean, boolean]> = [
    ['93.184.216.34', true, true],
    ['8.8.8.8', true, true],
    ['172.32.0.1', true, true], // just past 172.16.0.0/12
    ['127.0.0.1', false, true],
    ['127.1.2.3', false, true],
    ['10.1.2.3', false, true],
    ['172.16.0.1', false, true],
    ['172.31.255.255', false, true],
    ['192.168.0.1', false, true],
    ['169.254.169.254', false, false],
    ['0.0.0.0', false, false],
    ['0.1.2.3', false, false],
    ['100.64.0.1', false, false],
    ['224.0.0.1', false, false],
    ['255.255.255.255', false, false],
    ['240.0.0.1', false, false],
    ['192.0.2.1', false, false],
    ['2606:4700:4700::1111', true, true],
    ['2001:4860:4860::8888', true, true],
    ['::1', false, true],
    ['fc00::1', false, true],
    ['fd12:3456::1', false, true],
    ['fe80::1', false, false],
    ['::', false, false],
    ['ff02::1', false, false],
    ['2001:db8::1', false, false],
    ['64:ff9b::7f00:1', false, false], // NAT64 of 127.0.0.1
    ['2002:7f00:1::', false, false], // 6to4 of 127.0.0.1
    ['::ffff:8.8.8.8', true, true],
    ['::ffff:127.0.0.1', false, true],
    ['::ffff:7f00:1', false, true],
    ['::ffff:10.0.0.1', false, true],
    ['::ffff:169.254.169.254', false, false],
    ['::ffff:0.0.0.0', false, false],
    ['localhost', false, false],
    ['', false, false],
    ['256.1.1.1', false, false],
  ];

  test.each(table)('%s: production %s, development %s', (address, production, development) => {
    expect([addressAllowed(address, false), addressAllowed(address, true)]).toEqual([production, development]);
  });
});

describe('the WEBHOOKS_ALLOW_LOOPBACK setting', () => {
  const base = { DATABASE_URL: 'sqlite:/tmp/unused.db' };

  test('is refused with NODE_ENV=production', () => {
    expect(() => loadConfig({ ...base, NODE_ENV: 'production', WEBHOOKS_ALLOW_LOOPBACK: 'true' })).toThrow(ConfigError);
    expect(
      loadConfig({ ...base, NODE_ENV: 'production', WEBHOOKS_ALLOW_LOOPBACK: 'false' }).webhooksAllowLoopback,
    ).toBe(false);
    expect(loadConfig({ ...base, NODE_ENV: 'production' }).webhooksAllowLoopback).toBe(false);
  });

  test('takes only true or false', () => {
    expect(() => loadConfig({ ...base, NODE_ENV: 'development', WEBHOOKS_ALLOW_LOOPBACK: 'yes' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, NODE_ENV: 'development', WEBHOOKS_ALLOW_LOOPBACK: '1' })).toThrow(ConfigError);
    expect(
      loadConfig({ ...base, NODE_ENV: 'development', WEBHOOKS_ALLOW_LOOPBACK: 'true' }).webhooksAllowLoopback,
    ).toBe(true);
    expect(loadConfig({ ...base, NODE_ENV: 'development' }).webhooksAllowLoopback).toBe(false);
  });
});

describe('the URL policy at attempt time', () => {
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  test('loopback URLs set by a development server are refused (address_blocked) when a production server sends', async () => {
    const database = await freshDatabase('sqlite');
    let production: TestServer | undefined;
    try {
      const development = await startTestServer({
        databaseUrl: database.url,
        env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' },
      });
      const ownerKey = development.ownerKey;
      const port = new URL(receiver.url).port;
      // http and a literal; https and a literal; https and a name, which only the connection's lookup can refuse
      // (without it the attempt would reach the receiver and fail its TLS handshake instead).
      const urls = [`${receiver.url}/hook`, `https://127.0.0.1:${port}/hook`, `https://localhost:${port}/hook`];
      const endpoints: string[] = [];
      for (const url of urls) {
        const created = await development.call('POST', '/v1/webhooks/endpoints', {
          body: { url, event_types: ['workspace.member.*'] },
        });
        expect(created.status, url).toBe(201);
        endpoints.push(created.body.id);
      }
      await development.close();

      production = await startTestServer({ databaseUrl: database.url, workspace: false });
      const server = production;
      const added = await server.call('POST', '/v1/members', {
        key: ownerKey,
        body: { email: 'blocked@ssrf.example', role: 'viewer' },
      });
      expect(added.status).toBe(201);

      for (const [i, endpointId] of endpoints.entries()) {
        const list = await server.call('GET', `/v1/webhooks/deliveries?endpoint_id=${endpointId}`, { key: ownerKey });
        expect(list.body.data.length).toBe(1);
        const delivery = await eventually(
          () => server.call('GET', `/v1/webhooks/deliveries/${list.body.data[0].id}`, { key: ownerKey }),
          (answer) => answer.body.attempts?.length >= 1,
        );
        expect({ url: urls[i], attempt: delivery.body.attempts[0] }).toMatchObject({
          url: urls[i],
          attempt: {
            number: 1,
            status: 'failed',
            error: 'address_blocked',
            response_status_code: null,
            response_body: null,
          },
        });
        expect(delivery.body).toMatchObject({ status: 'pending', attempt_count: 1, last_response_status_code: null });
      }
      expect(receiver.requests).toEqual([]);
    } finally {
      await production?.close();
      await database.drop();
    }
  });
});

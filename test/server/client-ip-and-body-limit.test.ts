// Two settings of the server that only a request from outside shows (one SQLite server per setting):
// - TRUST_PROXY decides the client IP that the request log and the audit log record: without it X-Forwarded-For is
//   ignored (the connection's address); with `loopback` the address the loopback proxy saw (the rightmost one it did
//   not add itself); with a hop count of 2 the one before that;
// - BODY_LIMIT_BYTES (default 1 MiB): a body of exactly the limit is read, one byte more is 413 payload_too_large.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectProblem } from '../support/expect.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const FORWARDED_FOR = '198.51.100.1, 203.0.113.7';

describe.each([
  { trustProxy: undefined, ip: '127.0.0.1' },
  { trustProxy: 'loopback', ip: '203.0.113.7' },
  { trustProxy: '2', ip: '198.51.100.1' },
])('the logged client IP with TRUST_PROXY=$trustProxy', ({ trustProxy, ip }) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: trustProxy ? { TRUST_PROXY: trustProxy } : {} });
  });
  afterAll(async () => {
    await server?.close();
  });

  test(`is ${ip} in the request log and in the audit log`, async () => {
    const created = await server.call('POST', '/v1/api-keys', {
      body: { name: 'from behind a proxy', role: 'viewer' },
      headers: { 'X-Forwarded-For': FORWARDED_FOR },
    });
    expect(created.status).toBe(201);
    const requestId = created.headers.get('x-request-id');

    const logs = await server.call('GET', '/v1/request-logs?limit=100');
    expect(logs.status).toBe(200);
    const logRow = logs.body.data.find((row: { id: string }) => row.id === requestId);
    expect(logRow).toMatchObject({ ip, operation_id: 'createApiKey' });

    const audit = await server.call('GET', '/v1/audit-logs?action=api_key.created&limit=100');
    expect(audit.status).toBe(200);
    const entry = audit.body.data.find((row: { request_id: string }) => row.request_id === requestId);
    expect(entry).toMatchObject({ ip, action: 'api_key.created' });
  });
});

/** A createApiKey body of exactly `bytes` bytes: valid JSON, padded with spaces. */
function bodyOf(bytes: number): string {
  const json = JSON.stringify({ name: 'sized', role: 'viewer' });
  return `${json.slice(0, -1)}${' '.repeat(bytes - Buffer.byteLength(json))}}`;
}

describe.each([
  { setting: undefined, limit: 1_048_576 },
  { setting: '2048', limit: 2048 },
])('BODY_LIMIT_BYTES=$setting', ({ setting, limit }) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: setting ? { BODY_LIMIT_BYTES: setting } : {} });
  });
  afterAll(async () => {
    await server?.close();
  });

  test(`a body of ${limit} bytes is read; one byte more is 413 payload_too_large`, async () => {
    const post = (rawBody: string) =>
      server.call('POST', '/v1/api-keys', { rawBody, headers: { 'Content-Type': 'application/json' } });
    expect(Buffer.byteLength(bodyOf(limit))).toBe(limit);
    expect((await post(bodyOf(limit))).status).toBe(201);
    const tooLarge = await post(bodyOf(limit + 1));
    expectProblem(tooLarge, 413, 'payload_too_large');
    expect(tooLarge.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });
});

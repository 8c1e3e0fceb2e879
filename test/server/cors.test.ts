// CORS as the contract's introduction promises: a page on another origin reads the API with a key in a header (the
// browser's preflight is answered) and reads public documents, in a real browser; answers carry
// `Access-Control-Allow-Origin: *` and expose the headers clients need.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { hasChromium, launchChromium } from '../support/chromium.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('CORS', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  test('every answer may be read from any origin; a preflight is 204 with what the API accepts', async () => {
    const answer = await fetch(`${server.url}/v1/workspace`, {
      headers: { Origin: 'https://app.example', Authorization: `Bearer ${server.ownerKey}` },
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('access-control-allow-origin')).toBe('*');
    expect(answer.headers.get('access-control-expose-headers')).toContain('X-Request-Id');
    expect(answer.headers.get('access-control-expose-headers')).toContain('traceresponse');
    const refused = await fetch(`${server.url}/v1/workspace`, { headers: { Origin: 'https://app.example' } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe('*');
    const preflight = await fetch(`${server.url}/v1/documents`, {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://app.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization, content-type, idempotency-key',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    expect(preflight.headers.get('access-control-allow-headers')).toContain('Idempotency-Key');
  });

  describe.skipIf(!hasChromium)('in a browser on another origin', () => {
    let browser: Browser;
    let page: http.Server;

    // biome-ignore lint/suspicious/noDuplicateTestHooks: this hook is in the nested describe.skipIf block, which Biome does not see as a describe
    beforeAll(async () => {
      page = http.createServer((_req, res) =>
        res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>Another site</title>'),
      );
      await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
      browser = await launchChromium();
    });
    // biome-ignore lint/suspicious/noDuplicateTestHooks: this hook is in the nested describe.skipIf block, which Biome does not see as a describe
    afterAll(async () => {
      await browser?.close();
      await new Promise<void>((resolve) => page?.close(() => resolve()));
    });

    test('a page of another origin creates a document with a key and reads it back', async () => {
      const tab = await browser.newPage();
      // localhost and 127.0.0.1 are two origins to the browser.
      await tab.goto(`http://localhost:${(page.address() as AddressInfo).port}/`);
      const result = await tab.evaluate(
        async ({ api, key }) => {
          const created = await fetch(`${api}/v1/documents`, {
            method: 'POST',
            headers: {
              Authorization: `Bearer ${key}`,
              'Content-Type': 'application/json',
              'Idempotency-Key': 'cors-test-1',
            },
            body: JSON.stringify({ title: 'From a browser' }),
          });
          const body = await created.json();
          return {
            status: created.status,
            title: body.title,
            requestId: created.headers.get('x-request-id'),
            location: created.headers.get('location'),
          };
        },
        { api: server.url, key: server.ownerKey },
      );
      expect(result).toMatchObject({
        status: 201,
        title: 'From a browser',
        requestId: expect.stringMatching(/^req_/),
        location: expect.stringMatching(/^\/v1\/documents\/doc_/),
      });
      await tab.close();
    });
  });
});

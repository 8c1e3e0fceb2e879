// A webhook URL with credentials in it is refused, whether it has a user name, a password or both: the URL is shown
// to every admin of the workspace and sent in logs, so it must not carry a secret (the endpoint's secret signs).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectProblem } from '../support/expect.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('webhook URLs with credentials', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  test.each([
    'https://user@203.0.113.10/hook',
    'https://:secret@203.0.113.10/hook',
    'https://user:secret@203.0.113.10/hook',
  ])('%s is 422 invalid_webhook_url', async (url) => {
    const answer = await server.call('POST', '/v1/webhooks/endpoints', { body: { url, event_types: ['*'] } });
    expectProblem(answer, 422, 'invalid_webhook_url');
    expect(answer.body.errors).toEqual([expect.objectContaining({ detail: 'must not contain credentials' })]);
  });
});

// GET /metrics as Prometheus scrapes it, against real servers on SQLite and PostgreSQL: not served without
// METRICS_TOKEN, refused without the token, and its text parsed: the counters of requests, provider calls, tokens,
// cost and webhook attempts move with the work done, and the scrape-time gauges (queues, pool) are there.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { expectProblem } from '../support/expect.ts';
import { type FakeProvider, startFakeOpenAi } from '../support/fake-providers.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';

const TOKEN = 'metrics-token-for-the-tests-0123456789';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of Prometheus's text format (version 0.0.4): `name{label="value",…} value` lines; comments skipped. */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[name!] = value!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

class Scrape {
  readonly samples: Sample[];

  constructor(samples: Sample[]) {
    this.samples = samples;
  }

  /** The sum of the samples of `name` whose labels include `labels` (0 when there is none). */
  value(name: string, labels: Record<string, string> = {}): number {
    return this.matching(name, labels).reduce((sum, sample) => sum + sample.value, 0);
  }

  matching(name: string, labels: Record<string, string> = {}): Sample[] {
    return this.samples.filter(
      (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
    );
  }
}

async function scrape(server: TestServer): Promise<Scrape> {
  const response = await fetch(`${server.url}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return new Scrape(parseExposition(await response.text()));
}

describe('GET /metrics without METRICS_TOKEN', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  test('is not served: 404 as any unknown path, with or without a token', async () => {
    const bare = await server.call('GET', '/metrics', { key: null });
    expect(bare.status).toBe(404);
    const withToken = await server.call('GET', '/metrics', { key: TOKEN });
    expect(withToken.status).toBe(404);
    expect(withToken.text).not.toContain('content_service_');
  });
});

describe.each(databaseKinds)('GET /metrics on %s', (kind) => {
  let server: TestServer;
  let openai: FakeProvider;
  let receiver: Receiver | undefined;

  beforeAll(async () => {
    openai = await startFakeOpenAi();
    server = await startTestServer({
      database: kind,
      env: {
        METRICS_TOKEN: TOKEN,
        WEBHOOKS_ALLOW_LOOPBACK: 'true',
        OPENAI_API_KEY: 'sk-test',
        OPENAI_BASE_URL: openai.url,
        PROVIDER_MAX_RETRIES: '0',
      },
    });
  });
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });
  afterAll(async () => {
    await server?.close();
    await openai?.close();
  });

  test('refuses a caller without the token, with a wrong one, or with an API key: 401 problem', async () => {
    const missing = await server.call('GET', '/metrics', { key: null });
    expectProblem(missing, 401, 'unauthenticated');
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
    expect(missing.text).not.toContain('content_service_');
    expectProblem(await server.call('GET', '/metrics', { key: `${TOKEN}x` }), 401, 'unauthenticated');
    expectProblem(await server.call('GET', '/metrics', { key: TOKEN.slice(0, -1) }), 401, 'unauthenticated');
    expectProblem(
      await server.call('GET', '/metrics', {
        headers: { Authorization: `Basic ${Buffer.from(`prometheus:${TOKEN}`).toString('base64')}` },
        key: null,
      }),
      401,
      'unauthenticated',
    );
    // The owner's API key is not the metrics token.
    expectProblem(await server.call('GET', '/metrics'), 401, 'unauthenticated');
  });

  test('counts requests by operation and status, with their durations', async () => {
    const before = await scrape(server);
    for (let i = 0; i < 3; i++) expect((await server.call('GET', '/v1/models')).status).toBe(200);
    expect((await server.call('GET', '/v1/models', { key: null })).status).toBe(401);
    expect((await server.call('GET', '/v1/no-such-thing')).status).toBe(404);
    const after = await scrape(server);

    const requests = 'content_service_http_requests_total';
    expect(
      after.value(requests, { operation: 'listModels', method: 'GET', status: '200' }) -
        before.value(requests, { operation: 'listModels', method: 'GET', status: '200' }),
    ).toBe(3);
    expect(
      after.value(requests, { operation: 'listModels', status: '401' }) -
        before.value(requests, { operation: 'listModels', status: '401' }),
    ).toBe(1);
    expect(
      after.value(requests, { operation: 'none', status: '404' }) -
        before.value(requests, { operation: 'none', status: '404' }),
    ).toBe(1);
    // Never a raw path as a label.
    expect(after.samples.some((sample) => Object.values(sample.labels).some((value) => value.includes('/v1/')))).toBe(
      false,
    );
    const durations = 'content_service_http_request_duration_seconds_count';
    expect(
      after.value(durations, { operation: 'listModels' }) - before.value(durations, { operation: 'listModels' }),
    ).toBe(4);
    expect(
      after.value('content_service_http_request_duration_seconds_bucket', { operation: 'listModels', le: '+Inf' }),
    ).toBe(after.value(durations, { operation: 'listModels' }));
  });

  test('counts provider calls, time to first token, tokens and cost of a sandbox chat completion', async () => {
    const before = await scrape(server);
    const body = {
      model: 'sandbox-writer',
      messages: [{ role: 'user', content: 'Write two sentences about spring gardening.' }],
    };
    const whole = await server.call('POST', '/v1/chat/completions', { body });
    expect(whole.status).toBe(200);
    const streamed = await server.call('POST', '/v1/chat/completions', {
      body: { ...body, stream: true, stream_options: { include_usage: true } },
    });
    expect(streamed.status).toBe(200);
    const after = await scrape(server);
    const grew = (name: string, labels: Record<string, string>) =>
      after.value(name, labels) - before.value(name, labels);

    const model = { model: 'sandbox-writer' };
    expect(grew('content_service_ai_provider_calls_total', { ...model, provider: 'sandbox', outcome: 'ok' })).toBe(2);
    expect(
      grew('content_service_ai_provider_call_duration_seconds_count', { ...model, provider: 'sandbox', outcome: 'ok' }),
    ).toBe(2);
    // Only the streamed call has a time to first token: the other is answered whole.
    expect(grew('content_service_ai_time_to_first_token_seconds_count', model)).toBe(1);
    expect(grew('content_service_http_requests_total', { operation: 'createChatCompletion', status: '200' })).toBe(2);

    const usage = whole.body.usage as { prompt_tokens: number; completion_tokens: number };
    const chat = { feature: 'chat', ...model };
    // Both answers were made from the same prompt; the whole one says what each cost.
    expect(grew('content_service_ai_tokens_total', { ...chat, kind: 'input' })).toBe(2 * usage.prompt_tokens);
    expect(grew('content_service_ai_tokens_total', { ...chat, kind: 'output' })).toBeGreaterThanOrEqual(
      usage.completion_tokens,
    );
    expect(grew('content_service_ai_cost_usd_total', chat)).toBeGreaterThan(0);
    expect(grew('content_service_ai_cost_usd_total', chat)).toBeCloseTo(whole.body.cost_usd * 2, 6);
  });

  test('counts provider calls that fail by outcome, and none for a request refused before any call', async () => {
    const model = { model: 'gpt-5.2', provider: 'openai' };
    const before = await scrape(server);
    openai.enqueue(
      { error: { status: 429, headers: { 'retry-after': '7' } } },
      { error: { status: 400, message: 'bad request' } },
      { text: 'Fine.' },
    );
    const ask = () =>
      server.call('POST', '/v1/chat/completions', {
        body: { model: 'gpt-5.2', messages: [{ role: 'user', content: 'Hello' }] },
      });
    expect((await ask()).status).toBe(429);
    expect((await ask()).status).toBe(502);
    expect((await ask()).status).toBe(200);
    // Over the model's output limit: refused before any call.
    expect(
      (
        await server.call('POST', '/v1/chat/completions', {
          body: { model: 'gpt-5.2', messages: [{ role: 'user', content: 'Hello' }], max_completion_tokens: 10_000_000 },
        })
      ).status,
    ).toBe(422);
    const after = await scrape(server);
    const grew = (outcome: string) =>
      after.value('content_service_ai_provider_calls_total', { ...model, outcome }) -
      before.value('content_service_ai_provider_calls_total', { ...model, outcome });
    expect({ rate_limited: grew('rate_limited'), upstream_error: grew('upstream_error'), ok: grew('ok') }).toEqual({
      rate_limited: 1,
      upstream_error: 1,
      ok: 1,
    });
    expect(
      after.value('content_service_ai_provider_calls_total', model) -
        before.value('content_service_ai_provider_calls_total', model),
    ).toBe(3);
    expect(
      after.value('content_service_ai_provider_call_duration_seconds_count', { ...model, outcome: 'rate_limited' }),
    ).toBeGreaterThanOrEqual(1);
    // The call that answered was answered whole (not streamed): no time to first token.
    expect(
      after.value('content_service_ai_time_to_first_token_seconds_count', { model: 'gpt-5.2' }) -
        before.value('content_service_ai_time_to_first_token_seconds_count', { model: 'gpt-5.2' }),
    ).toBe(0);
  });

  test('counts a streamed call its client abandoned as aborted, after its first token', async () => {
    const labels = { model: 'gpt-5.2', provider: 'openai', outcome: 'aborted' };
    const before = await scrape(server);
    openai.enqueue({ endless: true, chunkDelayMs: 5 });
    const controller = new AbortController();
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${server.ownerKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-5.2', stream: true, messages: [{ role: 'user', content: 'Go on forever.' }] }),
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let received = '';
    while (!received.includes('"content":"')) received += decoder.decode((await reader.read()).value);
    controller.abort();
    await openai.waitForDisconnect();
    // The call is counted when the engine's generator ends, just after it stopped reading the provider.
    let after = await scrape(server);
    for (
      let i = 0;
      i < 100 &&
      after.value('content_service_ai_provider_calls_total', labels) ===
        before.value('content_service_ai_provider_calls_total', labels);
      i++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await scrape(server);
    }
    expect(
      after.value('content_service_ai_provider_calls_total', labels) -
        before.value('content_service_ai_provider_calls_total', labels),
    ).toBe(1);
    expect(
      after.value('content_service_ai_time_to_first_token_seconds_count', { model: 'gpt-5.2' }) -
        before.value('content_service_ai_time_to_first_token_seconds_count', { model: 'gpt-5.2' }),
    ).toBe(1);
    // What was generated before the client left is billed, and counted.
    expect(
      after.value('content_service_ai_tokens_total', { feature: 'chat', model: 'gpt-5.2', kind: 'output' }),
    ).toBeGreaterThan(
      before.value('content_service_ai_tokens_total', { feature: 'chat', model: 'gpt-5.2', kind: 'output' }),
    );
  });

  test('counts webhook delivery attempts by outcome', async () => {
    receiver = await startReceiver();
    const endpoint = await server.call('POST', '/v1/webhooks/endpoints', {
      body: { url: `${receiver.url}/hook`, event_types: ['workspace.member.added'] },
    });
    expect(endpoint.status).toBe(201);
    const before = await scrape(server);
    receiver.respond = () => ({ status: 500 });
    expect((await server.call('POST', `/v1/webhooks/endpoints/${endpoint.body.id}/test`)).status).toBe(202);
    await receiver.waitFor(1);
    // The attempt is counted when the sender has its answer, just after the receiver sent it.
    let after = await scrape(server);
    for (
      let i = 0;
      i < 100 &&
      after.value('content_service_webhook_delivery_attempts_total') ===
        before.value('content_service_webhook_delivery_attempts_total');
      i++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await scrape(server);
    }
    expect(
      after.value('content_service_webhook_delivery_attempts_total', { outcome: 'failed' }) -
        before.value('content_service_webhook_delivery_attempts_total', { outcome: 'failed' }),
    ).toBe(1);
    expect(after.value('content_service_webhook_delivery_attempts_total', { outcome: 'succeeded' })).toBe(
      before.value('content_service_webhook_delivery_attempts_total', { outcome: 'succeeded' }),
    );
  });

  test('computes the queue gauges when scraped', async () => {
    const metrics = await scrape(server);
    expect(metrics.matching('content_service_webhook_queue_depth')).toHaveLength(1);
    expect(metrics.matching('content_service_jobs_queue_depth')).toHaveLength(1);
    expect(
      metrics
        .matching('content_service_workflow_runs')
        .map((sample) => sample.labels.status)
        .sort(),
    ).toEqual(['awaiting_approval', 'queued', 'running']);
    // Node's own metrics under their usual names.
    expect(metrics.matching('process_cpu_user_seconds_total')).toHaveLength(1);
    expect(metrics.matching('nodejs_eventloop_lag_seconds')).toHaveLength(1);

    const pool = metrics.matching('content_service_db_pool_connections');
    if (kind === 'postgres') {
      expect(pool.map((sample) => sample.labels.state).sort()).toEqual(['idle', 'in_use', 'waiting']);
      // The scrape itself ran the gauges' queries on the pool: it has opened connections.
      expect(
        metrics.value('content_service_db_pool_connections', { state: 'idle' }) +
          metrics.value('content_service_db_pool_connections', { state: 'in_use' }),
      ).toBeGreaterThan(0);
    } else {
      expect(pool).toHaveLength(0);
    }
  });
});

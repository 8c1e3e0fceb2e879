import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Catalogue } from '../../src/features/engine/catalogue.ts';
import { priceOf } from '../../src/features/engine/pricing.ts';
import { loadProvidersConfig } from '../../src/features/engine/providers/registry.ts';
import { features } from '../../src/features/index.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { migrate, openStorage } from '../../src/storage/database.ts';
import { type FakeProvider, startFakeOpenAi } from '../support/fake-providers.ts';
import { freePort, type ServerProcess, startServerProcess, waitUntilReady } from '../support/processes.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { freshDatabase, type TestDatabase } from '../support/server.ts';

const USAGE = { input: 12, output: 7 };
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_SPAN_ID = '00f067aa0ba902b7';

/** The access log lines (pino JSON) of a process's output. */
function accessLines(output: string): Array<{ access: { request_id: string; path: string }; trace_id?: string }> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line))
    .filter((line) => line.access);
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: OtlpValue }>;
  status?: { code?: number; message?: string };
}

/** An OTLP/JSON attribute value (AnyValue): one of its fields is set. */
interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}

/** An OTLP/JSON attribute value as a plain value. */
function plain(value: OtlpValue): unknown {
  if ('stringValue' in value) return value.stringValue;
  if ('intValue' in value) return Number(value.intValue);
  if ('doubleValue' in value) return value.doubleValue;
  if ('boolValue' in value) return value.boolValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(plain);
  return undefined;
}

function attributes(span: OtlpSpan): Record<string, unknown> {
  return Object.fromEntries(span.attributes.map(({ key, value }) => [key, plain(value)]));
}

/** The body of an OTLP/JSON export of traces. */
interface OtlpExport {
  resourceSpans: Array<{ resource: { attributes: OtlpSpan['attributes'] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
}

/** Every span the receiver got so far. */
function received(receiver: Receiver): OtlpSpan[] {
  return receiver.requests.flatMap((request) =>
    (request.body as OtlpExport).resourceSpans.flatMap((entry) => entry.scopeSpans.flatMap((scope) => scope.spans)),
  );
}

/** Waits until `found` holds for the spans received (the processor exports every 100 ms here): at most 400 tries. */
async function spansUntil(receiver: Receiver, found: (spans: OtlpSpan[]) => boolean): Promise<OtlpSpan[]> {
  for (let i = 0; i < 400; i++) {
    const spans = received(receiver);
    if (found(spans)) return spans;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(
    `the spans did not arrive: ${received(receiver)
      .map((span) => span.name)
      .join(', ')}`,
  );
}

async function call(
  server: ServerProcess,
  method: string,
  path: string,
  key: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const response = await fetch(server.url + path, {
    method,
    headers: {
      Authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

describe('traces over OTLP/HTTP', () => {
  let receiver: Receiver;
  let webhooks: Receiver;
  let openai: FakeProvider;
  let database: TestDatabase;
  let ownerKey: string;
  let traced: ServerProcess;
  let untraced: ServerProcess;
  const env = () => ({
    DATABASE_URL: database.url,
    OPENAI_API_KEY: 'sk-test',
    OPENAI_BASE_URL: openai.url,
    WEBHOOKS_ALLOW_LOOPBACK: 'true',
    // The access log lines carry the trace id.
    LOG_LEVEL: 'info',
  });
  const chat = {
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'Announce the spring sale.' }],
    max_completion_tokens: 30,
    temperature: 0.5,
  };

  beforeAll(async () => {
    [receiver, webhooks] = await Promise.all([startReceiver(), startReceiver()]);
    openai = await startFakeOpenAi({ reply: () => ({ text: 'Spring sale on coffee roasts.', usage: USAGE }) });
    database = await freshDatabase('sqlite');
    const storage = openStorage(database.url);
    await migrate(storage.db, features);
    ownerKey = (await createWorkspace(storage.db, { name: 'Traced', region: 'eu', ownerEmail: 'owner@traces.example' }))
      .secret;
    await storage.close();
    traced = startServerProcess(
      {
        ...env(),
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_SERVICE_NAME: 'content-service-test',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=secret-of-the-test',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      },
      await freePort(),
    );
    // A loaded machine starts a process slowly.
    await waitUntilReady(traced, 1200);
  });

  afterAll(async () => {
    for (const server of [traced, untraced]) if (server && server.child.exitCode === null) server.child.kill('SIGKILL');
    await Promise.all([receiver?.close(), webhooks?.close(), openai?.close()]);
    await database?.drop();
  });

  test('a chat completion is one trace: the request continues the traceparent, with its queries and its provider call as children', async () => {
    const response = await call(traced, 'POST', '/v1/chat/completions', ownerKey, chat, {
      traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01`,
    });
    expect(response.status).toBe(200);
    const requestId = response.headers.get('x-request-id')!;
    // W3C Trace Context Level 2: the trace and the server span that answered.
    const traceResponse = response.headers.get('traceresponse')!;
    expect(traceResponse).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
    const serverSpanId = traceResponse.split('-')[2]!;

    // A request that starts its own trace (no traceparent) gets a new trace id.
    const other = await call(traced, 'GET', '/v1/workspace', ownerKey);
    expect(other.status).toBe(200);
    const otherTrace = other.headers.get('traceresponse')!.split('-')[1]!;
    expect(otherTrace).toMatch(/^[0-9a-f]{32}$/);
    expect(otherTrace).not.toBe(TRACE_ID);

    const spans = await spansUntil(
      receiver,
      (all) =>
        all.some((span) => span.spanId === serverSpanId) &&
        all.some((span) => span.traceId === otherTrace && span.name === 'getWorkspace'),
    );
    for (const request of receiver.requests) {
      expect(request.path).toBe('/v1/traces');
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['x-collector-token']).toBe('secret-of-the-test');
      for (const entry of request.body.resourceSpans)
        expect(entry.resource.attributes).toContainEqual({
          key: 'service.name',
          value: { stringValue: 'content-service-test' },
        });
    }
    const line = accessLines(traced.output()).find((entry) => entry.access.request_id === requestId);
    expect(line?.trace_id).toBe(TRACE_ID);

    // The request: a server span named by its operation, a child of the caller's span, in the caller's trace.
    const server = spans.find((span) => span.spanId === serverSpanId)!;
    expect(server.name).toBe('createChatCompletion');
    expect(server.kind).toBe(2);
    expect(server.traceId).toBe(TRACE_ID);
    expect(server.parentSpanId).toBe(PARENT_SPAN_ID);
    expect(attributes(server)).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/chat/completions',
      'http.response.status_code': 200,
      'url.path': '/v1/chat/completions',
      'url.scheme': 'http',
      'content_service.request_id': requestId,
    });
    expect(server.status?.code ?? 0).toBe(0);

    // Its database queries: client spans named by their summary, children of the request.
    const queries = spans.filter(
      (span) => span.parentSpanId === serverSpanId && attributes(span)['db.system.name'] === 'sqlite',
    );
    expect(queries.length).toBeGreaterThan(0);
    for (const query of queries) {
      expect(query.traceId).toBe(TRACE_ID);
      expect(query.kind).toBe(3);
      expect(query.name).toBe(attributes(query)['db.query.summary']);
      expect(attributes(query)['db.query.text']).toEqual(expect.any(String));
    }
    expect(queries.map((query) => query.name)).toContain('INSERT usage_records');

    // The provider call: the GenAI semantic conventions, with the tokens the provider reported and their cost.
    const calls = spans.filter(
      (span) => span.parentSpanId === serverSpanId && attributes(span)['gen_ai.operation.name'] === 'chat',
    );
    expect(calls).toHaveLength(1);
    const providerCall = calls[0]!;
    expect(providerCall.name).toBe('chat gpt-4o-mini');
    expect(providerCall.kind).toBe(3);
    const catalogue = new Catalogue(
      loadProvidersConfig({ OPENAI_API_KEY: 'sk-test' }, (message) => {
        throw new Error(message);
      }),
    );
    expect(attributes(providerCall)).toMatchObject({
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.request.max_tokens': 30,
      'gen_ai.request.temperature': 0.5,
      'gen_ai.usage.input_tokens': USAGE.input,
      'gen_ai.usage.output_tokens': USAGE.output,
      'gen_ai.response.finish_reasons': ['stop'],
      'content_service.cost_usd': priceOf(catalogue.get('gpt-4o-mini')!, {
        inputTokens: USAGE.input,
        cachedInputTokens: 0,
        outputTokens: USAGE.output,
      }),
    });
    expect(attributes(providerCall)['gen_ai.response.model']).toEqual(expect.any(String));

    // The other request is a trace of its own, with no parent.
    const second = spans.find((span) => span.traceId === otherTrace && span.name === 'getWorkspace')!;
    expect(second.parentSpanId ?? '').toBe('');
  });

  test("a provider's error is on its span as its status and our code, never its text", async () => {
    openai.enqueue({ error: { status: 400, message: 'Your prompt "Announce the secret merger." was flagged.' } });
    const response = await call(traced, 'POST', '/v1/chat/completions', ownerKey, chat);
    expect(response.status).toBe(502);
    const requestId = response.headers.get('x-request-id')!;
    const spans = await spansUntil(receiver, (all) =>
      all.some((span) => attributes(span)['content_service.request_id'] === requestId),
    );
    const server = spans.find((span) => attributes(span)['content_service.request_id'] === requestId)!;
    const failed = spans.filter(
      (span) => span.parentSpanId === server.spanId && attributes(span)['gen_ai.operation.name'] === 'chat',
    );
    expect(failed).toHaveLength(1);
    expect(failed[0]!.status).toMatchObject({ code: 2, message: 'upstream_error (HTTP 400)' });
    expect(attributes(failed[0]!)['error.type']).toBe('upstream_error');
    expect(JSON.stringify(spans)).not.toContain('secret merger');
  });

  test('background work makes traces of its own: a knowledge job, a workflow run and its steps, a webhook delivery', {
    timeout: 60_000,
  }, async () => {
    const endpoint = await call(traced, 'POST', '/v1/webhooks/endpoints', ownerKey, {
      url: `${webhooks.url}/hook`,
      event_types: ['workflow.run.completed'],
    });
    expect(endpoint.status).toBe(201);
    const base = await call(traced, 'POST', '/v1/knowledge-bases', ownerKey, { name: 'Help centre' });
    expect(base.status).toBe(201);
    const source = await call(traced, 'POST', `/v1/knowledge-bases/${base.body.id}/sources`, ownerKey, {
      type: 'text',
      title: 'Returns',
      content: 'Coffee roasts may be returned within 30 days.',
    });
    expect(source.status).toBe(202);
    const workflow = await call(traced, 'POST', '/v1/workflows', ownerKey, {
      name: 'Traced',
      steps: [{ id: 'draft', type: 'generate', model: 'gpt-4o-mini', prompt: 'Say hello.' }],
    });
    expect(workflow.status).toBe(201);
    const run = await call(traced, 'POST', `/v1/workflows/${workflow.body.id}/runs`, ownerKey, { inputs: {} });
    expect(run.status).toBe(202);

    const spans = await spansUntil(
      receiver,
      (all) =>
        all.some((span) => span.name === 'webhook workflow.run.completed') &&
        all.some((span) => span.name.startsWith('job ') && span.status?.code !== 2) &&
        all.some((span) => span.name === 'workflow step draft'),
    );
    // A query outside a request, a job, a delivery or a step (a worker's poll) makes no trace of its own.
    expect(
      spans.filter((span) => attributes(span)['db.system.name'] && !span.parentSpanId).map((span) => span.name),
    ).toEqual([]);
    // The job: a root span named after its kind, its provider call (embeddings) within it.
    const job = spans.find((span) => span.name.startsWith('job '))!;
    expect(job.parentSpanId ?? '').toBe('');
    expect(attributes(job)).toMatchObject({
      'content_service.job.kind': expect.any(String),
      'content_service.job.attempt': 1,
    });
    const embedded = spans.filter(
      (span) => span.parentSpanId === job.spanId && attributes(span)['gen_ai.operation.name'] === 'embeddings',
    );
    expect(embedded.length).toBeGreaterThan(0);
    expect(attributes(embedded[0]!)['gen_ai.usage.input_tokens']).toEqual(expect.any(Number));

    // The run (within openworkflow's own span of the execution), the step within it, the step's provider call within
    // the step (under openworkflow's span of the attempt).
    const byId = new Map(spans.map((span) => [span.spanId, span]));
    const ancestors = (span: OtlpSpan) => {
      const names: string[] = [];
      for (let parent = byId.get(span.parentSpanId ?? ''); parent; parent = byId.get(parent.parentSpanId ?? ''))
        names.push(parent.name);
      return names;
    };
    const step = spans.find((span) => span.name === 'workflow step draft')!;
    const runSpan = spans.find((span) => span.spanId === step.parentSpanId)!;
    expect(runSpan.name).toBe('workflow run');
    expect(attributes(runSpan)['content_service.workflow_run.id']).toBe(run.body.id);
    expect(attributes(step)).toMatchObject({
      'content_service.workflow_step.type': 'generate',
      'content_service.workflow_step.status': 'success',
    });
    const stepCall = spans.find((span) => span.traceId === step.traceId && span.name === 'chat gpt-4o-mini')!;
    expect(ancestors(stepCall)).toContain('workflow step draft');
    expect(ancestors(stepCall)).toContain('workflow run');
    // Nothing of the delivery worker (woken when the run's event was committed) is filed under the run.
    expect(spans.filter((span) => span.traceId === step.traceId).map((span) => span.name)).not.toContain(
      'INSERT webhook_attempts',
    );

    // The delivery: a client span with the receiver's answer.
    const delivery = spans.find((span) => span.name === 'webhook workflow.run.completed')!;
    expect(delivery.kind).toBe(3);
    expect(delivery.parentSpanId ?? '').toBe('');
    expect(attributes(delivery)).toMatchObject({
      'http.request.method': 'POST',
      'server.address': '127.0.0.1',
      'http.response.status_code': 200,
      'content_service.webhook.event_type': 'workflow.run.completed',
    });
  });

  test('the shutdown exports the spans still queued', async () => {
    const response = await call(traced, 'GET', '/v1/workspace', ownerKey);
    const traceId = response.headers.get('traceresponse')!.split('-')[1]!;
    // Before the processor's next export (100 ms): only the shutdown's flush can send it.
    traced.child.kill('SIGTERM');
    const [code] = (await once(traced.child, 'exit')) as [number | null];
    expect(code).toBe(0);
    expect(received(receiver).some((span) => span.traceId === traceId && span.name === 'getWorkspace')).toBe(true);
  });

  test('without the OTLP variables nothing is installed: no traceresponse, no trace id in the log', {
    timeout: 180_000,
  }, async () => {
    const before = receiver.requests.length;
    untraced = startServerProcess(
      {
        ...env(),
        OTEL_SERVICE_NAME: 'content-service-test',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=secret-of-the-test',
      },
      await freePort(),
    );
    await waitUntilReady(untraced, 1200);
    const response = await call(untraced, 'POST', '/v1/chat/completions', ownerKey, chat, {
      traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01`,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
    expect(response.headers.has('traceresponse')).toBe(false);
    untraced.child.kill('SIGTERM');
    const [code] = (await once(untraced.child, 'exit')) as [number | null];
    expect(code).toBe(0);
    const lines = accessLines(untraced.output());
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).not.toHaveProperty('trace_id');
    expect(receiver.requests.length).toBe(before);
  });
});

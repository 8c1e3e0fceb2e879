// Spend limits through the API, on SQLite and PostgreSQL: the resource (create, read, change, delete, its refusals);
// a call refused with 402 before any provider call once its key is at the limit (OpenAI's error object, the spend
// equal to GET /v1/usage); the soft and hard events delivered once per period; a stream and a workflow run that
// cross a limit mid-way; the period's reset on a test clock. Concurrent calls from two server processes on one
// PostgreSQL database: processes.test.ts.
import type { KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { priceOf } from '../../src/features/engine/pricing.ts';
import { periodOf, spentAndReserved } from '../../src/features/limits/spend.ts';
import { iso, ManualClock } from '../../src/platform/clock.ts';
import { newId } from '../../src/platform/ids.ts';
import { asyncApiErrors } from '../support/asyncapi.ts';
import { type FakeProvider, startFakeOpenAi } from '../support/fake-providers.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import type { Json } from '../support/spec.ts';
import { parseEvents } from '../support/sse.ts';

const today = () => new Date().toISOString().slice(0, 10);
const round = (usd: number) => Math.round(usd * 1e11) / 1e11;

/** The cost of one call of the fake's reply below, priced as the engine prices it. */
function costOf(server: TestServer, usage: { input: number; output: number }): number {
  const model = server.platform.services.engine.catalogue.get('gpt-4o-mini')!;
  return priceOf(model, { inputTokens: usage.input, cachedInputTokens: 0, outputTokens: usage.output });
}

async function usageReport(server: TestServer, query: string) {
  const answer = await server.call('GET', `/v1/usage?group_by=day&${query}`);
  expect(answer.status).toBe(200);
  return answer.body.totals.cost_usd as number;
}

async function eventsOf(server: TestServer, type: string) {
  const answer = await server.call('GET', `/v1/events?type=${type}`);
  expect(answer.status).toBe(200);
  return answer.body.data as Array<{ type: string; data: Json }>;
}

describe.each(databaseKinds)('spend limits on %s', (database) => {
  let server: TestServer;
  let openai: FakeProvider;
  let receiver: Receiver;
  const USAGE = { input: 1000, output: 1000 };

  beforeAll(async () => {
    [openai, receiver] = await Promise.all([startFakeOpenAi(), startReceiver()]);
    server = await startTestServer({
      database,
      env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: openai.url, WEBHOOKS_ALLOW_LOOPBACK: 'true' },
    });
    const endpoint = await server.call('POST', '/v1/webhooks/endpoints', {
      body: { url: `${receiver.url}/usage`, event_types: ['usage.limit_approaching', 'usage.limit_reached'] },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
  });
  afterAll(async () => {
    await server?.close();
    await Promise.all([openai?.close(), receiver?.close()]);
  });

  const chat = (key: string, body: Record<string, unknown> = {}) =>
    server.call('POST', '/v1/chat/completions', {
      key,
      body: {
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'Announce the spring sale.' }],
        max_completion_tokens: 2000,
        ...body,
      },
    });

  test('a limit is created, read, listed, changed and deleted; admins only; one per scope and period', async () => {
    const key = await server.createKey('editor');
    const created = await server.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'api_key', id: key.id }, amount_usd: 20, period: 'month' },
    });
    expect(created.status, created.text).toBe(201);
    const now = new Date();
    expect(created.body).toMatchObject({
      object: 'spend_limit',
      scope: { type: 'api_key', id: key.id },
      amount_usd: 20,
      period: 'month',
      soft_threshold: 0.8,
      spent_usd: 0,
      period_start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
      resets_at: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
    });
    expect(created.headers.get('location')).toBe(`/v1/spend-limits/${created.body.id}`);
    const id = created.body.id as string;

    expect((await server.call('GET', `/v1/spend-limits/${id}`)).body).toEqual(created.body);
    expect((await server.call('GET', '/v1/spend-limits')).body.data.map((limit: { id: string }) => limit.id)).toContain(
      id,
    );

    const second = await server.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'api_key', id: key.id }, amount_usd: 5, period: 'month' },
    });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ code: 'conflict' });
    // The same scope per day is another limit.
    const daily = await server.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'api_key', id: key.id }, amount_usd: 5, period: 'day', soft_threshold: null },
    });
    expect(daily.status).toBe(201);
    expect(daily.body.soft_threshold).toBeNull();
    // Changing the daily one to monthly would make two monthly limits of the key.
    expect(
      (await server.call('PATCH', `/v1/spend-limits/${daily.body.id}`, { body: { period: 'month' } })).status,
    ).toBe(409);

    const changed = await server.call('PATCH', `/v1/spend-limits/${id}`, {
      body: { amount_usd: 40, soft_threshold: 0.9 },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({
      amount_usd: 40,
      soft_threshold: 0.9,
      period: 'month',
      created_at: created.body.created_at,
    });

    // Only admins and owners see and manage limits.
    expect((await server.call('GET', '/v1/spend-limits', { key: key.secret })).status).toBe(403);
    expect(
      (
        await server.call('POST', '/v1/spend-limits', {
          key: key.secret,
          body: { scope: { type: 'api_key', id: key.id }, amount_usd: 1, period: 'day' },
        })
      ).status,
    ).toBe(403);

    expect((await server.call('DELETE', `/v1/spend-limits/${id}`)).status).toBe(204);
    expect((await server.call('DELETE', `/v1/spend-limits/${daily.body.id}`)).status).toBe(204);
    expect((await server.call('GET', `/v1/spend-limits/${id}`)).status).toBe(404);
  });

  test('a scope of another workspace, an unknown one and a bad threshold are refused', async () => {
    const notMine = await server.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'workspace', id: 'ws_01JD0A1B2C3D4E5F6G7H8J9K0M' }, amount_usd: 1, period: 'day' },
    });
    expect(notMine.status).toBe(404);
    expect(notMine.body.errors).toEqual([{ pointer: '/scope/id', detail: 'is not this workspace' }]);
    const noProject = await server.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'project', id: 'prj_01JD1N4Q8R2S5T7V9W3X6Y0Z1A' }, amount_usd: 1, period: 'day' },
    });
    expect(noProject.status).toBe(404);
    expect(noProject.body.errors[0].pointer).toBe('/scope/id');
    const noKey = await server.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'api_key', id: 'key_01JD1C2D3E4F5G6H7J8K9M0N1P' }, amount_usd: 1, period: 'day' },
    });
    expect(noKey.status).toBe(404);
    for (const body of [
      { scope: { type: 'workspace', id: server.workspaceId }, amount_usd: 0, period: 'day' },
      { scope: { type: 'workspace', id: server.workspaceId }, amount_usd: 1, period: 'week' },
      { scope: { type: 'workspace', id: server.workspaceId }, amount_usd: 1, period: 'day', soft_threshold: 1 },
      { scope: { type: 'team', id: server.workspaceId }, amount_usd: 1, period: 'day' },
    ]) {
      const answer = await server.call('POST', '/v1/spend-limits', { body });
      expect(answer.status, JSON.stringify(body)).toBe(422);
    }
    expect(
      (await server.call('PATCH', '/v1/spend-limits/lim_01JDB7K2M4N6P8Q0R2S4T6V8W0', { body: { amount_usd: 2 } }))
        .status,
    ).toBe(404);
  });

  test("at its key's limit a call is refused with 402 before any provider call; the events are sent once; spent_usd is GET /v1/usage's figure", async () => {
    const key = await server.createKey('editor');
    const other = await server.createKey('editor');
    const cost = costOf(server, USAGE);
    const limit = await server.call('POST', '/v1/spend-limits', {
      body: {
        scope: { type: 'api_key', id: key.id },
        amount_usd: round(1.5 * cost),
        period: 'day',
        soft_threshold: 0.5,
      },
    });
    expect(limit.status).toBe(201);
    const before = receiver.requests.length;

    openai.enqueue(
      { text: 'Spring sale: everything 20 % off.', usage: USAGE },
      { text: 'The sale starts Monday.', usage: USAGE },
    );
    expect((await chat(key.secret)).status).toBe(200); // spent 1 call: over the soft threshold
    expect((await chat(key.secret)).status).toBe(200); // spent under the limit before it: allowed, and now over
    const calls = openai.requests.length;

    const refused = await chat(key.secret);
    expect(refused.status).toBe(402);
    expect(openai.requests.length).toBe(calls);
    expect(refused.body).toMatchObject({
      status: 402,
      code: 'spend_limit_reached',
      spend_limit: {
        id: limit.body.id,
        scope: { type: 'api_key', id: key.id },
        amount_usd: round(1.5 * cost),
        spent_usd: round(2 * cost),
        resets_at: limit.body.resets_at,
      },
      error: { type: 'invalid_request_error', code: 'spend_limit_reached', param: null },
    });
    expect(refused.body.detail).toContain(`resets at ${limit.body.resets_at}`);
    // The streamed form is refused the same way, before its first event.
    const stream = await chat(key.secret, { stream: true });
    expect(stream.status).toBe(402);
    expect(openai.requests.length).toBe(calls);
    // Another key of the workspace is not limited.
    expect((await chat(other.secret)).status).toBe(200);

    const shown = (await server.call('GET', `/v1/spend-limits/${limit.body.id}`)).body;
    expect(shown.spent_usd).toBe(round(2 * cost));
    expect(shown.spent_usd).toBe(
      await usageReport(server, `api_key_id=${key.id}&start_date=${today()}&end_date=${today()}`),
    );

    const delivered = (await receiver.waitFor(before + 2)).slice(before);
    expect(delivered.map((request) => request.body.type)).toEqual(['usage.limit_approaching', 'usage.limit_reached']);
    for (const request of delivered) {
      expect(asyncApiErrors(request.body)).toEqual([]);
      expect(request.body.data).toMatchObject({
        spend_limit_id: limit.body.id,
        scope: { type: 'api_key', id: key.id },
        soft_threshold: 0.5,
        period: 'day',
        resets_at: limit.body.resets_at,
      });
    }
    expect(delivered[0]!.body.data.spent_usd).toBe(round(cost));
    expect(delivered[1]!.body.data.spent_usd).toBe(round(2 * cost));
    // Refused calls send nothing more: each event once per period.
    expect((await chat(key.secret)).status).toBe(402);
    const ours = (type: string) =>
      eventsOf(server, type).then((events) => events.filter((event) => event.data.spend_limit_id === limit.body.id));
    expect(await ours('usage.limit_approaching')).toHaveLength(1);
    expect(await ours('usage.limit_reached')).toHaveLength(1);

    // Raised above the spend, the key calls again at once; the events of the period are not sent again.
    expect(
      (await server.call('PATCH', `/v1/spend-limits/${limit.body.id}`, { body: { amount_usd: round(10 * cost) } }))
        .status,
    ).toBe(200);
    openai.enqueue({ text: 'Back in budget.', usage: USAGE });
    expect((await chat(key.secret)).status).toBe(200);
    expect(await ours('usage.limit_approaching')).toHaveLength(1);
  });

  test('a workspace limit refuses embeddings too, with nothing sent to the provider', async () => {
    const key = await server.createKey('editor');
    const workspaceSpent = await usageReport(server, `start_date=${today()}&end_date=${today()}`);
    const limit = await server.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'workspace', id: server.workspaceId }, amount_usd: workspaceSpent || 1e-9, period: 'day' },
    });
    expect(limit.status).toBe(201);
    const calls = openai.requests.length;
    const embedded = await server.call('POST', '/v1/embeddings', {
      key: key.secret,
      body: { model: 'text-embedding-3-small', input: 'spring sale' },
    });
    expect(embedded.status).toBe(402);
    expect(embedded.body.spend_limit.scope).toEqual({ type: 'workspace', id: server.workspaceId });
    expect((await chat(key.secret)).status).toBe(402);
    expect(openai.requests.length).toBe(calls);
    expect((await server.call('DELETE', `/v1/spend-limits/${limit.body.id}`)).status).toBe(204);
  });

  test('calls in flight whose reservations reach the limit exactly refuse the next call, however their sum rounds in binary', async () => {
    const key = await server.createKey('editor');
    const limit = await server.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'api_key', id: key.id }, amount_usd: 0.8, period: 'day' },
    });
    expect(limit.status).toBe(201);
    // Two calls in flight, reserved as an admitted call is: 0.7 + 0.1 adds up to 0.7999999999999999 in binary.
    const now = server.platform.clock.now();
    await server.platform.db
      .insertInto('spend_reservations')
      .values(
        [0.7, 0.1].map((amount_usd) => ({
          id: newId('rsv', now),
          workspace_id: server.workspaceId,
          api_key_id: key.id,
          project_id: null,
          amount_usd,
          expires_at: iso(new Date(now.getTime() + 60_000)),
        })),
      )
      .execute();
    const answer = await server.call('POST', '/v1/chat/completions', {
      key: key.secret,
      body: { model: 'sandbox-writer', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4 },
    });
    expect(answer.status, answer.text).toBe(402);
    expect(answer.body.error.code).toBe('spend_limit_reached');
  });

  // A call that ends records its usage, then deletes its reservation. An admission that reads the limit's spend and
  // reservations while it ends must count it in one of them: the call ends here between the admission's two reads
  // (a plugin on the reads runs its two writes after the first read's answer). PostgreSQL only: on SQLite the process's
  // one connection runs the admission's transaction whole, and the call's writes wait for it.
  test.skipIf(database !== 'postgres')(
    'a call ending between the admission’s reads of spend and reservations is counted in one of them',
    async () => {
      const key = await server.createKey('editor');
      const call = await server.call('POST', '/v1/chat/completions', {
        key: key.secret,
        body: { model: 'sandbox-writer', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4 },
      });
      expect(call.status, call.text).toBe(200);
      const db = server.platform.db;
      // The call as it was in flight: its usage not yet recorded, its reservation held.
      const usage = await db
        .selectFrom('usage_records')
        .selectAll()
        .where('api_key_id', '=', key.id)
        .executeTakeFirstOrThrow();
      await db.deleteFrom('usage_records').where('id', '=', usage.id).execute();
      const now = server.platform.clock.now();
      const reservationId = newId('rsv', now);
      await db
        .insertInto('spend_reservations')
        .values({
          id: reservationId,
          workspace_id: server.workspaceId,
          api_key_id: key.id,
          project_id: null,
          amount_usd: usage.cost_usd,
          expires_at: iso(new Date(now.getTime() + 60_000)),
        })
        .execute();
      let reads = 0;
      const ending: KyselyPlugin = {
        transformQuery: (args) => args.node,
        async transformResult(args) {
          if (++reads === 1) {
            await db.insertInto('usage_records').values(usage).execute();
            await db.deleteFrom('spend_reservations').where('id', '=', reservationId).execute();
          }
          return args.result;
        },
      };
      const scope = { workspace_id: server.workspaceId, scope_type: 'api_key' as const, scope_id: key.id };
      const { spent, reserved } = await spentAndReserved(db.withPlugin(ending), scope, periodOf('day', now), now);
      expect(reads).toBe(2);
      expect(spent + reserved).toBeGreaterThanOrEqual(Number(usage.cost_usd));
    },
  );

  test('a tool call honours max_tokens (finish_reason length), so parallel calls pass the limit by less than one reservation', async () => {
    const key = await server.createKey('editor');
    const body = {
      model: 'sandbox-writer',
      messages: [{ role: 'user', content: `Save a note "${'lorem ipsum '.repeat(3_400)}"` }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'save_note',
            parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
          },
        },
      ],
      max_tokens: 6,
    };
    const one = await server.call('POST', '/v1/chat/completions', { key: key.secret, body });
    expect(one.status, one.text).toBe(200);
    expect(one.body.choices[0].finish_reason).toBe('length');
    expect(one.body.usage.completion_tokens).toBeLessThanOrEqual(6);
    const call = one.body.choices[0].message.tool_calls[0];
    expect(call.function.name).toBe('save_note');
    expect(call.function.arguments.length).toBeLessThan(100);
    // What one call can cost: its prompt and max_tokens of output, the price a limit reserves.
    const model = server.platform.services.engine.catalogue.get('sandbox-writer')!;
    const reservation = priceOf(model, {
      inputTokens: one.body.usage.prompt_tokens,
      cachedInputTokens: 0,
      outputTokens: 6,
    });
    expect(one.body.cost_usd).toBeLessThanOrEqual(reservation);

    const amount = round(4 * reservation);
    const limit = await server.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'api_key', id: key.id }, amount_usd: amount, period: 'day' },
    });
    expect(limit.status).toBe(201);
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => server.call('POST', '/v1/chat/completions', { key: key.secret, body })),
    );
    expect(answers.map((answer) => answer.status)).toContain(402);
    const spent = (await server.call('GET', `/v1/spend-limits/${limit.body.id}`)).body.spent_usd as number;
    expect(spent - amount).toBeLessThan(reservation);
  });

  test('a stream that crosses the limit mid-way finishes; the next call is refused', async () => {
    const key = await server.createKey('editor');
    const cost = costOf(server, USAGE);
    const limit = await server.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'api_key', id: key.id }, amount_usd: round(0.5 * cost), period: 'day' },
    });
    expect(limit.status).toBe(201);
    openai.enqueue({ text: 'A long announcement of the spring sale, word after word.', usage: USAGE, chunkDelayMs: 2 });
    const stream = await chat(key.secret, { stream: true, stream_options: { include_usage: true } });
    expect(stream.status).toBe(200);
    const events = parseEvents(stream.text);
    expect(events.some((event) => event.event === 'error')).toBe(false);
    expect(events.at(-1)!.data).toBe('[DONE]');
    const text = events
      .filter((event) => event.data !== '[DONE]')
      .map((event) => JSON.parse(event.data).choices[0]?.delta?.content ?? '')
      .join('');
    expect(text).toBe('A long announcement of the spring sale, word after word.');

    const next = await chat(key.secret, { stream: true });
    expect(next.status).toBe(402);
    expect(next.body.spend_limit.spent_usd).toBe(round(cost));
    expect(next.body.spend_limit.spent_usd).toBeGreaterThan(next.body.spend_limit.amount_usd);
  });

  test("a workflow run whose project reaches its limit fails at the next step's call with budget_exceeded", async () => {
    const project = await server.call('POST', '/v1/projects', { body: { name: `Spring campaign ${database}` } });
    expect(project.status).toBe(201);
    const limit = await server.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'project', id: project.body.id }, amount_usd: 1e-9, period: 'month' },
    });
    expect(limit.status).toBe(201);
    const workflow = await server.call('POST', '/v1/workflows', {
      body: {
        name: 'Two drafts',
        project_id: project.body.id,
        steps: [
          { id: 'first', type: 'generate', model: 'sandbox-writer', prompt: 'Announce the spring sale.' },
          {
            id: 'second',
            type: 'generate',
            model: 'sandbox-writer',
            prompt: 'Shorten: {{ steps.first.output.text }}',
            depends_on: ['first'],
          },
        ],
      },
    });
    expect(workflow.status, workflow.text).toBe(201);
    const started = await server.call('POST', `/v1/workflows/${workflow.body.id}/runs`, { body: { inputs: {} } });
    expect(started.status, started.text).toBe(202);
    let run: Answer['body'];
    for (let waited = 0, delay = 25; waited < 20_000; waited += delay, delay = Math.min(delay * 1.3, 500)) {
      run = (await server.call('GET', `/v1/workflows/${workflow.body.id}/runs/${started.body.id}`)).body;
      if (['success', 'failure', 'cancelled'].includes(run.status)) break;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
    expect(run.status).toBe('failure');
    expect(run.error).toMatchObject({ step_id: 'second', code: 'budget_exceeded' });
    expect(run.error.message).toMatch(
      /^spend_limit_reached: The project prj_\w+ has spent [\d.e-]+ USD of its 1e-9 USD monthly limit lim_\w+/,
    );
    const steps = Object.fromEntries(
      run.steps.map((step: components['schemas']['WorkflowRunStep']) => [step.id, step]),
    );
    expect(steps.first.status).toBe('success');
    // Not retried: waiting would be refused again until the limit resets.
    expect(steps.second).toMatchObject({ status: 'failure', attempts: 1 });

    const shown = (await server.call('GET', `/v1/spend-limits/${limit.body.id}`)).body;
    expect(shown.spent_usd).toBeGreaterThan(0);
    expect(shown.spent_usd).toBe(
      await usageReport(
        server,
        `project_id=${project.body.id}&start_date=${shown.period_start.slice(0, 10)}&end_date=${today()}`,
      ),
    );
    expect(shown.spent_usd).toBe(run.cost_usd);
  });

  test("a workflow's document_command step is billed to the run's project, not the document's", async () => {
    const project = await server.call('POST', '/v1/projects', { body: { name: `Command budget ${database}` } });
    expect(project.status).toBe(201);
    const document = await server.call('POST', '/v1/documents', {
      body: { title: 'Spring sale', content: 'The spring sale starts on Monday. Everything is 20 % off.' },
    });
    expect(document.status, document.text).toBe(201);
    const workflow = await server.call('POST', '/v1/workflows', {
      body: {
        name: 'Summarize',
        project_id: project.body.id,
        steps: [{ id: 'summary', type: 'document_command', command: 'summarize', document_id: document.body.id }],
      },
    });
    expect(workflow.status, workflow.text).toBe(201);
    const runToEnd = async () => {
      const started = await server.call('POST', `/v1/workflows/${workflow.body.id}/runs`, { body: { inputs: {} } });
      expect(started.status, started.text).toBe(202);
      let run: Answer['body'];
      for (let waited = 0, delay = 25; waited < 20_000; waited += delay, delay = Math.min(delay * 1.3, 500)) {
        run = (await server.call('GET', `/v1/workflows/${workflow.body.id}/runs/${started.body.id}`)).body;
        if (['success', 'failure', 'cancelled'].includes(run.status)) break;
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
      return run;
    };
    // Without a limit the step succeeds, and its cost is the run's project's.
    const first = await runToEnd();
    expect(first.status, JSON.stringify(first.error)).toBe('success');
    expect(first.cost_usd).toBeGreaterThan(0);
    expect(await usageReport(server, `project_id=${project.body.id}&start_date=${today()}&end_date=${today()}`)).toBe(
      first.cost_usd,
    );
    // Over the project's limit, the step is refused although its document is in no project.
    const limit = await server.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'project', id: project.body.id }, amount_usd: 1e-9, period: 'month' },
    });
    expect(limit.status).toBe(201);
    const second = await runToEnd();
    expect(second.status).toBe('failure');
    expect(second.error).toMatchObject({ step_id: 'summary', code: 'budget_exceeded' });
  });
});

describe.each(databaseKinds)('the period of a spend limit on %s', (database) => {
  const clock = new ManualClock('2026-11-20T23:58:00.000Z');
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ database, clock });
  });
  afterAll(async () => {
    await server?.close();
  });

  test('a daily limit resets at 00:00 UTC: the spend counts from zero and the events are sent again', async () => {
    const draft = () =>
      server.call('POST', '/v1/chat/completions', {
        body: { model: 'sandbox-writer', messages: [{ role: 'user', content: 'Announce the spring sale.' }] },
      });
    const limit = await server.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'workspace', id: server.workspaceId }, amount_usd: 1e-9, period: 'day' },
    });
    expect(limit.body).toMatchObject({
      period_start: '2026-11-20T00:00:00.000Z',
      resets_at: '2026-11-21T00:00:00.000Z',
    });
    const first = await draft();
    expect(first.status).toBe(200);
    const refused = await draft();
    expect(refused.status).toBe(402);
    expect(refused.body.spend_limit).toMatchObject({
      spent_usd: first.body.cost_usd,
      resets_at: '2026-11-21T00:00:00.000Z',
    });

    clock.set('2026-11-21T00:00:00.000Z');
    const shown = (await server.call('GET', `/v1/spend-limits/${limit.body.id}`)).body;
    expect(shown).toMatchObject({
      spent_usd: 0,
      period_start: '2026-11-21T00:00:00.000Z',
      resets_at: '2026-11-22T00:00:00.000Z',
    });
    const next = await draft();
    expect(next.status).toBe(200);
    expect((await draft()).status).toBe(402);

    const reached = await eventsOf(server, 'usage.limit_reached');
    expect(reached.map((event) => event.data.period_start).sort()).toEqual([
      '2026-11-20T00:00:00.000Z',
      '2026-11-21T00:00:00.000Z',
    ]);
    expect(await eventsOf(server, 'usage.limit_approaching')).toHaveLength(2);
    // The monthly figure of GET /v1/usage is both days.
    expect(await usageReport(server, 'start_date=2026-11-01&end_date=2026-11-30')).toBe(
      round(first.body.cost_usd + next.body.cost_usd),
    );
  });
});

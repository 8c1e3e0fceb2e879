// Runs of workflows on the real server, SQLite and PostgreSQL: every step kind on the sandbox models, parallel
// branches, a skipped step, approvals (approved, rejected, timed out), cancel, the run's budget, and the events.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { addMember, signIn } from '../sessions/support.ts';
import { asyncApiErrors } from '../support/asyncapi.ts';
import { expectProblem } from '../support/expect.ts';
import { type FakeProvider, startFakeOpenAi } from '../support/fake-providers.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { expiresVariants, signatureVariants } from '../support/signed-links.ts';

type Schemas = components['schemas'];

const yaml = (text: string) => ({ rawBody: text, headers: { 'Content-Type': 'application/yaml' } });

/** Polls the run until `done` holds (at most `timeoutMs`): runs are carried out in the background. */
async function waitForRun(
  server: TestServer,
  workflowId: string,
  runId: string,
  done: (run: Schemas['WorkflowRun']) => boolean = (run) => ['success', 'failure', 'cancelled'].includes(run.status),
  timeoutMs = 20_000,
): Promise<Answer['body']> {
  // Backs off to 500 ms: the polls of a file share one key's rate limit (600 a minute).
  for (let waited = 0, delay = 25; waited < timeoutMs; waited += delay, delay = Math.min(delay * 1.3, 500)) {
    const answer = await server.call('GET', `/v1/workflows/${workflowId}/runs/${runId}`, { key: server.ownerKey });
    expect(answer.status).toBe(200);
    if (done(answer.body)) return answer.body;
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
  throw new Error(`run ${runId} did not get there in time`);
}

async function createWorkflow(server: TestServer, definition: unknown): Promise<string> {
  const answer =
    typeof definition === 'string'
      ? await server.call('POST', '/v1/workflows', { key: server.ownerKey, ...yaml(definition) })
      : await server.call('POST', '/v1/workflows', { key: server.ownerKey, body: definition });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body.id;
}

async function start(server: TestServer, workflowId: string, inputs: Record<string, unknown> = {}): Promise<Answer> {
  const answer = await server.call('POST', `/v1/workflows/${workflowId}/runs`, {
    key: server.ownerKey,
    body: { inputs },
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(202);
  return answer;
}

const RELEASE = `
name: Release post
inputs:
  topic: { required: true }
  channel: { enum: [blog, linkedin], default: blog }
steps:
  - id: draft
    type: generate
    model: sandbox-writer
    prompt: "Write a short post about {{ inputs.topic }}."
  - id: headline
    type: transform
    function: truncate
    value: "{{ steps.draft.output.text }}"
    max_length: 40
  - id: hashtags
    type: transform
    depends_on: [draft]
    function: split
    value: "release,{{ lower(inputs.channel) }}"
    separator: ","
  - id: linkedin_only
    type: transform
    depends_on: []
    when: "inputs.channel == 'linkedin'"
    function: template
    value: "never on the blog"
outputs:
  headline: "{{ steps.headline.output }}"
  tags: "{{ steps.hashtags.output }}"
  skipped: "{{ steps.linkedin_only.output ?? 'none' }}"
`;

describe.each(databaseKinds)('workflow runs on %s', (database) => {
  let server: TestServer;
  let receiver: Receiver;
  beforeAll(async () => {
    [server, receiver] = await Promise.all([
      startTestServer({ database, env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } }),
      startReceiver(),
    ]);
    const endpoint = await server.call('POST', '/v1/webhooks/endpoints', {
      body: { url: `${receiver.url}/workflows`, event_types: ['workflow.run.*'] },
    });
    expect(endpoint.status).toBe(201);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), receiver?.close()]);
  });

  test('the events of a run with an approval are delivered, signed, and match their AsyncAPI messages', async () => {
    const id = await createWorkflow(server, {
      name: 'Delivered',
      steps: [
        { id: 'draft', type: 'generate', model: 'sandbox-writer', prompt: 'Say hello.' },
        { id: 'review', type: 'approval', instructions: 'Read it.', show: '{{ steps.draft.output.text }}' },
      ],
    });
    const runId = (await start(server, id)).body.id;
    await waitForRun(server, id, runId, (run) => run.status === 'awaiting_approval');
    expect((await server.call('POST', `/v1/workflows/${id}/runs/${runId}/steps/review/approve`)).status).toBe(200);
    await waitForRun(server, id, runId);
    const delivered = async () => receiver.requests.filter((request) => request.body?.data?.run_id === runId);
    for (let i = 0; i < 200 && (await delivered()).length < 2; i++)
      await new Promise((resolve) => setTimeout(resolve, 50));
    const events = await delivered();
    expect(events.map((request) => request.body.type)).toEqual([
      'workflow.run.approval_required',
      'workflow.run.completed',
    ]);
    for (const event of events) {
      expect(asyncApiErrors(event.body)).toEqual([]);
      expect(event.headers['service-signature']).toMatch(/^[0-9a-f]{64}$/);
    }
    expect(events[1]!.body.data).toMatchObject({ workflow_id: id, run_id: runId, status: 'success', error: null });
  });

  test('an approval link works only as the server wrote it: another spelling of its signature or expires is 403', async () => {
    const id = await createWorkflow(server, {
      name: 'Linked',
      steps: [{ id: 'review', type: 'approval', instructions: 'Read it.', show: 'Some text.' }],
    });
    const runId = (await start(server, id)).body.id;
    await waitForRun(server, id, runId, (run) => run.status === 'awaiting_approval');
    const events = await server.call('GET', '/v1/events?type=workflow.run.approval_required&limit=100');
    const link = new URL(
      events.body.data.find((event: Schemas['WorkflowRunApprovalRequiredEvent']) => event.data.run_id === runId).data
        .approval_url,
    );
    const open = (name?: string, value?: string) => {
      const url = new URL(link);
      if (name) url.searchParams.set(name, value!);
      return server.call('GET', url.pathname + url.search, { key: null });
    };
    for (const signature of signatureVariants(link.searchParams.get('signature')!))
      expect({ signature, status: (await open('signature', signature)).status }).toEqual({ signature, status: 403 });
    for (const expires of expiresVariants(link.searchParams.get('expires')!))
      expect({ expires, status: (await open('expires', expires)).status }).toEqual({ expires, status: 403 });
    const canonical = await open();
    expect(canonical.status).toBe(200);
    expect(canonical.text).toContain('Read it.');
    expect((await server.call('POST', `/v1/workflows/${id}/runs/${runId}/cancel`)).status).toBe(200);
  });

  test('a run of generate and transform steps: parallel branches, a skipped step, outputs, costs', async () => {
    const id = await createWorkflow(server, RELEASE);
    const started = await start(server, id, { topic: 'our new export button' });
    expect(started.body).toMatchObject({
      object: 'workflow_run',
      status: 'queued',
      workflow_version: 1,
      inputs: { topic: 'our new export button', channel: 'blog' },
    });
    const run = await waitForRun(server, id, started.body.id);
    expect(run.status, JSON.stringify(run)).toBe('success');
    const steps = Object.fromEntries(run.steps.map((step: Schemas['WorkflowRunStep']) => [step.id, step]));
    expect(steps.draft).toMatchObject({
      status: 'success',
      attempts: 1,
      output: { model: 'sandbox-writer', finish_reason: 'stop' },
    });
    expect(steps.draft.output.text).toMatch(/export/i);
    expect(steps.headline.output.length).toBeLessThanOrEqual(40);
    expect(steps.hashtags.output).toEqual(['release', 'blog']);
    expect(steps.linkedin_only).toMatchObject({ status: 'skipped', output: null, attempts: 0 });
    expect(run.outputs).toEqual({ headline: steps.headline.output, tags: ['release', 'blog'], skipped: 'none' });
    expect(run.latency_ms).toBeGreaterThanOrEqual(0);
    expect(run.cost_usd).toBe(steps.draft.cost_usd);
    const events = await server.call('GET', '/v1/events?type=workflow.run.completed', { key: server.ownerKey });
    const event = events.body.data.find((item: Schemas['WorkflowRunCompletedEvent']) => item.data.run_id === run.id);
    expect(event.data).toMatchObject({
      workflow_id: id,
      run_id: run.id,
      status: 'success',
      cost_usd: run.cost_usd,
      error: null,
    });
  });
});

describe('workflow runs, every step kind and every way a run ends (SQLite)', () => {
  let server: TestServer;
  let openai: FakeProvider;
  beforeAll(async () => {
    openai = await startFakeOpenAi();
    server = await startTestServer({ env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: openai.url } });
  });
  afterAll(async () => {
    await server?.close();
    await openai?.close();
  });

  test('a document command applied and a knowledge search: the document gets one new version', async () => {
    const document = await server.call('POST', '/v1/documents', {
      body: {
        title: 'Launch notes',
        content: 'Our export button ships today. It exports reports as CSV files. Teams asked for it for months.',
      },
    });
    expect(document.status).toBe(201);
    const base = (await server.call('POST', '/v1/knowledge-bases', { body: { name: 'Help' } })).body.id;
    const source = (
      await server.call('POST', `/v1/knowledge-bases/${base}/sources`, {
        body: {
          type: 'text',
          title: 'Exports',
          content: 'Exports run nightly. A CSV export holds every report of the month.',
        },
      })
    ).body.id;
    for (
      let i = 0;
      i < 200 && (await server.call('GET', `/v1/knowledge-bases/${base}/sources/${source}`)).body.status !== 'ready';
      i++
    )
      await new Promise((resolve) => setTimeout(resolve, 50));
    const id = await createWorkflow(server, {
      name: 'Summarize and research',
      inputs: { document_id: { required: true } },
      steps: [
        {
          id: 'summary',
          type: 'document_command',
          document_id: '{{ inputs.document_id }}',
          command: 'summarize',
          apply: true,
        },
        {
          id: 'research',
          type: 'knowledge_search',
          depends_on: [],
          knowledge_base_id: base,
          query: 'CSV export',
          top_k: 2,
        },
      ],
      outputs: {
        version: '{{ steps.summary.output.version_id }}',
        hits: '{{ length(steps.research.output.results) }}',
      },
    });
    const run = await waitForRun(server, id, (await start(server, id, { document_id: document.body.id })).body.id);
    expect(run.status, JSON.stringify(run)).toBe('success');
    const [summary, research] = run.steps;
    expect(summary.output).toMatchObject({
      document_id: document.body.id,
      version_id: expect.stringMatching(/^ver_/),
      text: expect.any(String),
    });
    expect(research.output.results[0]).toMatchObject({ source_id: source, title: 'Exports', url: null });
    expect(run.outputs).toEqual({ version: summary.output.version_id, hits: research.output.results.length });
    const versions = await server.call('GET', `/v1/documents/${document.body.id}/versions`);
    expect(versions.body.data.map((version: Schemas['DocumentVersionSummary']) => version.id)).toContain(
      summary.output.version_id,
    );
    expect(versions.body.data).toHaveLength(2);
  });

  test('a generate step through the provider fails twice, then answers: three attempts, every call in the cost', async () => {
    const id = await createWorkflow(server, {
      name: 'Flaky provider',
      steps: [
        {
          id: 'draft',
          type: 'generate',
          model: 'gpt-4o-mini',
          prompt: 'Say hello.',
          retry: { max_attempts: 3, initial_ms: 100, max_ms: 200 },
        },
      ],
      outputs: { text: '{{ steps.draft.output.text }}' },
    });
    const before = openai.requests.length;
    openai.enqueue(
      { error: { status: 503, message: 'overloaded' } },
      { error: { status: 500, message: 'boom' } },
      { text: 'Hello there.', usage: { input: 1000, output: 500 } },
    );
    const run = await waitForRun(server, id, (await start(server, id)).body.id);
    expect(run.status, JSON.stringify(run)).toBe('success');
    expect(openai.requests.length - before).toBe(3);
    expect(run.steps[0]).toMatchObject({
      status: 'success',
      attempts: 3,
      error: null,
      output: { text: 'Hello there.', model: 'gpt-4o-mini', usage: { prompt_tokens: 1000, completion_tokens: 500 } },
    });
    // gpt-4o-mini: $0.15 per million input tokens, $0.60 per million output; the failed calls cost nothing.
    expect(run.steps[0].cost_usd).toBeCloseTo((1000 * 0.15 + 500 * 0.6) / 1e6, 9);
    expect(run.cost_usd).toBe(run.steps[0].cost_usd);
    expect(run.outputs).toEqual({ text: 'Hello there.' });
  });

  test('an error that is not retried fails the step at once, the run with it, and the steps after it are cancelled', async () => {
    const id = await createWorkflow(server, {
      name: 'Refused',
      steps: [
        { id: 'draft', type: 'generate', model: 'gpt-4o-mini', prompt: 'Say hello.' },
        { id: 'after', type: 'transform', function: 'template', value: '{{ steps.draft.output.text }}' },
      ],
    });
    openai.enqueue({ error: { status: 400, message: 'bad request' } });
    const run = await waitForRun(server, id, (await start(server, id)).body.id);
    expect(run.status).toBe('failure');
    expect(run.error).toMatchObject({ step_id: 'draft', code: 'provider_error' });
    expect(run.steps[0]).toMatchObject({ status: 'failure', attempts: 1, error: { code: 'provider_error' } });
    expect(run.steps[1]).toMatchObject({ status: 'cancelled', attempts: 0 });
    const events = await server.call('GET', '/v1/events?type=workflow.run.completed');
    expect(
      events.body.data.find((event: Schemas['WorkflowRunCompletedEvent']) => event.data.run_id === run.id).data,
    ).toMatchObject({ status: 'failure', error: { step_id: 'draft', code: 'provider_error' } });
  });

  test('max_cost_usd: once the run costs more, no further step starts and the run fails with budget_exceeded', async () => {
    const id = await createWorkflow(server, {
      name: 'Budget',
      max_cost_usd: 0.01,
      steps: [
        { id: 'expensive', type: 'generate', model: 'gpt-4o-mini', prompt: 'Write a lot.' },
        { id: 'more', type: 'generate', model: 'gpt-4o-mini', prompt: 'Write more.' },
      ],
    });
    openai.enqueue({ text: 'Lots.', usage: { input: 10, output: 100_000 } });
    const run = await waitForRun(server, id, (await start(server, id)).body.id);
    expect(run.status).toBe('failure');
    expect(run.error).toMatchObject({ step_id: null, code: 'budget_exceeded' });
    expect(run.steps.map((step: Schemas['WorkflowRunStep']) => step.status)).toEqual(['success', 'cancelled']);
    expect(run.cost_usd).toBeGreaterThan(0.01);
  });

  const REVIEWED = (extra: Record<string, unknown> = {}) => ({
    name: 'Reviewed',
    inputs: { topic: { required: true } },
    steps: [
      { id: 'draft', type: 'generate', model: 'sandbox-writer', prompt: 'Write about {{ inputs.topic }}.' },
      {
        id: 'review',
        type: 'approval',
        instructions: 'Is it on brand?',
        show: '{{ steps.draft.output.text }}',
        approver_role: 'admin',
        ...extra,
      },
      {
        id: 'publish',
        type: 'transform',
        function: 'template',
        value: '{{ steps.review.output.decision }}: {{ steps.draft.output.text }}',
      },
    ],
    outputs: { published: '{{ steps.publish.output }}', decision: '{{ steps.review.output.decision }}' },
  });

  test('an approval approved: the event, the role check, the decision in the step, the run goes on', async () => {
    const id = await createWorkflow(server, REVIEWED());
    const runId = (await start(server, id, { topic: 'exports' })).body.id;
    const waiting = await waitForRun(server, id, runId, (run) => run.status === 'awaiting_approval');
    const review = waiting.steps[1];
    expect(review).toMatchObject({
      status: 'awaiting_approval',
      approval: {
        approver_role: 'admin',
        instructions: 'Is it on brand?',
        content: waiting.steps[0].output.text,
        decision: null,
        timed_out: false,
        on_timeout: 'fail',
      },
    });
    const events = await server.call('GET', '/v1/events?type=workflow.run.approval_required');
    const event = events.body.data.find(
      (item: Schemas['WorkflowRunApprovalRequiredEvent']) => item.data.run_id === runId,
    );
    expect(event.data).toMatchObject({
      workflow_id: id,
      step_id: 'review',
      approver_role: 'admin',
      expires_at: review.approval.expires_at,
    });
    expect(event.data.approval_url).toMatch(new RegExp(`/approvals/${runId}/review\\?expires=\\d+&signature=`));
    const editor = await server.createKey('editor');
    const path = `/v1/workflows/${id}/runs/${runId}/steps/review`;
    const keyed = await server.call('POST', `${path}/approve`, { key: editor.secret });
    expectProblem(keyed, 403, 'insufficient_role');
    expect(keyed.body.detail).toBe(
      "The step review needs an approver with the admin role or higher; the key's role is editor.",
    );
    // A person signed in used no key: the refusal speaks of their role.
    await addMember(server, `editor.${runId.toLowerCase()}@test.example`, 'editor');
    const signedIn = await signIn(server, `editor.${runId.toLowerCase()}@test.example`);
    const asPerson = await signedIn.call('POST', `${path}/approve`, { body: {} });
    expectProblem(asPerson, 403, 'insufficient_role');
    expect(asPerson.body).toMatchObject({
      title: 'Your role does not allow this operation',
      detail: 'The step review needs an approver with the admin role or higher; your role is editor.',
    });
    expectProblem(
      await server.call('POST', `/v1/workflows/${id}/runs/${runId}/steps/draft/approve`),
      409,
      'step_not_awaiting_approval',
    );
    expectProblem(await server.call('POST', `/v1/workflows/${id}/runs/${runId}/steps/nope/approve`), 404, 'not_found');
    const approved = await server.call('POST', `${path}/approve`, { body: { comment: 'Ship it.' } });
    expect(approved.status).toBe(200);
    expect(approved.body.steps[1]).toMatchObject({
      status: 'success',
      output: { decision: 'approve', comment: 'Ship it.', decided_by_key_id: server.ownerKeyId, timed_out: false },
    });
    expectProblem(await server.call('POST', `${path}/approve`), 409, 'step_not_awaiting_approval');
    const run = await waitForRun(server, id, runId);
    expect(run.status).toBe('success');
    expect(run.outputs.decision).toBe('approve');
    expect(run.outputs.published).toMatch(/^approve: /);
  });

  test('an approval rejected fails the run (on_reject fail); with on_reject continue the later steps run', async () => {
    const failing = await createWorkflow(server, REVIEWED());
    const runId = (await start(server, failing, { topic: 'exports' })).body.id;
    await waitForRun(server, failing, runId, (run) => run.status === 'awaiting_approval');
    expect(
      (
        await server.call('POST', `/v1/workflows/${failing}/runs/${runId}/steps/review/reject`, {
          body: { comment: 'Off brand.' },
        })
      ).status,
    ).toBe(200);
    const failed = await waitForRun(server, failing, runId);
    expect(failed).toMatchObject({
      status: 'failure',
      error: { step_id: 'review', code: 'approval_rejected' },
      outputs: null,
    });
    expect(failed.steps.map((step: Schemas['WorkflowRunStep']) => step.status)).toEqual([
      'success',
      'rejected',
      'cancelled',
    ]);

    const continuing = await createWorkflow(server, REVIEWED({ on_reject: 'continue' }));
    const second = (await start(server, continuing, { topic: 'exports' })).body.id;
    await waitForRun(server, continuing, second, (run) => run.status === 'awaiting_approval');
    await server.call('POST', `/v1/workflows/${continuing}/runs/${second}/steps/review/reject`);
    const done = await waitForRun(server, continuing, second);
    expect(done.status).toBe('success');
    expect(done.outputs.published).toMatch(/^reject: /);
  });

  test('cancel: a waiting run is cancelled at once, fires no completion, and cannot be cancelled twice', async () => {
    const id = await createWorkflow(server, REVIEWED());
    const runId = (await start(server, id, { topic: 'exports' })).body.id;
    await waitForRun(server, id, runId, (run) => run.status === 'awaiting_approval');
    const cancelled = await server.call('POST', `/v1/workflows/${id}/runs/${runId}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', finished_at: expect.any(String) });
    expect(cancelled.body.steps.map((step: Schemas['WorkflowRunStep']) => step.status)).toEqual([
      'success',
      'cancelled',
      'cancelled',
    ]);
    expectProblem(await server.call('POST', `/v1/workflows/${id}/runs/${runId}/cancel`), 409, 'run_not_cancellable');
    expectProblem(
      await server.call('POST', `/v1/workflows/${id}/runs/${runId}/steps/review/approve`),
      409,
      'step_not_awaiting_approval',
    );
    const events = await server.call('GET', '/v1/events?type=workflow.run.completed');
    expect(events.body.data.some((event: Schemas['WorkflowRunCompletedEvent']) => event.data.run_id === runId)).toBe(
      false,
    );
    // Deleting the workflow is refused while a run is active; this one is not any more.
    expect((await server.call('DELETE', `/v1/workflows/${id}`)).status).toBe(204);
  });

  test('deleting a workflow with an active run is 409 workflow_has_active_runs', async () => {
    const id = await createWorkflow(server, REVIEWED());
    const runId = (await start(server, id, { topic: 'exports' })).body.id;
    await waitForRun(server, id, runId, (run) => run.status === 'awaiting_approval');
    expectProblem(await server.call('DELETE', `/v1/workflows/${id}`), 409, 'workflow_has_active_runs');
    const listed = await server.call('GET', `/v1/workflows/${id}/runs?status=awaiting_approval`);
    expect(listed.body.data.map((run: Schemas['WorkflowRun']) => run.id)).toEqual([runId]);
    expect((await server.call('GET', `/v1/workflows/${id}`)).body.run_counts).toMatchObject({ total: 1, active: 1 });
  });

  test('an approval nobody decides in time follows on_timeout (fail)', { timeout: 90_000 }, async () => {
    const id = await createWorkflow(server, REVIEWED({ timeout_ms: 60_000 }));
    const runId = (await start(server, id, { topic: 'exports' })).body.id;
    await waitForRun(server, id, runId, (run) => run.status === 'awaiting_approval');
    const run = await waitForRun(server, id, runId, (current) => current.status !== 'awaiting_approval', 85_000);
    expect(run).toMatchObject({ status: 'failure', error: { step_id: 'review', code: 'approval_timed_out' } });
    expect(run.steps[1]).toMatchObject({
      status: 'failure',
      approval: { timed_out: true, decision: null },
      error: { code: 'approval_timed_out' },
    });
  });
});

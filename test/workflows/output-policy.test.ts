// The output policy on what a workflow run builds from its steps' outputs, through the API on SQLite and PostgreSQL.
// sandbox-echo answers its prompt as it is, so two generate steps write `forbidden` and `word`, each of which passes
// a rule that bans `forbiddenword`. Joined by a transform, by the run's outputs or in an approval's `show`, or changed
// by `upper()`, the text breaks a rule: a block withholds it (the step or the run fails with invalid_output, the audit
// log keeps the output, audit.policy.violation is emitted, as for a generate step), a redact rule rewrites it (in the
// step's output, the run's outputs and the approval page).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { asyncApiErrors } from '../support/asyncapi.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';

type Schemas = components['schemas'];

describe.each(databaseKinds)('the output policy on workflow runs on %s', (database) => {
  let server: TestServer;
  let counter = 0;
  beforeAll(async () => {
    server = await startTestServer({ database });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** A workspace of its own (rules apply to a whole workspace) with the given compliance rules. */
  async function workspaceWith(rules: Array<Record<string, unknown>>) {
    const created = await createWorkspace(server.platform.db, {
      name: `Workflow policy ${++counter}`,
      region: server.platform.config.region,
      ownerEmail: `wp${counter}@test.example`,
      now: new Date(),
    });
    const key = created.secret;
    const ruleIds: string[] = [];
    for (const rule of rules) {
      const answer = await server.call('POST', '/v1/compliance-rules', { key, body: rule });
      expect(answer.status, answer.text).toBe(201);
      ruleIds.push(answer.body.id);
    }
    return { key, userId: created.apiKey.user_id as string, ruleIds };
  }

  const BAN_JOINED = { name: 'No forbiddenword', kind: 'banned_phrase', phrases: ['forbiddenword'] };
  const echo = (id: string, prompt: string, extra: Record<string, unknown> = {}) => ({
    id,
    type: 'generate',
    model: 'sandbox-echo',
    prompt,
    ...extra,
  });

  /** Runs a new workflow to its end, or until `done` holds. */
  async function run(
    key: string,
    definition: Record<string, unknown>,
    done: (run: Schemas['WorkflowRun']) => boolean = (current) =>
      ['success', 'failure', 'cancelled'].includes(current.status),
  ) {
    const workflow = await server.call('POST', '/v1/workflows', { key, body: { name: 'Joined', ...definition } });
    expect(workflow.status, workflow.text).toBe(201);
    const started = await server.call('POST', `/v1/workflows/${workflow.body.id}/runs`, { key, body: { inputs: {} } });
    expect(started.status, started.text).toBe(202);
    // Backs off to 500 ms: the polls share one key's rate limit.
    for (let waited = 0, delay = 25; waited < 20_000; waited += delay, delay = Math.min(delay * 1.3, 500)) {
      const answer = await server.call('GET', `/v1/workflows/${workflow.body.id}/runs/${started.body.id}`, { key });
      expect(answer.status).toBe(200);
      if (done(answer.body)) return answer.body;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
    throw new Error(`run ${started.body.id} did not get there in time`);
  }

  const stepsOf = (current: Answer['body']) =>
    Object.fromEntries(current.steps.map((step: Schemas['WorkflowRunStep']) => [step.id, step]));
  /** The content a run hands out: its outputs, and each step's output and approval (errors name the rule, not the output). */
  const handedOut = (current: Schemas['WorkflowRun']) =>
    JSON.stringify([current.outputs, current.steps.map((step) => [step.output, step.approval])]);

  async function violations(key: string) {
    const audit = await server.call('GET', '/v1/audit-logs?action=policy.violation', { key });
    expect(audit.status, audit.text).toBe(200);
    const events = await server.call('GET', '/v1/events?type=audit.policy.violation', { key });
    expect(events.status, events.text).toBe(200);
    return {
      entries: audit.body.data as Schemas['AuditLogEntry'][],
      events: events.body.data as Schemas['AuditPolicyViolationEvent'][],
    };
  }

  test('the probe: two generate steps write `forbidden` and `word`, a template transform joins them: the step fails, nothing is handed out', async () => {
    const { key, userId, ruleIds } = await workspaceWith([BAN_JOINED]);
    const project = await server.call('POST', '/v1/projects', { key, body: { name: 'Launch' } });
    const done = await run(key, {
      project_id: project.body.id,
      steps: [
        echo('first', 'forbidden'),
        echo('second', 'word', { depends_on: [] }),
        {
          id: 'joined',
          type: 'transform',
          depends_on: ['first', 'second'],
          function: 'template',
          value: '{{ steps.first.output.text }}{{ steps.second.output.text }}',
        },
      ],
      outputs: { joined: '{{ steps.joined.output }}' },
    });
    expect(done).toMatchObject({
      status: 'failure',
      outputs: null,
      error: { step_id: 'joined', code: 'invalid_output' },
    });
    const steps = stepsOf(done);
    expect(steps.first).toMatchObject({ status: 'success', output: { text: 'forbidden' } });
    expect(steps.second).toMatchObject({ status: 'success', output: { text: 'word' } });
    expect(steps.joined).toMatchObject({
      status: 'failure',
      output: null,
      error: { code: 'invalid_output', message: expect.stringContaining("withheld by the workspace's output policy") },
    });
    expect(handedOut(done)).not.toContain('forbiddenword');

    // As for a generate step: the audit log keeps the output, and the event names the rule, project and member.
    const { entries, events } = await violations(key);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      actor: { type: 'system' },
      target: { type: 'compliance_rule', id: ruleIds[0] },
      details: { rule_id: ruleIds[0], feature: 'workflows', model: null, blocked_output: 'forbiddenword' },
    });
    expect(events).toHaveLength(1);
    expect(asyncApiErrors(events[0]!)).toEqual([]);
    expect(events[0]!.data).toMatchObject({
      rule_id: ruleIds[0],
      project_id: project.body.id,
      user_id: userId,
      voice_id: null,
      reason: expect.stringContaining('forbiddenword'),
    });
    const completed = await server.call('GET', '/v1/events?type=workflow.run.completed', { key });
    expect(completed.body.data[0].data).toMatchObject({
      run_id: done.id,
      status: 'failure',
      error: { step_id: 'joined', code: 'invalid_output' },
    });
  });

  test("the run's outputs joining the two texts: the run fails with invalid_output and hands out no outputs", async () => {
    const { key, ruleIds } = await workspaceWith([BAN_JOINED]);
    const done = await run(key, {
      steps: [echo('first', 'forbidden'), echo('second', 'word', { depends_on: [] })],
      outputs: {
        joined: '{{ steps.first.output.text }}{{ steps.second.output.text }}',
        first: '{{ steps.first.output.text }}',
      },
    });
    expect(done).toMatchObject({ status: 'failure', outputs: null, error: { step_id: null, code: 'invalid_output' } });
    expect(done.steps.map((step: Schemas['WorkflowRunStep']) => step.status)).toEqual(['success', 'success']);
    expect(handedOut(done)).not.toContain('forbiddenword');
    const { entries, events } = await violations(key);
    expect(entries.map((entry) => entry.details)).toMatchObject([
      { rule_id: ruleIds[0], feature: 'workflows', blocked_output: 'forbiddenword' },
    ]);
    expect(events.map((event) => event.data.rule_id)).toEqual([ruleIds[0]]);
  });

  test('upper(): a case-sensitive block rule fails the transform; a redact rule rewrites its output and the run’s outputs', async () => {
    const { key, ruleIds } = await workspaceWith([
      { name: 'Shouted codename', kind: 'regex', pattern: 'FORBIDDEN', case_sensitive: true },
      {
        name: 'Shouted secret',
        kind: 'regex',
        pattern: 'SECRET',
        case_sensitive: true,
        action: 'redact',
        replacement: '[withheld]',
      },
    ]);
    const blocked = await run(key, {
      steps: [
        echo('draft', 'forbidden'),
        { id: 'shout', type: 'transform', function: 'template', value: '{{ upper(steps.draft.output.text) }}' },
      ],
      outputs: { shout: '{{ steps.shout.output }}' },
    });
    expect(blocked).toMatchObject({
      status: 'failure',
      outputs: null,
      error: { step_id: 'shout', code: 'invalid_output' },
    });
    expect(stepsOf(blocked).draft.output.text).toBe('forbidden');
    expect(handedOut(blocked)).not.toContain('FORBIDDEN');
    expect((await violations(key)).entries.map((entry) => entry.details)).toMatchObject([
      { rule_id: ruleIds[0], blocked_output: 'FORBIDDEN', model: null },
    ]);

    const redacted = await run(key, {
      steps: [
        echo('draft', 'the secret plan'),
        { id: 'shout', type: 'transform', function: 'template', value: '{{ upper(steps.draft.output.text) }}' },
      ],
      outputs: { shout: '{{ steps.shout.output }}', again: '{{ upper(steps.draft.output.text) }}' },
    });
    expect(redacted.status, JSON.stringify(redacted)).toBe('success');
    expect(stepsOf(redacted).shout.output).toBe('THE [withheld] PLAN');
    expect(redacted.outputs).toEqual({ shout: 'THE [withheld] PLAN', again: 'THE [withheld] PLAN' });
    // A redaction is no violation.
    expect((await violations(key)).entries).toHaveLength(1);
  });

  test("an approval's show: a block fails the step before it waits; a redaction is what the API and the approval page show", async () => {
    const { key, ruleIds } = await workspaceWith([
      BAN_JOINED,
      { name: 'No plans', kind: 'banned_phrase', phrases: ['secret plan'], action: 'redact' },
    ]);
    const review = (show: string) => ({
      id: 'review',
      type: 'approval',
      depends_on: ['first', 'second'],
      instructions: 'Read it.',
      show,
    });
    const blocked = await run(key, {
      steps: [
        echo('first', 'forbidden'),
        echo('second', 'word', { depends_on: [] }),
        review('# Draft\n\n{{ steps.first.output.text }}{{ steps.second.output.text }}'),
      ],
    });
    expect(blocked).toMatchObject({ status: 'failure', error: { step_id: 'review', code: 'invalid_output' } });
    expect(stepsOf(blocked).review).toMatchObject({
      status: 'failure',
      approval: null,
      error: { code: 'invalid_output' },
    });
    expect(handedOut(blocked)).not.toContain('forbiddenword');
    const { entries, events } = await violations(key);
    expect(entries.map((entry) => entry.details)).toMatchObject([
      { rule_id: ruleIds[0], feature: 'workflows', blocked_output: '# Draft\n\nforbiddenword' },
    ]);
    expect(events).toHaveLength(1);
    const asked = await server.call('GET', '/v1/events?type=workflow.run.approval_required', { key });
    expect(
      asked.body.data.filter((event: Schemas['WorkflowRunApprovalRequiredEvent']) => event.data.run_id === blocked.id),
    ).toEqual([]);

    const waiting = await run(
      key,
      {
        steps: [
          echo('first', 'secret'),
          echo('second', 'plan', { depends_on: [] }),
          review('{{ steps.first.output.text }} {{ steps.second.output.text }}'),
        ],
      },
      (current) => current.status === 'awaiting_approval',
    );
    expect(stepsOf(waiting).review.approval.content).toBe('[redacted]');
    const event = (await server.call('GET', '/v1/events?type=workflow.run.approval_required', { key })).body.data.find(
      (item: Schemas['WorkflowRunApprovalRequiredEvent']) => item.data.run_id === waiting.id,
    );
    const page = await fetch(event.data.approval_url.replace(/^https?:\/\/[^/]+/, server.url));
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<div class="markdown"><p>[redacted]</p>\n</div>');
    expect(html).not.toContain('secret plan');
    expect(
      (await server.call('POST', `/v1/workflows/${waiting.workflow_id}/runs/${waiting.id}/cancel`, { key })).status,
    ).toBe(200);
  });
});

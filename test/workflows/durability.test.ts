// Runs survive the process: `npm start` is killed with SIGKILL in the middle of a step and again while a run waits
// for approval, then started again on the same database; the run finishes once, its document gets one version, and
// each event is recorded once. And two servers on one PostgreSQL database share the runs, each carried out once.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { COMMAND_LINE_FLAGS } from '../../src/platform/collector.ts';
import { type FakeProvider, startFakeOpenAi } from '../support/fake-providers.ts';
import { freePort, projectRoot } from '../support/prism.ts';
import { freshDatabase, postgresUrl, startTestServer, type TestServer } from '../support/server.ts';

interface Child {
  process: ChildProcess;
  output: string;
}

function startServerProcess(env: Record<string, string>): Child {
  const child = spawn(process.execPath, [...COMMAND_LINE_FLAGS, 'src/main.ts'], {
    cwd: projectRoot,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      HOST: '127.0.0.1',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const started: Child = { process: child, output: '' };
  child.stdout!.on('data', (chunk: Buffer) => (started.output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (started.output += chunk.toString()));
  return started;
}

/** Waits, bounded, until `done` gives a value. */
async function until<T>(
  what: string,
  done: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await done();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} did not happen within ${timeoutMs} ms`);
}

async function killHard(child: Child): Promise<void> {
  const exited = new Promise((resolve) => child.process.once('exit', resolve));
  child.process.kill('SIGKILL');
  await exited;
}

describe('a run survives kill -9 of the server (SQLite)', () => {
  let dir: string;
  let openai: FakeProvider;
  const children: Child[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'content-service-workflows-'));
    openai = await startFakeOpenAi();
  });
  afterAll(async () => {
    for (const child of children)
      if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
    await openai?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('killed in the middle of a step and while awaiting approval: the run finishes once, its side effects once', {
    timeout: 240_000,
  }, async () => {
    const port = String(await freePort());
    const env = {
      PORT: port,
      DATABASE_URL: `sqlite:${join(dir, 'service.db')}`,
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: openai.url,
      PROVIDER_MAX_RETRIES: '0',
    };
    const base = `http://127.0.0.1:${port}`;
    const boot = async () => {
      const child = startServerProcess(env);
      children.push(child);
      await until('the server answering', () =>
        fetch(`${base}/healthz`).then(
          (r) => r.ok,
          () => false,
        ),
      );
      return child;
    };
    let server = await boot();
    const key = await until('the demo key', () => /Bearer (cs_live_[0-9A-Za-z]{40})/.exec(server.output)?.[1]);
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(base + path, {
        method,
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, body: await response.json().catch(() => null) };
    };

    const document = (
      await call('POST', '/v1/documents', {
        title: 'Notes',
        content: 'Exports ship today. They write CSV files. Teams asked for them.',
      })
    ).body;
    const workflow = (
      await call('POST', '/v1/workflows', {
        name: 'Durable',
        inputs: { document_id: { required: true } },
        steps: [
          { id: 'draft', type: 'generate', model: 'gpt-4o-mini', prompt: 'Write a slow answer.' },
          {
            id: 'summary',
            type: 'document_command',
            document_id: '{{ inputs.document_id }}',
            command: 'summarize',
            apply: true,
            options: { model: 'sandbox-writer' },
          },
          {
            id: 'review',
            type: 'approval',
            instructions: 'Approve the summary.',
            show: '{{ steps.summary.output.text }}',
          },
        ],
        outputs: { draft: '{{ steps.draft.output.text }}', version: '{{ steps.summary.output.version_id }}' },
      })
    ).body;
    // The first answer takes seconds: the server is killed while it streams.
    openai.enqueue({ text: Array.from({ length: 40 }, (_, i) => `word${i}`).join(' '), chunkDelayMs: 250 });
    const requestsBefore = openai.requests.length;
    const runId = (await call('POST', `/v1/workflows/${workflow.id}/runs`, { inputs: { document_id: document.id } }))
      .body.id;
    const runPath = `/v1/workflows/${workflow.id}/runs/${runId}`;
    await until('the draft step calling the provider', () => openai.requests.length > requestsBefore);
    expect((await call('GET', runPath)).body.steps[0]).toMatchObject({ status: 'running', attempts: 1 });
    await killHard(server);

    // Started again: the engine takes the run back once its lease (30 s) has run out, and the draft runs again.
    server = await boot();
    const waiting = await until(
      'the run awaiting approval',
      async () => {
        const run = (await call('GET', runPath)).body;
        return run.status === 'awaiting_approval' && run;
      },
      120_000,
    );
    expect(waiting.steps.map((step: components['schemas']['WorkflowRunStep']) => step.status)).toEqual([
      'success',
      'success',
      'awaiting_approval',
    ]);
    expect(waiting.steps[0].attempts).toBe(2);
    await killHard(server);

    // Killed while it waits; started again, the decision wakes it.
    server = await boot();
    expect((await call('POST', `${runPath}/steps/review/approve`, { comment: 'Fine.' })).status).toBe(200);
    const done = await until(
      'the run ending',
      async () => {
        const run = (await call('GET', runPath)).body;
        return ['success', 'failure', 'cancelled'].includes(run.status) && run;
      },
      60_000,
    );
    expect(done.status, JSON.stringify(done)).toBe('success');
    expect(done.outputs.version).toBe(waiting.steps[1].output.version_id);

    const versions = (await call('GET', `/v1/documents/${document.id}/versions`)).body.data;
    expect(versions).toHaveLength(2);
    const completed = (await call('GET', '/v1/events?type=workflow.run.completed&limit=100')).body.data.filter(
      (event: components['schemas']['WorkflowRunCompletedEvent']) => event.data.run_id === runId,
    );
    const approvals = (await call('GET', '/v1/events?type=workflow.run.approval_required&limit=100')).body.data.filter(
      (event: components['schemas']['WorkflowRunApprovalRequiredEvent']) => event.data.run_id === runId,
    );
    expect(completed).toHaveLength(1);
    expect(approvals).toHaveLength(1);
    // The run is not carried out again afterwards: a restart finds nothing to do.
    await killHard(server);
    server = await boot();
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(
      (await call('GET', '/v1/events?type=workflow.run.completed&limit=100')).body.data.filter(
        (event: components['schemas']['WorkflowRunCompletedEvent']) => event.data.run_id === runId,
      ),
    ).toHaveLength(1);
    server.process.kill('SIGTERM');
  });
});

describe.skipIf(!postgresUrl)('two servers on one PostgreSQL database', () => {
  let first: TestServer;
  let second: TestServer;
  let url: string;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    ({ url, drop } = await freshDatabase('postgres'));
    first = await startTestServer({ databaseUrl: url });
    second = await startTestServer({ databaseUrl: url, workspace: false });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
    await drop?.();
  });

  test('share the runs: every run succeeds and completes once', { timeout: 120_000 }, async () => {
    const workflow = (
      await first.call('POST', '/v1/workflows', {
        body: {
          name: 'Shared',
          inputs: { n: { type: 'integer', required: true } },
          steps: [
            { id: 'draft', type: 'generate', model: 'sandbox-writer', prompt: 'Number {{ inputs.n }}.' },
            { id: 'copy', type: 'transform', function: 'template', value: '{{ inputs.n }}' },
          ],
          outputs: { n: '{{ steps.copy.output }}' },
        },
      })
    ).body;
    const runs: string[] = [];
    for (let n = 0; n < 20; n++)
      runs.push((await first.call('POST', `/v1/workflows/${workflow.id}/runs`, { body: { inputs: { n } } })).body.id);
    await until(
      'every run ending',
      async () => {
        const page = await second.call('GET', `/v1/workflows/${workflow.id}/runs?status=success&limit=100`, {
          key: first.ownerKey,
        });
        return page.body.data.length === runs.length;
      },
      100_000,
    );
    const completed = (await first.call('GET', '/v1/events?type=workflow.run.completed&limit=100')).body.data.map(
      (event: components['schemas']['WorkflowRunCompletedEvent']) => event.data.run_id,
    );
    expect(completed.sort()).toEqual([...runs].sort());
    for (const [n, id] of runs.entries()) {
      const run = (await first.call('GET', `/v1/workflows/${workflow.id}/runs/${id}`)).body;
      // A template that is one placeholder keeps the value's type.
      expect(run.outputs).toEqual({ n });
      expect(run.steps.map((step: components['schemas']['WorkflowRunStep']) => step.attempts)).toEqual([1, 1]);
    }
  });
});

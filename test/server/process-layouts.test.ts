// Every process layout of the README runs everything: a workflow run (a generated draft, then a document command
// applied to a document) ends `success`, the document gets its version, and `workflow.run.completed` reaches a
// webhook receiver:
//   - one `npm start` alone (the default: it runs every background worker);
//   - servers with WEBHOOKS_WORKER=false beside an `npm run worker` process, on SQLite, and on PostgreSQL with Redis.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { features } from '../../src/features/index.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { migrate, openStorage } from '../../src/storage/database.ts';
import {
  callJson as call,
  freePort,
  type ServerProcess,
  startServerProcess,
  terminate,
  waitUntilReady,
} from '../support/processes.ts';
import { startReceiver } from '../support/receiver.ts';
import { freshDatabase, postgresUrl, REDIS_URL, redisAvailable } from '../support/server.ts';

const WORKER = fileURLToPath(new URL('../../src/worker.ts', import.meta.url));

const children = new Set<ChildProcess>();
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

function startWorker(env: Record<string, string>): ServerProcess {
  const child = spawn(process.execPath, [WORKER], {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, url: '', output: () => output };
}

const layouts = [
  { name: 'one server alone, on SQLite', database: 'sqlite' as const, split: false, redis: false },
  {
    name: 'a server with WEBHOOKS_WORKER=false and npm run worker, on SQLite',
    database: 'sqlite' as const,
    split: true,
    redis: false,
  },
  ...(postgresUrl && redisAvailable
    ? [
        {
          name: 'two servers with WEBHOOKS_WORKER=false and npm run worker, on PostgreSQL and Redis',
          database: 'postgres' as const,
          split: true,
          redis: true,
        },
      ]
    : []),
];

describe.each(layouts)('$name', (layout) => {
  test('a workflow run with a document command ends success, and its event is delivered', {
    timeout: 90_000,
  }, async () => {
    const database = await freshDatabase(layout.database);
    const storage = openStorage(database.url);
    await migrate(storage.db, features);
    const { secret: key } = await createWorkspace(storage.db, { name: 'Layouts', region: 'eu' });
    await storage.close();
    const receiver = await startReceiver();
    const env: Record<string, string> = {
      DATABASE_URL: database.url,
      WEBHOOKS_ALLOW_LOOPBACK: 'true',
      ...(layout.redis ? { REDIS_URL } : {}),
      ...(layout.split ? { WEBHOOKS_WORKER: 'false' } : {}),
    };
    const processes: ServerProcess[] = [];
    try {
      const servers = [startServerProcess(env, await freePort())];
      if (layout.redis) servers.push(startServerProcess(env, await freePort()));
      processes.push(...servers);
      for (const server of servers) children.add(server.child);
      await Promise.all(servers.map((server) => waitUntilReady(server)));
      if (layout.split) processes.push(startWorker(env));
      const [first, last] = [servers[0]!, servers.at(-1)!];

      const endpoint = await call(first.url, 'POST', '/v1/webhooks/endpoints', key, {
        url: `${receiver.url}/hook`,
        event_types: ['workflow.run.completed'],
      });
      expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
      const document = await call(first.url, 'POST', '/v1/documents', key, {
        title: 'Release notes',
        content: 'Exports ship today. They write CSV files. Teams asked for them.',
      });
      expect(document.status).toBe(201);
      const workflow = await call(first.url, 'POST', '/v1/workflows', key, {
        name: 'Layout check',
        inputs: { document_id: { required: true } },
        steps: [
          { id: 'draft', type: 'generate', model: 'sandbox-writer', prompt: 'Announce the exports.' },
          {
            id: 'summary',
            type: 'document_command',
            document_id: '{{ inputs.document_id }}',
            command: 'summarize',
            apply: true,
            options: { model: 'sandbox-writer' },
            depends_on: ['draft'],
          },
        ],
      });
      expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
      const run = await call(last.url, 'POST', `/v1/workflows/${workflow.body.id}/runs`, key, {
        inputs: { document_id: document.body.id },
      });
      expect(run.status, JSON.stringify(run.body)).toBe(202);

      let status = run.body.status;
      for (let i = 0; i < 300 && !['success', 'failure', 'cancelled'].includes(status); i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        status = (await call(first.url, 'GET', `/v1/workflows/${workflow.body.id}/runs/${run.body.id}`, key)).body
          .status;
      }
      expect(status, processes.map((p) => p.output()).join('\n')).toBe('success');
      const versions = await call(last.url, 'GET', `/v1/documents/${document.body.id}/versions`, key);
      expect(versions.body.data.map((version: { source: { kind: string } }) => version.source.kind)).toContain(
        'command',
      );
      await receiver.waitFor(1, 15_000);
      expect(receiver.requests[0]!.body).toMatchObject({
        type: 'workflow.run.completed',
        data: { run_id: run.body.id, status: 'success' },
      });
      for (const running of processes) expect(await terminate(running), running.output()).toBe(0);
    } finally {
      for (const running of processes) if (running.child.exitCode === null) running.child.kill('SIGKILL');
      await receiver.close();
      await database.drop();
    }
  });
});

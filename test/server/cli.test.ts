// The command-line tool as an operator runs it: a child process on the pinned Node, on SQLite and on PostgreSQL
// when reachable; what it creates must work against a real server on the same database.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { features } from '../../src/features/index.ts';
import { allMigrations } from '../../src/storage/database.ts';
import { projectRoot } from '../support/prism.ts';
import {
  databaseKinds,
  freshDatabase,
  startTestServer,
  type TestDatabase,
  type TestServer,
} from '../support/server.ts';
import { type Json, schemaErrors } from '../support/spec.ts';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    // process.execPath is the Node 24 that runs vitest; the environment is the test's own plus what the case sets.
    const child = spawn(process.execPath, ['src/cli.ts', ...args], {
      cwd: projectRoot,
      env: { ...process.env, NODE_ENV: 'test', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

// Each case starts Node processes; a loaded 2-core machine can take seconds for each.
const TIMEOUT_MS = 120_000;

function json(run: Run): Json {
  expect(run, run.stderr).toMatchObject({ code: 0 });
  return JSON.parse(run.stdout);
}

describe('the CLI without a database', () => {
  /** `key create` of a viewer key in a workspace that need not exist, with more options. */
  const viewerKey = (...more: string[]) => [
    'key',
    'create',
    '--workspace',
    'ws_01KJPX9WK0EVBTHQARE1M6TSK1',
    '--role',
    'viewer',
    ...more,
  ];
  test.each([
    ['no command', []],
    ['an unknown command', ['frobnicate']],
    ['a command without its subcommand', ['workspace']],
    ['a missing required option', ['workspace', 'create', '--region', 'eu']],
    ['a region that does not exist', ['workspace', 'create', '--name', 'Acme', '--region', 'mars']],
    ['an unknown option', ['migrate', '--force']],
    ['an option without its value', ['key', 'create', '--workspace']],
    ['a role that does not exist', ['key', 'create', '--workspace', 'ws_01KJPX9WK0EVBTHQARE1M6TSK1', '--role', 'god']],
    ['an expiry that is not RFC 3339', viewerKey('--expires-at', 'tomorrow')],
    ['an expiry that is not on the calendar', viewerKey('--expires-at', '2099-02-30T00:00:00Z')],
    ['an expiry whose offset is not RFC 3339', viewerKey('--expires-at', '2099-01-01T00:00:00+01')],
    ['an expiry in the past', viewerKey('--expires-at', '2020-01-01T00:00:00Z')],
    [
      'an email that is not one',
      ['workspace', 'create', '--name', 'Acme', '--region', 'eu', '--owner-email', 'nobody'],
    ],
    ['a user email that is not one', viewerKey('--user-email', 'nobody')],
    ['a name that is too long', ['workspace', 'create', '--name', 'x'.repeat(101), '--region', 'eu']],
  ])(
    '%s exits 2 with the usage text and writes nothing',
    async (_case, args) => {
      // An unusable DATABASE_URL proves that usage errors are found before the database is touched.
      const run = await cli(args, { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^content-service: .+\n\nUsage: content-service <command>/);
    },
    TIMEOUT_MS,
  );

  test(
    'help prints the usage on stdout and exits 0',
    async () => {
      for (const args of [['help'], ['--help'], ['-h'], ['key', 'create', '--help']]) {
        const run = await cli(args, {});
        expect(run.code, args.join(' ')).toBe(0);
        expect(run.stdout).toMatch(/^Usage: content-service <command>/);
        expect(run.stdout).toContain('workspace create --name <name> --region eu|us');
      }
    },
    TIMEOUT_MS,
  );

  test(
    'a bad configuration exits 1 with the reason',
    async () => {
      const run = await cli(['migrate'], { REGION: 'mars' });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('configuration: REGION must be eu or us, got mars');
    },
    TIMEOUT_MS,
  );

  test(
    'an unreachable database exits 1 with the reason',
    async () => {
      const run = await cli(['migrate'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/ECONNREFUSED/);
    },
    TIMEOUT_MS,
  );
});

describe.each(databaseKinds)('the CLI on %s', (kind) => {
  let database: TestDatabase;
  let server: TestServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    database = await freshDatabase(kind);
    const migrated = json(await cli(['migrate'], { DATABASE_URL: database.url }));
    expect(migrated).toEqual({ applied: Object.keys(allMigrations(features)) });
    server = await startTestServer({ databaseUrl: database.url, workspace: false });
    // Without the server's PORT or PUBLIC_BASE_URL, as in another shell: the CLI names the address the server recorded.
    env = { DATABASE_URL: database.url };
  });
  afterAll(async () => {
    await server?.close();
    await database?.drop();
  });

  test(
    'migrate on a migrated database applies nothing',
    async () => {
      expect(json(await cli(['migrate'], env))).toEqual({ applied: [] });
    },
    TIMEOUT_MS,
  );

  test(
    'workspace create prints a workspace and an owner key that works against the server, on behalf of the owner',
    async () => {
      const printed = json(
        await cli(
          ['workspace', 'create', '--name', 'Acme Marketing', '--region', 'eu', '--owner-email', 'Owner@Acme.example'],
          env,
        ),
      );
      expect(Object.keys(printed)).toEqual(['workspace', 'api_key']);
      expect(schemaErrors('/components/schemas/ApiKeyWithSecret', printed.api_key)).toEqual([]);
      expect(printed.api_key).toMatchObject({
        role: 'owner',
        status: 'active',
        secret: expect.stringMatching(/^cs_live_/),
      });

      const answer = await server.call('GET', '/v1/workspace', { key: printed.api_key.secret });
      expect(answer.status).toBe(200);
      const { caller, ...workspace } = answer.body;
      expect(printed.workspace).toEqual(workspace);
      const members = await server.call('GET', '/v1/members', { key: printed.api_key.secret });
      expect(members.body.data).toEqual([expect.objectContaining({ email: 'owner@acme.example', role: 'owner' })]);
      // The owner key acts on behalf of the owner member.
      const ownerId = members.body.data[0].id as string;
      expect(printed.api_key.user_id).toBe(ownerId);
      expect(caller).toEqual({
        api_key_id: printed.api_key.id,
        api_key_name: printed.api_key.name,
        role: 'owner',
        user_id: ownerId,
      });

      // Without an owner email the owner key is a service key.
      const unowned = json(await cli(['workspace', 'create', '--name', 'No owner', '--region', 'eu'], env));
      expect(unowned.api_key.user_id).toBeNull();
      expect(unowned.workspace.base_url).toBe(workspace.base_url);
      // What the tool's own environment says wins over what the server recorded.
      const told = { ...env, PUBLIC_BASE_URL: 'https://content.example.com' };
      expect(
        json(await cli(['workspace', 'create', '--name', 'Told', '--region', 'eu'], told)).workspace.base_url,
      ).toBe('https://content.example.com');
    },
    TIMEOUT_MS,
  );

  test(
    'key create prints a key of the role, usable at once, audited as the system',
    async () => {
      const owner = json(await cli(['workspace', 'create', '--name', 'Keys', '--region', 'eu'], env)).api_key;
      const workspaceId = (await server.call('GET', '/v1/workspace', { key: owner.secret })).body.id as string;
      const expiresAt = new Date(Date.now() + 86_400_000).toISOString().replace(/\.\d{3}Z$/, '+00:00');
      const key = json(
        await cli(
          [
            'key',
            'create',
            '--workspace',
            workspaceId,
            '--role',
            'viewer',
            '--name',
            'Read-only dashboard',
            '--expires-at',
            expiresAt,
          ],
          env,
        ),
      );
      expect(schemaErrors('/components/schemas/ApiKeyWithSecret', key)).toEqual([]);
      expect(key).toMatchObject({
        name: 'Read-only dashboard',
        role: 'viewer',
        status: 'active',
        created_by_api_key_id: null,
        expires_at: new Date(expiresAt).toISOString(),
      });

      const asViewer = await server.call('GET', '/v1/workspace', { key: key.secret });
      expect(asViewer.status).toBe(200);
      expect(asViewer.body.caller).toEqual({
        api_key_id: key.id,
        api_key_name: 'Read-only dashboard',
        role: 'viewer',
        user_id: null,
      });
      expect(
        (await server.call('POST', '/v1/api-keys', { key: key.secret, body: { name: 'x', role: 'viewer' } })).status,
      ).toBe(403);

      const audit = await server.call('GET', '/v1/audit-logs', { key: owner.secret });
      expect(audit.status).toBe(200);
      expect(audit.body.data).toEqual([
        expect.objectContaining({
          action: 'api_key.created',
          actor: { type: 'system', api_key_id: null, api_key_name: null, role: null },
          target: { type: 'api_key', id: key.id, display_name: 'Read-only dashboard' },
          details: {
            name: 'Read-only dashboard',
            role: 'viewer',
            expires_at: new Date(expiresAt).toISOString(),
            via: 'cli',
          },
          ip: null,
          user_agent: null,
          request_id: null,
        }),
      ]);

      const unnamed = json(await cli(['key', 'create', '--workspace', workspaceId, '--role', 'admin'], env));
      expect(unnamed).toMatchObject({ role: 'admin', expires_at: null, name: expect.any(String) });
      expect((await server.call('GET', '/v1/workspace', { key: unnamed.secret })).body.caller.role).toBe('admin');
    },
    TIMEOUT_MS,
  );

  test(
    'key create --user-email makes a key on behalf of that member, up to their role',
    async () => {
      const owner = json(
        await cli(
          ['workspace', 'create', '--name', 'Member keys', '--region', 'eu', '--owner-email', 'boss@keys.example'],
          env,
        ),
      ).api_key;
      const workspaceId = (await server.call('GET', '/v1/workspace', { key: owner.secret })).body.id as string;
      const editor = await server.call('POST', '/v1/members', {
        key: owner.secret,
        body: { email: 'writer@keys.example', role: 'editor' },
      });
      expect(editor.status).toBe(201);

      const key = json(
        await cli(
          ['key', 'create', '--workspace', workspaceId, '--role', 'editor', '--user-email', 'Writer@Keys.example'],
          env,
        ),
      );
      expect(schemaErrors('/components/schemas/ApiKeyWithSecret', key)).toEqual([]);
      expect(key).toMatchObject({ role: 'editor', user_id: editor.body.id });
      expect((await server.call('GET', '/v1/workspace', { key: key.secret })).body.caller.user_id).toBe(editor.body.id);

      const count = async () =>
        Number(
          (
            await server.platform.db
              .selectFrom('api_keys')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      const before = await count();
      const above = await cli(
        ['key', 'create', '--workspace', workspaceId, '--role', 'admin', '--user-email', 'writer@keys.example'],
        env,
      );
      expect(above.code).toBe(1);
      expect(above.stderr).toContain('writer@keys.example has the editor role');
      const stranger = await cli(
        ['key', 'create', '--workspace', workspaceId, '--role', 'viewer', '--user-email', 'stranger@keys.example'],
        env,
      );
      expect(stranger.code).toBe(1);
      expect(stranger.stderr).toContain(`stranger@keys.example is not a member of workspace ${workspaceId}`);
      expect(await count()).toBe(before);

      // Removing the member revokes the key the CLI made for them.
      expect((await server.call('DELETE', `/v1/members/${editor.body.id}`, { key: owner.secret })).status).toBe(204);
      expect((await server.call('GET', '/v1/workspace', { key: key.secret })).status).toBe(401);
    },
    TIMEOUT_MS,
  );

  test(
    'key create for an unknown workspace exits 1 and creates nothing',
    async () => {
      const before = await server.platform.db
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      const run = await cli(['key', 'create', '--workspace', 'ws_01KJPX9WK0EVBTHQARE1M6TSK1', '--role', 'owner'], env);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain('there is no workspace ws_01KJPX9WK0EVBTHQARE1M6TSK1');
      const after = await server.platform.db
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      expect(Number(after.n)).toBe(Number(before.n));
    },
    TIMEOUT_MS,
  );
});

// The README's shell examples, run as a reader runs them: every `sh` block in order, in one bash session (a variable
// set by one block is there for the next), against a fresh server started the way the quick start says (`npm start`:
// src/main.ts on a new SQLite database, its demo key read from what it prints), with `localhost:8080` replaced by that
// server's address and `KEY=cs_live_…` bound to the demo key. Each block must exit without a failed command, answer
// no HTTP error it does not document, and print what the README says it prints. A block the test cannot run carries a
// visible marker (`<!-- not run by test/docs/readme.test.ts: why -->`); the test lists those with their reasons.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { COMMAND_LINE_FLAGS } from '../../src/platform/collector.ts';
import { freePort, projectRoot, type RunningMock, startPrism } from '../support/prism.ts';
import { postgresUrl } from '../support/server.ts';
import {
  type BlockResult,
  blockContaining,
  documentedErrorStatuses,
  fencedBlocks,
  jsonValues,
  type ShellBlock,
  ShellSession,
} from '../support/shell-blocks.ts';

const THIS_FILE = 'test/docs/readme.test.ts';
const readme = readFileSync(join(projectRoot, 'README.md'), 'utf8');
const blocks = fencedBlocks(readme, 'sh');
const hasCreatedb = spawnSync('createdb', ['--version']).status === 0;

/** Why a block without a marker is not run here, or undefined when it runs. */
function skippedHere(block: ShellBlock): string | undefined {
  if (block.code.includes('postgres://')) {
    if (!postgresUrl) return 'PostgreSQL is not reachable (test/support/server.ts, postgresUrl)';
    if (!hasCreatedb) return 'createdb (PostgreSQL client tools) is not installed';
  }
  return undefined;
}

/**
 * What a block prints, where the README shows it (`# → …` and the prose around it): checked on the parts the README
 * claims. Each block that shows an output must have its check here, found by a phrase of the block.
 */
const outputChecks: Array<{ phrase: string; check: (result: BlockResult, context: { serverUrl: string }) => void }> = [
  {
    phrase: 'curl -s http://127.0.0.1:4010/v1/voices',
    check: ({ stdout }) => {
      const [voices, unauthenticated, invalid] = jsonValues(stdout);
      expect(voices.data[0]).toMatchObject({ id: expect.stringMatching(/^voc_/), object: 'voice' });
      expect(unauthenticated).toMatchObject({ status: 401, code: expect.any(String) });
      expect(invalid).toMatchObject({ status: 422, code: 'validation_failed' });
    },
  },
  {
    phrase: 'Saved as a thread (store)',
    check: ({ stdout }) => {
      expect(stdout).toContain('"object":"chat.completion"');
      expect(stdout).toContain('data: [DONE]');
      expect(stdout).toMatch(
        /"object":"chat\.thread","title":"Draft a tagline for our coffee roasts".*"message_count":4/,
      );
      expect(stdout).toContain('"content":"Shorter, please"');
      expect(stdout).toContain('"model":"sandbox-writer"');
      expect(stdout).toMatch(/"data":\[\{"date":/);
    },
  },
  {
    phrase: 'login-link --email owner@demo.example',
    check: ({ stdout }, { serverUrl }) => {
      expect(stdout).toMatch(new RegExp(`^${serverUrl}/sign-in/link\\?token=cs_link_[0-9A-Za-z]{40}\n$`));
    },
  },
  {
    phrase: '| json .name',
    check: ({ stdout }) => {
      expect(stdout).toBe('Demo workspace\n');
    },
  },
  {
    phrase: '"url": "http://127.0.0.1:3000/", "event_types": ["document.*"',
    check: ({ stdout }) => {
      expect(jsonValues(stdout)[0]).toMatchObject({
        status: 422,
        code: 'invalid_webhook_url',
        detail: expect.stringMatching(
          /For a server on this machine or network, start content-service with WEBHOOKS_ALLOW_LOOPBACK=true \(development only\)\.$/,
        ),
      });
    },
  },
  {
    phrase: 'workspace create --name',
    check: ({ stdout }) => {
      const keys = jsonValues(stdout);
      expect(keys).toHaveLength(3);
      expect(keys[0]).toMatchObject({
        object: 'api_key',
        name: 'CMS sync',
        role: 'editor',
        user_id: null,
        expires_at: '2027-06-30T00:00:00.000Z',
        secret: expect.stringMatching(/^cs_live_/),
      });
      expect(keys[1]).toMatchObject({ object: 'member', email: 'priya@northwind.example', role: 'editor' });
      expect(keys[2]).toMatchObject({
        object: 'api_key',
        name: 'editor key (CLI)',
        role: 'editor',
        user_id: keys[1].id,
      });
      expect(stdout).toContain('Usage: content-service <command> [options]');
    },
  },
  {
    phrase: 'npx content-service migrate',
    check: ({ stdout }) => {
      const applied = jsonValues(stdout)[0].applied as string[];
      expect(applied.slice(0, 2)).toEqual(['001_platform', '002_webhooks']);
      expect(applied).toEqual([...applied].sort());
    },
  },
  {
    phrase: 'A total Game-Changer.',
    check: ({ stdout }) => {
      expect(stdout).toMatch(/^ready$/m);
      expect(stdout).toContain('"code":"policy_violation"');
      expect(stdout).toContain('"rule_id":"voice.banned_phrases"');
    },
  },
  {
    phrase: 'DOCUMENT=$(curl',
    check: ({ stdout }, { serverUrl }) => {
      const document = jsonValues(stdout)[0];
      expect(document).toMatchObject({
        id: expect.stringMatching(/^doc_/),
        edit_token: {
          token: expect.stringMatching(/^edt_/),
          websocket_url: `${serverUrl.replace('http:', 'ws:')}/v1/documents/${document.id}/realtime`,
        },
      });
      expect(stdout.split('\n')[1]).toBe(`${serverUrl}/editor/${document.id}#token=${document.edit_token.token}`);
    },
  },
  {
    phrase: '"command": "summarize"',
    check: ({ stdout }, { serverUrl }) => {
      const [result, versions] = jsonValues(stdout);
      expect(result).toMatchObject({
        object: 'document.command_result',
        version: { number: 2, source: { kind: 'command', command: 'summarize' } },
      });
      expect(result.output).toBe('Every plan is 20% off until Sunday.');
      expect(versions.data.map((version: { number: number }) => version.number)).toEqual([2, 1]);
      // The summary went under the document's heading.
      expect(result.output_range.start).toBe('# Spring sale\n\n'.length);
      // Publishing with no body: in public.
      expect(stdout).toMatch(new RegExp(`${serverUrl}/v1/public/documents/doc_\\w+\n$`));
    },
  },
  {
    phrase: '/v1/embeddings',
    check: ({ stdout }) => {
      expect(jsonValues(stdout)[0]).toMatchObject({
        object: 'list',
        model: 'sandbox-embedding',
        data: [{ object: 'embedding' }, { object: 'embedding' }],
      });
    },
  },
  {
    phrase: 'knowledge_base_search_result',
    check: ({ stdout }) => {
      const search = jsonValues(stdout).at(-1);
      expect(search).toMatchObject({
        object: 'knowledge_base_search_result',
        data: [{ title: 'Refunds', text: 'Refunds are paid within 14 days of receiving the returned beans.' }],
      });
    },
  },
  {
    phrase: 'embed.snippet',
    check: ({ stdout }, { serverUrl }) => {
      const reply = jsonValues(stdout).find((value) => value.object === 'chatbot.reply');
      expect(reply).toMatchObject({
        object: 'chatbot.reply',
        message: {
          content: 'Refunds are paid within 14 days of receiving the returned beans [1].',
          citations: [{ title: 'Refunds' }],
        },
        intent: 'billing',
      });
      expect(stdout).toMatch(
        new RegExp(`<script src="${serverUrl}/widget\\.js" data-embed-key="emb_\\w+" defer></script>\n$`),
      );
    },
  },
  {
    phrase: 'steps/review/approve',
    check: ({ stdout }) => {
      const run = jsonValues(stdout).at(-1);
      expect(run).toMatchObject({
        object: 'workflow_run',
        status: 'success',
        outputs: {
          post: "Say hello to our new CSV export! We think you'll love it. Learn more at [link]. #NewCSVExport",
        },
      });
    },
  },
];

function checkFor(block: ShellBlock) {
  return outputChecks.find((entry) => block.code.includes(entry.phrase));
}

/** The README's address of the demo server, the mock and the PostgreSQL example, pointed at this test's. */
function localise(
  code: string,
  addresses: { server: string; mock?: string; key: string; postgres?: { url: string; createdb: string } },
): string {
  // The mock's address first, and only where it is whole: the server's own may begin with it (port 40107).
  let localised = addresses.mock ? code.replace(/http:\/\/127\.0\.0\.1:4010(?!\d)/g, addresses.mock) : code;
  localised = localised
    .replace(/http:\/\/localhost:8080(?!\d)/g, addresses.server)
    .replace(/localhost:8080(?!\d)/g, new URL(addresses.server).host)
    .replace(/^KEY=cs_live_….*$/gm, `KEY=${addresses.key}`);
  if (addresses.postgres) {
    localised = localised
      .replace(/^createdb -h 127\.0\.0\.1 -U postgres content$/m, addresses.postgres.createdb)
      .replaceAll('postgres://postgres@127.0.0.1:5432/content', addresses.postgres.url);
  }
  return localised;
}

describe('the README’s shell examples', () => {
  let server: ChildProcess;
  let serverOutput = '';
  let serverUrl = '';
  let demoKey = '';
  let dir = '';
  let mock: RunningMock | undefined;
  let session: ShellSession;
  let postgres: { url: string; createdb: string; name: string } | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'readme-'));
    const port = await freePort();
    serverUrl = `http://127.0.0.1:${port}`;
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: `sqlite:${join(dir, 'content-service.db')}`,
      PUBLIC_BASE_URL: serverUrl,
      LOG_LEVEL: 'warn',
    };
    server = spawn(join(projectRoot, 'node_modules', '.bin', 'node'), [...COMMAND_LINE_FLAGS, 'src/main.ts'], {
      cwd: projectRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stdout!.on('data', (chunk: Buffer) => (serverOutput += chunk.toString()));
    server.stderr!.on('data', (chunk: Buffer) => (serverOutput += chunk.toString()));
    const needsMock = blocks.some((block) => !block.notRun && block.code.includes('127.0.0.1:4010'));
    mock = needsMock ? await startPrism() : undefined;
    for (let waited = 0; !/^\s+cs_live_\w+$/m.test(serverOutput); waited += 100) {
      if (server.exitCode !== null || waited > 60_000)
        throw new Error(`the server did not print its demo key:\n${serverOutput}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    demoKey = /^\s+(cs_live_\w+)$/m.exec(serverOutput)![1]!;
    if (postgresUrl && hasCreatedb) {
      const name = `cs_readme_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
      const url = new URL(postgresUrl);
      url.pathname = `/${name}`;
      postgres = {
        name,
        url: url.toString(),
        createdb: `createdb -h ${url.hostname} -p ${url.port || 5432} -U ${decodeURIComponent(url.username)} ${name}`,
      };
    }
    // The command-line tool works on the server's database, as it does with the defaults of a checkout.
    session = new ShellSession({
      cwd: projectRoot,
      env: { PATH: env.PATH, HOME: env.HOME, DATABASE_URL: env.DATABASE_URL },
    });
  }, 120_000);

  afterAll(async () => {
    session?.stop();
    await mock?.stop();
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      const timer = setTimeout(() => server.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    if (postgres) {
      const admin = new pg.Client({ connectionString: postgresUrl });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${postgres.name} WITH (FORCE)`);
      await admin.end();
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
    const skipped = blocks.filter((block) => block.notRun ?? skippedHere(block));
    console.info(
      `README blocks not run (${skipped.length} of ${blocks.length}):\n` +
        skipped
          .map((block) => `  line ${block.line} (${block.section}): ${block.notRun ?? skippedHere(block)}`)
          .join('\n'),
    );
  }, 60_000);

  test('the quick start shows what npm start prints, but for the ids, the key and the address', () => {
    const normalise = (text: string) =>
      text
        .replace(/ws_[0-9A-Z]{26}/g, 'ws_…')
        .replace(/cs_live_\w{40}/g, 'cs_live_…')
        .replaceAll(serverUrl, 'http://localhost:8080')
        .trim();
    expect(normalise(serverOutput)).toBe(normalise(blockContaining(readme, 'Created the demo workspace')));
  });

  test('every marker names this test and gives a reason', () => {
    for (const block of blocks.filter((candidate) => candidate.notRun)) {
      expect(block.markerFile, `the marker of line ${block.line}`).toBe(THIS_FILE);
      expect(block.notRun!.length).toBeGreaterThan(10);
    }
  });

  test('every block that shows an output has its check here, and every check has its block', () => {
    for (const block of blocks.filter((candidate) => !candidate.notRun && candidate.code.includes('# →'))) {
      expect(checkFor(block), `a check of the block at line ${block.line} (${block.section})`).toBeDefined();
    }
    for (const entry of outputChecks)
      expect(
        blocks.filter((block) => block.code.includes(entry.phrase)),
        entry.phrase,
      ).toHaveLength(1);
  });

  test('the commands table names every guide that npm run docs renders', () => {
    const guides = [
      ...readFileSync(join(projectRoot, 'scripts', 'build-docs.ts'), 'utf8').matchAll(
        /\{ name: '([\w-]+)', title: '[^']+' \}/g,
      ),
    ].map((match) => match[1]!);
    expect(guides.length).toBeGreaterThanOrEqual(8);
    const row = readme.split('\n').find((line) => line.startsWith('| `npm run docs` |'))!;
    for (const guide of guides) expect(row).toContain(`\`docs/site/${guide}.html\``);
  });

  for (const block of blocks) {
    const name = `line ${block.line} (${block.section})`;
    const reason = block.notRun ?? skippedHere(block);
    if (reason) {
      test.skip(`${name}: ${reason}`, () => {});
      continue;
    }
    test(name, { timeout: 120_000 }, async () => {
      const code = localise(block.code, {
        server: serverUrl,
        key: demoKey,
        ...(mock ? { mock: mock.baseUrl } : {}),
        ...(postgres ? { postgres } : {}),
      });
      const commands = code.replace(/(^|\s)#\s.*$/gm, '');
      expect(commands, 'every address and key of the block is this test’s').not.toMatch(
        /localhost:8080(?!\d)|127\.0\.0\.1:4010(?!\d)|cs_live_…/,
      );
      const result = await session.run(code, 110_000);
      const shown = `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
      expect(result.failures, shown).toEqual([]);
      const errors = result.httpStatuses.filter((status) => status >= 400 || status === 0);
      expect(
        errors.sort(),
        `HTTP errors of the block (those it documents in a comment are expected)\n${shown}`,
      ).toEqual(documentedErrorStatuses(block.code).sort());
      checkFor(block)?.check(result, { serverUrl });
    });
  }
});

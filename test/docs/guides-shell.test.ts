// The guides' shell examples, run as a reader runs them: each guide's `sh` blocks in order, in one bash session per
// guide (a variable set by one block is there for the next), against a fresh server of its own with no provider key,
// with the guide's address (`https://eu.content-service.example` or `http://localhost:8080`) replaced by the server's
// (in the files it saves too) and `$CONTENT_SERVICE_KEY` its owner key. Each block must exit without a failed command and answer no HTTP error it
// does not document in a comment. A block the test cannot run carries a visible marker
// (`<!-- not run by test/docs/guides-shell.test.ts: why -->`); the test lists those with their reasons.
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startOidcTestProvider } from '../../scripts/sso-test-provider.ts';
import { projectRoot } from '../support/prism.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import {
  type BlockResult,
  blockContaining,
  documentedErrorStatuses,
  fencedBlocks,
  ShellSession,
} from '../support/shell-blocks.ts';

const THIS_FILE = 'test/docs/guides-shell.test.ts';

const read = (...path: string[]) => readFileSync(join(projectRoot, ...path), 'utf8');

/**
 * The guides whose shell blocks this test runs, the files a guide asks its reader to save (written into the session's
 * directory first), and what some of their blocks print.
 */
interface Guide {
  name: string;
  /** What the guide's reader has running besides the server (the test identity provider), and the addresses to put
   *  in place of the guide's. */
  companion?: (server: TestServer) => Promise<{ replacements: Record<string, string>; stop(): Promise<void> }>;
  files?: (server: TestServer) => Record<string, string>;
  checks?: Array<{ phrase: string | RegExp; check: (result: BlockResult) => void }>;
}
/** The translation on sandbox-echo that the documents guide shows, as JSON shows it. */
const shownEchoTranslation = () =>
  JSON.parse(
    /"model": "sandbox-echo",\n {2}"output": (".*"),\n/.exec(read('docs', 'guides', 'documents.md'))![1]!,
  ) as string;

const guides: Guide[] = [
  {
    name: 'documents',
    // "This script appends a paragraph": the guide's edit.mjs, on the server's address.
    files: (server) => ({
      'edit.mjs': blockContaining(read('docs', 'guides', 'documents.md'), 'new HocuspocusProvider').replaceAll(
        'ws://localhost:8080',
        server.url.replace('http', 'ws'),
      ),
    }),
    checks: [
      {
        phrase: /^node edit\.mjs/,
        check: ({ stdout }) =>
          expect(stdout).toBe('authenticated: read-write\nblocks: heading, paragraph, bulletList, paragraph\n'),
      },
      { phrase: /\nnode edit\.mjs/, check: ({ stdout }) => expect(stdout).toBe('refused: document_not_found\n') },
      {
        phrase: 'versions?limit=2',
        check: ({ stdout }) =>
          expect(stdout).toMatch(/"number":3,"source":\{"kind":"realtime".*"number":2,"source":\{"kind":"edit"/),
      },
      // What the guide says each AI command answers on sandbox-writer and sandbox-echo.
      ...Object.entries({
        '"command": "outline"': {
          version: { number: 6 },
          output:
            '## Spring launch\n\n- Our spring roasts arrive on 3 March: a washed Ethiopia Guji and a natural Brazil Cerrado.',
          output_range: { start: 17, end: 126 },
          usage: { total_tokens: 258 },
        },
        '"command": "expand"': {
          output:
            'Our spring roasts arrive on 3 March: a washed Ethiopia Guji and a natural Brazil Cerrado. Free shipping on orders over 30 euros. Tasting notes on each bag. Order before Friday at [our shop](https://roastery.example/spring) with the code `SPRING27`.',
          output_range: { start: 17, end: 265 },
        },
        '"command": "summarize", "length"': {
          output: '- Our spring roasts arrive on 3 March: a washed Ethiopia Guji and a natural Brazil Cerrado.',
        },
        '"tone": "friendly"': {
          output: 'Order before Friday at [our shop](https://roastery.example/spring) with the code `SPRING27`!',
        },
        '"model": "sandbox-echo"': {
          output: shownEchoTranslation(),
          output_range: { start: 0, end: 270 },
          usage: { total_tokens: 357 },
        },
        '"formality": "formal"': {
          output: expect.stringMatching(
            /^# Here's a first draft about Spring launch\. .*\n\nHere's a first draft about Order before Friday at \[our shop\]\(https:\/\/roastery\.example\/spring\) with the code `SPRING27`\. /s,
          ),
          usage: { total_tokens: 1182 },
        },
      }).map(([phrase, shown]) => ({
        phrase,
        check: ({ stdout }: BlockResult) => expect(JSON.parse(stdout)).toMatchObject(shown),
      })),
      {
        phrase: '"command": "cite"',
        check: ({ stdout }) => {
          expect(stdout).toMatch(
            /^Order before Friday at \[our shop\]\(https:\/\/roastery\.example\/spring\) with the code `SPRING27` \[1\]\.\n## References\n\n- \[1\] \*roastery\.example\/origins\/guji\*\. \(n\.d\.\)\. roastery\.example\. Retrieved \d{4}-\d\d-\d\d, from <https:\/\/roastery\.example\/origins\/guji>\n$/,
          );
        },
      },
    ],
  },
  {
    name: 'chatbots',
    checks: [
      { phrase: 'echo $STATUS', check: ({ stdout }) => expect(stdout).toMatch(/ready\n$/) },
      {
        phrase: '| tee chatbot.json',
        check: ({ stdout }) => {
          const { greeting, temperature, escalation, widget, allowed_origins, enabled, metadata } = JSON.parse(
            blockContaining(read('docs', 'guides', 'chatbots.md'), '"object": "chatbot",'),
          );
          expect(JSON.parse(stdout)).toMatchObject({
            greeting,
            temperature,
            escalation,
            widget,
            allowed_origins,
            enabled,
            metadata,
          });
        },
      },
      {
        phrase: 'How long does delivery take',
        check: ({ stdout }) =>
          expect(JSON.parse(stdout)).toMatchObject({
            message: {
              content: 'Delivery inside the EU takes three to five days; tracking numbers arrive by email [1].',
              citations: [{ title: 'Shipping', score: 0.8 }],
            },
            intent: 'order_status',
            escalated: false,
            usage: { prompt_tokens: 211, completion_tokens: 18, total_tokens: 229 },
          }),
      },
      {
        phrase: 'My lawyer',
        check: ({ stdout }) =>
          expect(JSON.parse(stdout)).toEqual({
            content: 'Thanks, I have passed this on to our team. Someone will get back to you soon.',
            intent: 'technical_support',
            escalated: true,
            escalation_reason: 'keyword',
          }),
      },
      {
        phrase: 'escalation_status=escalated',
        check: ({ stdout }) =>
          expect(stdout).toMatch(
            /^\{"id":"conv_\w+","intent":"technical_support","reason":"keyword"\}\n\{"id":"conv_\w+","intent":"order_status","reason":"sales_opportunity"\}\n0\n$/,
          ),
      },
    ],
  },
  {
    name: 'chat',
    checks: [
      {
        phrase: 'Announce our spring sale',
        // The answer the guide shows.
        check: ({ stdout }) =>
          expect(JSON.parse(stdout)).toMatchObject({
            object: 'chat.completion',
            choices: [
              {
                message: {
                  content:
                    "Introducing our spring sale on coffee roasts!\n\nWe're excited to share it with you. Find every detail at [link], from [date].\n\nQuestions? Reply to this message: we'd love to hear what you think.",
                },
              },
            ],
            usage: { prompt_tokens: 15, completion_tokens: 43, total_tokens: 58 },
            cost_usd: 0.0000187,
          }),
      },
      {
        phrase: '"top_logprobs": 2',
        // The first token the guide shows.
        check: ({ stdout }) => {
          const shown = /The answer's first token:\n\n```json\n([\s\S]*?)```/.exec(
            read('docs', 'guides', 'chat.md'),
          )![1]!;
          expect(JSON.parse(stdout).choices[0].logprobs.content[0]).toEqual(JSON.parse(shown));
        },
      },
    ],
  },
  { name: 'embeddings-and-responses' },
  { name: 'receiving-webhooks' },
  {
    name: 'voices',
    // "With the sample saved as sample.txt": the casual sample the guide's outputs come from.
    files: () => ({ 'sample.txt': read('test', 'voices', 'samples', 'casual-coffee.txt') }),
    checks: [
      { phrase: 'echo $STATUS', check: ({ stdout }) => expect(stdout).toBe('ready\n') },
      {
        phrase: '/check',
        check: ({ stdout }) => {
          const check = JSON.parse(stdout);
          expect(check).toMatchObject({
            object: 'voice_check',
            rating: 'off_voice',
            banned_phrases_found: [{ phrase: 'world-class', start: 16, end: 27 }],
          });
        },
      },
    ],
  },
  {
    name: 'operate',
    checks: [
      {
        phrase: "jq '{id, amount_usd, spent_usd, resets_at}'",
        check: ({ stdout }) =>
          expect(JSON.parse(stdout)).toMatchObject({
            id: expect.stringMatching(/^lim_/),
            amount_usd: 50,
            spent_usd: 0,
          }),
      },
      {
        phrase: '"models": ["sandbox-echo"]',
        check: ({ stdout }) => expect(JSON.parse(stdout)).toEqual({ model: 'sandbox-writer', models_tried: [] }),
      },
      {
        phrase: '"project_id"',
        check: ({ stdout }) => expect(JSON.parse(stdout)).toEqual({ model: 'sandbox-writer', models_tried: [] }),
      },
    ],
  },
  {
    name: 'scim',
    checks: [
      { phrase: 'echo $SCIM_URL', check: ({ stdout }) => expect(stdout).toMatch(/\/scim\/v2\/ws_[0-9A-Z]{26}\n$/) },
      {
        phrase: 'select(.id == "\'$USER_ID\'")',
        // The answer the guide shows.
        check: ({ stdout }) =>
          expect(stdout).toBe('{"email":"isabel.okafor@northwind.example","role":"viewer","scim_source":"okta"}\n'),
      },
      { phrase: '"displayName": "Editor"', check: ({ stdout }) => expect(stdout).toBe('editor\n') },
      {
        phrase: '{"active": false}',
        check: ({ stdout }) =>
          expect(stdout).toBe('{"userName":"isabel.okafor@northwind.example","active":false}\nnot_found\n'),
      },
    ],
  },
  {
    name: 'sign-in',
    checks: [
      // This server sends no email (no SMTP_URL): the guide's comment names the answer.
      {
        phrase: '/v1/sessions/links',
        check: ({ stdout }) => expect(JSON.parse(stdout)).toMatchObject({ status: 422, code: 'email_not_configured' }),
      },
      { phrase: "jq '.data | length'", check: ({ stdout }) => expect(stdout).toBe('0\n') },
    ],
  },
  {
    name: 'single-sign-on',
    // "npm run sso:test-provider", on a port of its own.
    companion: async (server) => {
      const provider = await startOidcTestProvider({ service: server.url });
      return { replacements: { 'http://localhost:4000': provider.issuer }, stop: provider.close };
    },
    checks: [
      {
        phrase: 'jq -r .start_url connection.json\n',
        check: ({ stdout }) => expect(stdout).toMatch(/\/sso\/sso_[0-9A-Z]{26}\/start\n$/),
      },
      {
        phrase: "-w '%{http_code} %{redirect_url}",
        check: ({ stdout }) => expect(stdout).toMatch(/^302 http:\/\/127\.0\.0\.1:\d+\/auth\?/),
      },
      {
        phrase: '{"required": true}',
        check: ({ stdout }) => expect(JSON.parse(stdout)).toEqual({ domains: ['example.com'], required: true }),
      },
    ],
  },
  {
    name: 'workflows',
    // "Save this as release.yaml": the guide's definition.
    files: () => ({ 'release.yaml': /```yaml\n([\s\S]*?)```/.exec(read('docs', 'guides', 'workflows.md'))![1]! }),
    checks: [
      {
        phrase: "| jq '{status, latency_ms, cost_usd, outputs}'",
        check: ({ stdout }) => expect(stdout).toContain('"status": "success"'),
      },
    ],
  },
];

describe.each(guides)('the guide $name', ({ name, files, companion, checks = [] }) => {
  const blocks = fencedBlocks(readFileSync(join(projectRoot, 'docs', 'guides', `${name}.md`), 'utf8'), 'sh');
  let server: TestServer;
  let session: ShellSession;
  let dir: string;
  let running: Awaited<ReturnType<NonNullable<Guide['companion']>>> | undefined;

  beforeAll(async () => {
    server = await startTestServer({ env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } });
    running = await companion?.(server);
    // A directory of the reader's own, with the files the guide has them save; `npx` finds the project's packages.
    dir = mkdtempSync(join(tmpdir(), `guide-${name}-`));
    symlinkSync(join(projectRoot, 'node_modules'), join(dir, 'node_modules'));
    for (const [file, text] of Object.entries(files?.(server) ?? {})) writeFileSync(join(dir, file), text);
    session = new ShellSession({
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', CONTENT_SERVICE_KEY: server.ownerKey },
    });
  });
  afterAll(async () => {
    session?.stop();
    await running?.stop();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    const skipped = blocks.filter((block) => block.notRun);
    if (skipped.length > 0)
      console.info(
        `docs/guides/${name}.md blocks not run:\n${skipped.map((block) => `  line ${block.line}: ${block.notRun}`).join('\n')}`,
      );
  });

  test('every marker names this test and gives a reason', () => {
    for (const block of blocks.filter((candidate) => candidate.notRun)) {
      expect(block.markerFile, `the marker of line ${block.line}`).toBe(THIS_FILE);
      expect(block.notRun!.length).toBeGreaterThan(10);
    }
  });

  for (const block of blocks) {
    const title = `line ${block.line} (${block.section})`;
    if (block.notRun) {
      test.skip(`${title}: ${block.notRun}`, () => {});
      continue;
    }
    test(title, { timeout: 90_000 }, async () => {
      let code = block.code;
      for (const [from, to] of Object.entries(running?.replacements ?? {})) code = code.replaceAll(from, to);
      code = code
        .replaceAll('https://eu.content-service.example', server.url)
        .replaceAll('http://localhost:8080', server.url)
        .replace(/^export CONTENT_SERVICE_KEY=cs_live_….*$/gm, `export CONTENT_SERVICE_KEY=${server.ownerKey}`);
      const result = await session.run(code, 80_000);
      const shown = `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
      expect(result.failures, shown).toEqual([]);
      const errors = result.httpStatuses.filter((status) => status >= 400 || status === 0);
      expect(
        errors.sort(),
        `HTTP errors of the block (those it documents in a comment are expected)\n${shown}`,
      ).toEqual(documentedErrorStatuses(block.code).sort());
      for (const entry of checks.filter(({ phrase }) =>
        typeof phrase === 'string' ? block.code.includes(phrase) : phrase.test(block.code),
      ))
        entry.check(result);
    });
  }
});

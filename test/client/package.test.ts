// The client as an npm package (packages/client), used the way another team's project uses it: `npm pack` builds the
// tarball, which is installed offline into a new project in a temporary directory; that project type-checks with the
// defaults of `tsc --init` (nodenext, and bundler resolution), then calls the Prism mock and a real server from Node,
// and a real server from an esbuild bundle in Chromium. The README's snippet runs against the real server as written,
// but for its base URL and key.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import type { components } from '../../generated/openapi.ts';
import { hasChromium, launchChromium } from '../support/chromium.ts';
import { projectRoot } from '../support/prism.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { deref, firstExample, spec } from '../support/spec.ts';

const run = promisify(execFile);
const packageDir = join(projectRoot, 'packages', 'client');
const tsc = join(projectRoot, 'node_modules', '.bin', 'tsc');
const mock = inject('contractTargets').find((target) => target.name === 'mock');

/** The consumer's code: what a frontend team writes, using only what the package exports. */
const consumerSource = `import { ContentServiceError, createContentServiceClient, type ChatCompletionChunk, type Problem } from '@content-service/client';

export interface Tour {
  voiceNames: string[];
  documentId: string;
  documentTitle: string;
  chunks: ChatCompletionChunk[];
  text: string;
}

/** Lists voices, creates a document and streams a chat completion of the sandbox writer. */
export async function tour(baseUrl: string, apiKey: string): Promise<Tour> {
  const api = createContentServiceClient({ baseUrl, apiKey });
  const voices = await api.GET('/v1/voices', { params: { query: { limit: 10 } } });
  if (voices.error) throw new ContentServiceError(voices.response.status, voices.error);
  const created = await api.POST('/v1/documents', { body: { title: 'Spring sale launch post', content: '# Spring sale' } });
  if (created.error) throw new ContentServiceError(created.response.status, created.error);
  const chunks: ChatCompletionChunk[] = [];
  const stream = api.streamChatCompletion({ model: 'sandbox-writer', messages: [{ role: 'user', content: 'Announce our spring sale on coffee roasts' }] });
  for await (const chunk of stream) chunks.push(chunk);
  return {
    voiceNames: voices.data.data.map((voice) => voice.name),
    documentId: created.data.id,
    documentTitle: created.data.title,
    chunks,
    text: chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join(''),
  };
}

/** What streaming a model that does not exist throws. */
export async function unknownModel(baseUrl: string, apiKey: string): Promise<{ name: string; status: number; problem: Problem | undefined }> {
  const api = createContentServiceClient({ baseUrl, apiKey });
  try {
    for await (const chunk of api.streamChatCompletion({ model: 'no-such-model', messages: [{ role: 'user', content: 'Hi' }] })) void chunk;
  } catch (error) {
    if (error instanceof ContentServiceError) return { name: error.name, status: error.status, problem: error.problem };
    throw error;
  }
  throw new Error('streaming an unknown model did not throw');
}

// The contract's types reach the consumer (they are not \`any\`): a mistyped call does not compile.
export function mistyped(): void {
  const api = createContentServiceClient();
  // @ts-expect-error: the contract has no such path
  void api.GET('/v1/no-such-path');
  // @ts-expect-error: limit is a number
  void api.GET('/v1/voices', { params: { query: { limit: 'ten' } } });
  // @ts-expect-error: a document needs a title
  void api.POST('/v1/documents', { body: { content: '# Spring sale' } });
}
`;

/** A webhook receiver outside this repository: the package's `./webhooks` entry and the event types of its root. */
const receiverSource = `import type { EventOf, WebhookEvent } from '@content-service/client';
import { signWebhookPayload, verifyWebhook, WebhookVerificationError } from '@content-service/client/webhooks';

const secret = 'whsec_receiver_test';
const rawBody = JSON.stringify({ id: 'evt_01', object: 'event', type: 'voice.trained', data: { voice_id: 'voc_01' } });
const timestamp = Math.floor(Date.now() / 1000);
const headers = {
  'service-timestamp': String(timestamp),
  'service-signature': signWebhookPayload(rawBody, secret, timestamp),
};
const event: WebhookEvent = verifyWebhook(rawBody, headers, secret);
const trained: EventOf<'voice.trained'> | undefined =
  event.type === 'voice.trained' ? (event as EventOf<'voice.trained'>) : undefined;
let refused = '';
try {
  verifyWebhook(rawBody, headers, 'whsec_another');
} catch (error) {
  if (error instanceof WebhookVerificationError) refused = error.reason;
}
console.log(JSON.stringify({ id: event.id, type: trained?.type, refused }));
`;

/** The page's global once the consumer's bundle ran: its exports (consumerSource), as esbuild's `globalName`. */
interface ConsumerPage {
  consumer: {
    tour(
      baseUrl: string,
      apiKey: string,
    ): Promise<{ voiceNames: string[]; documentId: string; documentTitle: string; chunks: unknown[]; text: string }>;
    unknownModel(baseUrl: string, apiKey: string): Promise<{ name: string; status: number; problem: unknown }>;
  };
}

/** Runs one export of consumer.ts in Node (its types stripped by Node) and returns what it returned. */
const nodeRunnerSource = `import * as consumer from './consumer.ts';
const [name, baseUrl, apiKey] = process.argv.slice(2);
process.stdout.write(JSON.stringify(await consumer[name](baseUrl, apiKey)));
`;

/** The ```ts block of a Markdown section (from its heading to the next heading of the same or a higher level). */
function tsBlockOf(markdown: string, heading: string): string {
  const lines = markdown.split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const level = heading.match(/^#+/)![0].length;
  const end = lines.findIndex((line, i) => i > start && new RegExp(`^#{1,${level}} `).test(line));
  const section = lines.slice(start, end < 0 ? undefined : end).join('\n');
  const block = section.match(/```ts\n([\s\S]*?)```/);
  if (!block) throw new Error(`no \`\`\`ts block under "${heading}"`);
  return block[1]!;
}

const rootReadme = readFileSync(join(projectRoot, 'README.md'), 'utf8');
const packageReadme = readFileSync(join(packageDir, 'README.md'), 'utf8');
const readmeSnippet = tsBlockOf(packageReadme, '## Use');

let scratch: string;
let consumerDir: string;
let packed: { filename: string; name: string; version: string; files: { path: string }[] };
let installed: { license?: string; dependencies?: Record<string, string>; private?: boolean };
let server: TestServer;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'cs-client-package-'));
  // `npm pack` runs the package's prepack script, which builds dist/ from generated/client.ts.
  const pack = await run('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: packageDir });
  packed = JSON.parse(pack.stdout)[0];

  // The package's dependencies, and theirs, packed from the root's node_modules (the versions the root installed), so
  // that the install below reads no registry and no cache. Only what the package declares is packed: an undeclared
  // import fails to resolve in the consumer.
  const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
  const tarballs: string[] = [];
  const seen = new Set<string>();
  const queue = Object.keys(manifest.dependencies ?? {});
  for (let i = 0; i < queue.length && i < 50; i++) {
    const name = queue[i]!;
    if (seen.has(name)) continue;
    seen.add(name);
    const dir = join(projectRoot, 'node_modules', name);
    queue.push(...Object.keys(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).dependencies ?? {}));
    const { stdout } = await run('npm', ['pack', dir, '--json', '--ignore-scripts', '--pack-destination', scratch], {
      cwd: scratch,
    });
    tarballs.push(join(scratch, JSON.parse(stdout)[0].filename));
  }

  consumerDir = join(scratch, 'consumer');
  mkdirSync(consumerDir);
  writeFileSync(join(consumerDir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await run(
    'npm',
    [
      'install',
      '--offline',
      '--no-audit',
      '--no-fund',
      '--ignore-scripts',
      ...tarballs,
      join(scratch, packed.filename),
    ],
    { cwd: consumerDir },
  );
  // Exits non-zero on a missing or invalid dependency.
  await run('npm', ['ls', '--all', '--offline'], { cwd: consumerDir });
  installed = JSON.parse(
    readFileSync(join(consumerDir, 'node_modules', '@content-service', 'client', 'package.json'), 'utf8'),
  );

  // Exactly what `tsc --init` writes (its comments and all), the compiler of the root.
  await run(tsc, ['--init'], { cwd: consumerDir });
  writeFileSync(join(consumerDir, 'consumer.ts'), consumerSource);
  writeFileSync(join(consumerDir, 'readme.ts'), readmeSnippet);
  writeFileSync(join(consumerDir, 'receiver.ts'), receiverSource);
  writeFileSync(join(consumerDir, 'node-runner.mjs'), nodeRunnerSource);

  server = await startTestServer();
}, 180_000);

afterAll(async () => {
  await server?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

async function runInNode(file: string, ...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [file, ...args], { cwd: consumerDir });
  return stdout;
}

describe('the package', () => {
  test('is @content-service/client at the root version and license, with the dependency ranges of the root', () => {
    const root = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8'));
    expect(packed).toMatchObject({ name: '@content-service/client', version: root.version });
    expect(installed.license).toBe(root.license);
    expect(installed.dependencies).toEqual({
      'eventsource-parser': root.dependencies['eventsource-parser'],
      'openapi-fetch': root.dependencies['openapi-fetch'],
    });
    expect(installed.private).toBeUndefined();
  });

  test('holds the compiled JavaScript, its declarations and the README, and no sources', () => {
    expect(packed.files.map((f) => f.path).sort()).toEqual([
      'README.md',
      'dist/client.d.ts',
      'dist/client.js',
      'dist/openapi.d.ts',
      'dist/openapi.js',
      'dist/webhooks.d.ts',
      'dist/webhooks.js',
      'package.json',
    ]);
    // The declarations need no lib a consumer must add (dom.asynciterable): the stream is an AsyncGenerator (es2018).
    const declarations = readFileSync(
      join(consumerDir, 'node_modules', '@content-service', 'client', 'dist', 'client.d.ts'),
      'utf8',
    );
    expect(declarations).toContain('AsyncGenerator<ChatCompletionChunk, void, undefined>');
  });

  test.each([
    ['nodenext (tsc --init)', []],
    ['nodenext, with the declarations of the packages checked too', ['--skipLibCheck', 'false']],
    ['bundler', ['--module', 'esnext', '--moduleResolution', 'bundler']],
  ])(
    'type-checks the consumer and the README snippet with the defaults of tsc --init: %s',
    {
      // A type-check of the packages' declarations takes its time on a slow or busy machine.
      timeout: 120_000,
    },
    async (_, flags) => {
      // Fails on any error, an unused @ts-expect-error included (it would mean the contract's types did not arrive).
      await expect(run(tsc, ['--noEmit', '-p', '.', ...flags], { cwd: consumerDir })).resolves.toBeDefined();
    },
  );
});

describe('from Node', () => {
  test('a receiver verifies a delivery with the package alone, and refuses one signed with another secret', async () => {
    expect(JSON.parse(await runInNode('receiver.ts'))).toEqual({
      id: 'evt_01',
      type: 'voice.trained',
      refused: 'invalid_signature',
    });
  });

  test.skipIf(!mock)('against the Prism mock: the examples of the contract', async () => {
    const result = JSON.parse(await runInNode('node-runner.mjs', 'tour', mock!.baseUrl, 'cs_test_any_key'));
    const listExample = firstExample(
      deref(spec.paths['/v1/voices'].get.responses['200']).content['application/json'],
    ) as components['schemas']['VoiceList'];
    const createdExample = firstExample(
      deref(spec.paths['/v1/documents'].post.responses['201']).content['application/json'],
    ) as components['schemas']['Document'];
    const streamExample = firstExample(
      spec.paths['/v1/chat/completions'].post.responses['200'].content['text/event-stream'],
    ) as string;
    const documentedChunks = streamExample
      .split('\n')
      .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
      .map((line) => JSON.parse(line.slice('data: '.length)));
    expect(result.voiceNames).toEqual(listExample.data.map((voice: { name: string }) => voice.name));
    expect(result.documentId).toBe(createdExample.id);
    expect(result.chunks).toEqual(documentedChunks);
  });

  test('the README snippet, as written but for its base URL and key, against a real server', async () => {
    expect(readmeSnippet).toContain("baseUrl: 'http://localhost:8080', apiKey: 'cs_live_…'");
    // The root README points at the package's README rather than repeating its snippet.
    expect(rootReadme).toContain('[packages/client](packages/client/README.md)');
    writeFileSync(
      join(consumerDir, 'readme.ts'),
      readmeSnippet.replace(
        "baseUrl: 'http://localhost:8080', apiKey: 'cs_live_…'",
        `baseUrl: '${server.url}', apiKey: '${server.ownerKey}'`,
      ),
    );
    const output = await runInNode('readme.ts');
    const whole = await server.call('POST', '/v1/chat/completions', {
      body: {
        model: 'sandbox-writer',
        messages: [{ role: 'user', content: 'Announce our spring sale on coffee roasts' }],
      },
    });
    const lines = output.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^\d+ voices: \[/);
    expect(lines[1]).toMatch(/^created doc_[0-9A-Z]{26}$/);
    expect(lines.slice(2).join('\n')).toBe(whole.body.choices[0].message.content);
  });
});

describe.each(databaseKinds)('from Node against a real server on %s', (kind) => {
  let kindServer: TestServer;
  beforeAll(async () => {
    kindServer = await startTestServer({ database: kind });
  });
  afterAll(async () => {
    await kindServer?.close();
  });

  test('voices, a new document, and the streamed text of the non-streamed answer', async () => {
    const voice = await kindServer.call('POST', '/v1/voices', {
      body: {
        ...(firstExample(deref(spec.paths['/v1/voices'].post.requestBody).content['application/json']) as object),
        name: 'Roastery',
      },
    });
    expect(voice.status).toBe(202);
    const result = JSON.parse(await runInNode('node-runner.mjs', 'tour', kindServer.url, kindServer.ownerKey));
    expect(result.voiceNames).toEqual(['Roastery']);
    const document = await kindServer.call('GET', `/v1/documents/${result.documentId}`);
    expect(document.status).toBe(200);
    expect(document.body).toMatchObject({ title: 'Spring sale launch post' });
    const whole = await kindServer.call('POST', '/v1/chat/completions', {
      body: {
        model: 'sandbox-writer',
        messages: [{ role: 'user', content: 'Announce our spring sale on coffee roasts' }],
      },
    });
    expect(whole.status).toBe(200);
    expect(result.text).toBe(whole.body.choices[0].message.content);
    expect(result.chunks.at(-1).choices[0].finish_reason).toBe('stop');
  });

  test('an error answer throws ContentServiceError with the problem', async () => {
    const result = JSON.parse(await runInNode('node-runner.mjs', 'unknownModel', kindServer.url, kindServer.ownerKey));
    expect(result).toMatchObject({
      name: 'ContentServiceError',
      status: 404,
      problem: { code: 'model_not_found', status: 404 },
    });
  });
});

describe.skipIf(!hasChromium)('from a browser bundle (esbuild) in Chromium', () => {
  let browser: Browser;
  let page: Server;
  let pageUrl: string;

  beforeAll(async () => {
    // The consumer bundled as a page's script, the package and its dependencies resolved as a browser bundler does.
    const bundle = await build({
      entryPoints: [join(consumerDir, 'consumer.ts')],
      absWorkingDir: consumerDir,
      bundle: true,
      platform: 'browser',
      format: 'iife',
      globalName: 'consumer',
      write: false,
      logLevel: 'silent',
    });
    const script = bundle.outputFiles[0]!.text;
    expect(script).not.toMatch(/require\("node:/);
    // Served from its own origin, so that every call to the API is cross-origin (CORS, with preflights).
    page = createServer((req, res) => {
      if (req.url === '/consumer.js') {
        res.writeHead(200, { 'Content-Type': 'text/javascript' }).end(script);
      } else {
        res
          .writeHead(200, { 'Content-Type': 'text/html' })
          .end('<!doctype html><title>consumer</title><script src="/consumer.js"></script>');
      }
    });
    await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
    pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (page ? page.close(() => resolve()) : resolve()));
  });

  test('lists voices, creates a document and streams a chat completion of a real server', async () => {
    const tab = await browser.newPage();
    const problems: string[] = [];
    tab.on('pageerror', (error) => problems.push(error.message));
    tab.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
    await tab.goto(pageUrl);
    const target = { baseUrl: server.url, apiKey: server.ownerKey };
    const result = await tab.evaluate(
      ({ baseUrl, apiKey }) => (globalThis as unknown as ConsumerPage).consumer.tour(baseUrl, apiKey),
      target,
    );
    expect(new URL(server.url).origin).not.toBe(new URL(pageUrl).origin);
    const document = await server.call('GET', `/v1/documents/${result.documentId}`);
    expect(document.body).toMatchObject({ title: 'Spring sale launch post' });
    const whole = await server.call('POST', '/v1/chat/completions', {
      body: {
        model: 'sandbox-writer',
        messages: [{ role: 'user', content: 'Announce our spring sale on coffee roasts' }],
      },
    });
    expect(result.text).toBe(whole.body.choices[0].message.content);
    expect(result.chunks.length).toBeGreaterThan(1);
    expect(problems).toEqual([]);

    // Chromium logs the 404 itself as a console error; an exception of the page would still be a failure.
    problems.length = 0;
    const failure = await tab.evaluate(
      ({ baseUrl, apiKey }) => (globalThis as unknown as ConsumerPage).consumer.unknownModel(baseUrl, apiKey),
      target,
    );
    expect(failure).toMatchObject({ name: 'ContentServiceError', status: 404, problem: { code: 'model_not_found' } });
    expect(problems.filter((problem) => !problem.includes('status of 404'))).toEqual([]);
    await tab.close();
  });
});

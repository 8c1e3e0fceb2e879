// The guide "Embeddings and the Responses API" (docs/guides/embeddings-and-responses.md) runs as written against a
// real server with no provider key: each TypeScript block, with the server's address in place of localhost:8080,
// prints what the guide says it prints, and each curl command answers 200 with the shape the guide describes.
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';

const run = promisify(execFile);
const projectRoot = join(import.meta.dirname, '..', '..');
const guide = readFileSync(join(projectRoot, 'docs', 'guides', 'embeddings-and-responses.md'), 'utf8');
const blocks = (language: string) =>
  [...guide.matchAll(new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((match) => match[1]!);

describe('the guide "Embeddings and the Responses API"', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  async function runTs(source: string): Promise<string> {
    const file = join(projectRoot, 'test', 'docs', `.guide-embeddings-responses-${process.pid}.ts`);
    writeFileSync(file, source.replaceAll('http://localhost:8080', server.url));
    try {
      const { stdout } = await run(process.execPath, [file], {
        cwd: projectRoot,
        env: { ...process.env, CONTENT_SERVICE_KEY: server.ownerKey },
      });
      return stdout.trim();
    } finally {
      rmSync(file, { force: true });
    }
  }

  async function curl(command: string): Promise<unknown> {
    const line = command
      .replace(/\\\n\s*/g, ' ')
      .replaceAll('http://localhost:8080', server.url)
      .replace(/^curl -s /, 'curl -s -f ');
    const { stdout } = await run('bash', ['-c', line], {
      env: { ...process.env, CONTENT_SERVICE_KEY: server.ownerKey },
    });
    return JSON.parse(stdout);
  }

  test('the TypeScript blocks print what the guide says', async () => {
    const ts = blocks('ts');
    expect(ts).toHaveLength(5);
    expect(await runTs(ts[0]!)).toBe('Refunds are paid within 14 days.');
    expect(await runTs(ts[1]!)).toBe('6 true');
    expect(await runTs(ts[2]!)).toBe('Spring sale starts Monday.\nRoasts ship on Tuesday. true');
    expect(await runTs(ts[3]!)).toBe('true true');
    expect(await runTs(ts[4]!)).toBe('Hello from the AI SDK');
  });

  test('the curl commands answer as described', async () => {
    const commands = blocks('sh')
      .flatMap((block) => block.split('\n\n'))
      .filter((command) => command.trimStart().startsWith('curl'));
    expect(commands).toHaveLength(2);
    const embeddings = (await curl(commands[0]!.trim())) as {
      data: Array<{ embedding: number[] }>;
      model: string;
      cost_usd: number;
    };
    expect(embeddings).toMatchObject({ object: 'list', model: 'sandbox-embedding', cost_usd: 0 });
    expect(embeddings.data[0]!.embedding).toHaveLength(4);
    const usage = (await curl(commands[1]!.trim())) as { data: Array<{ model: string }> };
    expect(usage.data.map((row) => row.model)).toContain('sandbox-embedding');
  });
});

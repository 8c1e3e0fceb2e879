// The example of docs/engine.md's "Embeddings" section runs as written against a real server: its curl command (with
// the server's URL and key) answers what the comment says, and its TypeScript (the `openai` SDK, unmodified) prints
// the refunds passage first. The only edits are the server's address and key.
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';

const run = promisify(execFile);
const projectRoot = join(import.meta.dirname, '..', '..');
const section = (() => {
  const text = readFileSync(join(projectRoot, 'docs', 'engine.md'), 'utf8');
  const start = text.indexOf('## Embeddings');
  return text.slice(start, text.indexOf('\n## ', start + 1));
})();
const block = (language: string) => {
  const found = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(
    section.slice(section.indexOf('### An example')),
  );
  if (!found) throw new Error(`no ${language} block in the example`);
  return found[1]!;
};

describe('the embeddings example of docs/engine.md', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  test('the curl command answers the list the comment shows', async () => {
    const command = block('sh')
      .split('\n')
      .filter((line) => !line.startsWith('#') && !line.startsWith('KEY='))
      .join('\n')
      .split(/\n(?=curl )/)[0]!
      .replace(/\\\n\s*/g, ' ')
      .replaceAll('http://localhost:8080', server.url);
    const { stdout } = await run('bash', ['-c', command], { env: { ...process.env, KEY: server.ownerKey } });
    const answer = JSON.parse(stdout);
    expect(answer).toMatchObject({
      object: 'list',
      model: 'sandbox-embedding',
      usage: { prompt_tokens: 15, total_tokens: 15 },
      cost_usd: 0,
    });
    expect(answer.data).toHaveLength(2);
    expect(answer.data[0].embedding.slice(0, 2).map((value: number) => value.toFixed(8))).toEqual([
      '0.18898223',
      '-0.56694669',
    ]);
  });

  test('the openai SDK example ranks the refunds passage first', async () => {
    const file = join(projectRoot, 'test', 'docs', `.engine-embeddings-${process.pid}.ts`);
    writeFileSync(file, block('ts').replaceAll('http://localhost:8080', server.url));
    try {
      const { stdout } = await run(process.execPath, [file], {
        cwd: projectRoot,
        env: { ...process.env, CONTENT_SERVICE_KEY: server.ownerKey },
      });
      expect(stdout.trim()).toMatch(/^Refunds are paid within 14 days\. \d+$/);
    } finally {
      rmSync(file, { force: true });
    }
  });
});

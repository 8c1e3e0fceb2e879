// The guide "Call tools" (docs/guides/tools.md): its TypeScript blocks, as the guide shows them, run as a script of
// their own with Node against a real server's sandbox (the agent loop alone, then with the streaming block after it,
// which uses its `client` and `tools`; the Responses API's loop alone), and print what the guide says they print.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { projectRoot } from '../support/prism.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const guide = readFileSync(join(projectRoot, 'docs', 'guides', 'tools.md'), 'utf8');
const blocks = [...guide.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);

describe('the tools guide’s code', () => {
  let server: TestServer;
  let dir: string;

  beforeAll(async () => {
    server = await startTestServer();
    dir = mkdtempSync(join(tmpdir(), 'tools-guide-'));
    // The script imports `openai` as a reader's project would: from a node_modules beside it.
    symlinkSync(join(projectRoot, 'node_modules'), join(dir, 'node_modules'));
  });
  afterAll(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function run(name: string, code: string): Promise<string> {
    const file = join(dir, `${name}.ts`);
    writeFileSync(file, code);
    const { stdout } = await promisify(execFile)(process.execPath, [file], {
      cwd: dir,
      env: { ...process.env, CONTENT_SERVICE_URL: `${server.url}/v1`, CONTENT_SERVICE_KEY: server.ownerKey },
      timeout: 60_000,
    });
    return stdout;
  }

  test('the guide has the agent loop, the streaming block and the Responses API loop', () => {
    expect(blocks).toHaveLength(3);
    expect(blocks[0]).toContain("model: 'sandbox-writer'");
    expect(blocks[2]).toContain('client.responses.create');
  });

  test('the agent loop calls get_weather, sends the result, and prints the answer', async () => {
    expect(await run('agent-loop', blocks[0]!)).toBe(
      'get_weather: {"city":"Paris","temperature_c":21,"sky":"clear"}.\n',
    );
  });

  test('the streaming block names each call as it starts, then prints their arguments', async () => {
    const printed = await run('streaming', `${blocks[0]!}\n${blocks[1]!}`);
    expect(printed.split('\n').slice(1)).toEqual([
      'call 0: get_weather',
      'call 1: get_weather',
      '{"city":"Paris"}',
      '{"city":"Berlin"}',
      '',
    ]);
  });

  test('the Responses API loop sends the function_call_output with previous_response_id and prints the answer', async () => {
    expect(await run('responses-loop', blocks[2]!)).toBe(
      'get_weather: {"city":"Paris","temperature_c":21,"sky":"clear"}.\n',
    );
  });
});

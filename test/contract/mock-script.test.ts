// `npm run mock` on a port of one's choosing: `npm run mock -- --port N` (the flag reaches Prism once) and MOCK_PORT.
import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, expect, test } from 'vitest';
import { freePort, projectRoot } from '../support/prism.ts';

const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
});

/** Runs scripts/mock.ts as `npm run mock` does and waits (bounded) until the mock answers a documented operation. */
async function mockAnswers(args: string[], env: Record<string, string>, port: number): Promise<number> {
  const child = spawn(process.execPath, ['scripts/mock.ts', ...args], {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the mock exited with ${child.exitCode}:\n${output}`);
    const response = await fetch(`http://127.0.0.1:${port}/v1/voices`, {
      headers: { Authorization: 'Bearer cs_test_anything' },
    }).catch(() => undefined);
    if (response) {
      await response.arrayBuffer();
      child.kill('SIGTERM');
      return response.status;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill('SIGKILL');
  throw new Error(`the mock did not answer on port ${port}:\n${output}`);
}

test('the mock listens on the port of --port or of MOCK_PORT', { timeout: 150_000 }, async () => {
  const [byFlag, byVariable] = [await freePort(), await freePort()];
  const statuses = await Promise.all([
    // MOCK_PORT is set too: the flag wins.
    mockAnswers(['--port', String(byFlag)], { MOCK_PORT: '1' }, byFlag),
    mockAnswers([], { MOCK_PORT: String(byVariable) }, byVariable),
  ]);
  expect(statuses).toEqual([200, 200]);
});

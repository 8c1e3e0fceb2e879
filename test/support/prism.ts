// Starts the Prism mock on a loopback port, as `npm run mock` does, and stops it again.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';

export const projectRoot = join(import.meta.dirname, '..', '..');

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export interface RunningMock {
  baseUrl: string;
  startupMs: number;
  stop(): Promise<void>;
}

export async function startPrism(port?: number): Promise<RunningMock> {
  const chosen = port ?? (await freePort());
  const started = Date.now();
  const child: ChildProcess = spawn(
    join(projectRoot, 'node_modules', '.bin', 'prism'),
    ['mock', join(projectRoot, 'generated', 'openapi.json'), '--host', '127.0.0.1', '--port', String(chosen)],
    { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const baseUrl = `http://127.0.0.1:${chosen}`;
  // Bounded wait: Prism is up once it answers its public health operation.
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`Prism exited early:\n${output}`);
    try {
      const response = await fetch(`${baseUrl}/healthz`);
      await response.body?.cancel();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
    if (i === 599) {
      child.kill('SIGKILL');
      throw new Error(`Prism did not start within 60 s:\n${output}`);
    }
  }
  return {
    baseUrl,
    startupMs: Date.now() - started,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

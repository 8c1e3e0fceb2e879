// The server as its own process (`src/main.ts` with the command-line flags `npm start` passes), for the tests that
// need several processes on one database, signals, or what a process exports (traces, logs).
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { COMMAND_LINE_FLAGS } from '../../src/platform/collector.ts';

export { freePort } from './prism.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  /** What the process wrote so far, stdout and stderr together. */
  output: () => string;
}

/**
 * Starts `src/main.ts` on 127.0.0.1:`port` with `env` over a minimal environment (no demo workspace, `warn` logs).
 */
export function startServerProcess(env: Record<string, string>, port: number): ServerProcess {
  const child = spawn(process.execPath, [...COMMAND_LINE_FLAGS, MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      SEED_DEMO: 'false',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return { child, url: `http://127.0.0.1:${port}`, output: () => output };
}

/** Polls /readyz until 200: at most `attempts` tries, 100 ms apart. Fails with the process's output. */
export async function waitUntilReady(server: ServerProcess, attempts = 300): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (server.child.exitCode !== null)
      throw new Error(`the server exited with ${server.child.exitCode}:\n${server.output()}`);
    try {
      const response = await fetch(`${server.url}/readyz`);
      await response.arrayBuffer();
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the server did not become ready:\n${server.output()}`);
}

/** Sends SIGTERM and waits for the exit, at most `ms`; returns the exit code (or 'timeout', after a SIGKILL). */
export async function terminate(server: ServerProcess, ms = 20_000): Promise<number | string | null> {
  if (server.child.exitCode !== null) return server.child.exitCode;
  const exited = once(server.child, 'exit').then(([code]) => code as number | null);
  server.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    exited,
    new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), ms);
    }),
  ]);
  clearTimeout(timer);
  if (outcome === 'timeout') server.child.kill('SIGKILL');
  return outcome;
}

/** A JSON request to a server process with a bearer key; the answer's status, headers and parsed body. */
export async function callJson(baseUrl: string, method: string, path: string, key: string, body?: unknown) {
  const response = await fetch(baseUrl + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

// What the benchmarks share: settings from the environment, child processes that are stopped at the end (also after a
// failure or Ctrl-C), free loopback ports, and a seeded workspace with a pool of API keys.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { features } from '../src/features/index.ts';
import { createSignInLink } from '../src/features/sessions/index.ts';
import { createWorkspace, insertApiKey } from '../src/features/workspace/index.ts';
import type { Role } from '../src/platform/context.ts';
import { migrate, openStorage } from '../src/storage/database.ts';
import { freePort } from '../test/support/prism.ts';
import { startSmtpSink } from '../test/support/smtp-sink.ts';

export { freePort };

export const root = join(import.meta.dirname, '..');

export function positive(name: string, fallback: number, zeroAllowed = false): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (!zeroAllowed && value === 0))
    throw new Error(`${name} must be a positive number, got ${raw}`);
  return value;
}

// ---------------------------------------------------------------------------------------------------- processes

export const children = new Set<ChildProcess>();

/** Stops a process started here: SIGTERM, then SIGKILL after 15 s; resolves once it has exited. */
export function stopChild(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(void children.delete(child));
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(timer);
      children.delete(child);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
/** Undone at the end, also after a failure or Ctrl-C: the temporary directory and the PostgreSQL database. */
export const cleanups: Array<() => Promise<void>> = [];

export async function cleanUp(): Promise<void> {
  for (const child of children) child.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0).reverse())
    await cleanup().catch((error: unknown) => process.stderr.write(`cleanup failed: ${String(error)}\n`));
}

/** Starts a child process and waits (bounded) until `readyPath` answers 2xx. */
export async function startProcess(
  name: string,
  command: string,
  args: string[],
  env: Record<string, string>,
  url: string,
  readyPath: string,
  headers: Record<string, string> = {},
): Promise<(() => Promise<void>) & { pid: number }> {
  // BENCH_STDOUT: a file the processes' standard output is added to (where `--trace-gc` writes); otherwise dropped.
  const stdout = process.env.BENCH_STDOUT ? openSync(process.env.BENCH_STDOUT, 'a') : 'ignore';
  let child: ChildProcess;
  try {
    child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', stdout, 'pipe'] });
  } finally {
    if (typeof stdout === 'number') closeSync(stdout);
  }
  children.add(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`${name} exited with ${child.exitCode} before it answered:\n${stderr}`);
    try {
      const response = await fetch(url + readyPath, { headers });
      await response.body?.cancel();
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${name} did not answer ${readyPath} within 90 s:\n${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const stop = () => stopChild(child);
  return Object.assign(stop, { pid: child.pid! });
}

/**
 * The Portkey gateway's command line (`@portkey-ai/gateway`, a dev dependency that benchmarks compare with; run it with
 * NODE_ENV=production, which turns its log console off). It has no option for its address and listens on every
 * interface, so a module given with `--import` binds its server to loopback.
 */
export function portkeyArguments(port: number): string[] {
  return ['--import', LOOPBACK_ONLY, join(root, PORTKEY_SERVER), `--port=${port}`, '--headless'];
}

export const PORTKEY_SERVER = 'node_modules/@portkey-ai/gateway/build/start-server.js';

const LOOPBACK_ONLY = `data:text/javascript,${encodeURIComponent(
  "import net from 'node:net'; const listen = net.Server.prototype.listen; net.Server.prototype.listen = function (...args) { if (typeof args[0] === 'number' && (args[1] === undefined || typeof args[1] === 'function')) args.splice(1, args[1] === undefined ? 1 : 0, '127.0.0.1'); return listen.apply(this, args); };",
)}`;

/**
 * The CPU time a process has used so far (user and system), in microseconds, from /proc/<pid>/stat (in clock ticks
 * of 10 ms), or undefined where it cannot be read.
 */
export function cpuMicros(pid: number): number | undefined {
  try {
    // The fields after the command name (which is in parentheses and may hold spaces): utime and stime are the 12th
    // and 13th of them.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return undefined;
  }
}

/** The resident set size of a process, in MB (Linux: /proc/<pid>/status), or undefined where it cannot be read. */
export function rssMegabytes(pid: number): number | undefined {
  try {
    const kilobytes = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kilobytes ? Math.round(Number(kilobytes) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A workspace with `keys` keys: its owner key and `keys - 1` keys of `role`; returns their secrets. Benchmarks rotate
 * over them so that no key nears its 600 requests a minute.
 */
export async function seedWorkspace(databaseUrl: string, keys: number, role: Role): Promise<string[]> {
  const storage = openStorage(databaseUrl);
  try {
    await migrate(storage.db, features);
    const { workspace, secret } = await createWorkspace(storage.db, {
      name: 'Benchmark workspace',
      region: 'eu',
      ownerEmail: 'owner@bench.example',
      keyName: 'Benchmark owner',
    });
    const secrets = [secret];
    await storage.db.transaction().execute(async (trx) => {
      for (let i = 1; i < keys; i++) {
        const created = await insertApiKey(trx, {
          workspaceId: workspace.id,
          name: `Benchmark key ${i}`,
          role,
          expiresAt: null,
          createdBy: null,
          now: new Date(),
        });
        secrets.push(created.secret);
      }
    });
    return secrets;
  } finally {
    await storage.close();
  }
}

/** Sign-in links of the seeded workspace's owner (seedWorkspace), each good for one session. */
export async function ownerSignInLinks(databaseUrl: string, baseUrl: string, count: number): Promise<string[]> {
  const storage = openStorage(databaseUrl);
  try {
    const workspace = await storage.db.selectFrom('workspaces').select('id').executeTakeFirstOrThrow();
    const links: string[] = [];
    for (let i = 0; i < count; i++) {
      const link = await createSignInLink(storage.db, {
        workspaceId: workspace.id,
        email: 'owner@bench.example',
        returnTo: null,
        baseUrl,
        now: new Date(),
      });
      links.push(link!.url);
    }
    return links;
  } finally {
    await storage.close();
  }
}

/** An SMTP server on loopback that takes every message and drops it, until the benchmark's clean-up; its URL. */
export async function smtpSink(): Promise<string> {
  const sink = await startSmtpSink();
  cleanups.push(() => sink.close());
  return sink.url;
}

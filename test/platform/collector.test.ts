// The server's collector flags (src/platform/collector.ts). Heap growth: after the collection that reduces memory once
// the server has started, V8 alone would run a full collection within a few megabytes of long-lived allocation; with
// the setting the old generation may double first. Marking on one core: a process that may run on one core only
// (`taskset`) marks its heap on the event loop's thread in many small steps, not in threads that take the core from it.
// An operator's own choice of either flag is kept. The flags V8 reads only when it makes the heap (no memory reducer)
// are on `npm start`'s command line. Each case runs in a process of its own, since V8's flags are the process's.
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';
import { COMMAND_LINE_FLAGS } from '../../src/platform/collector.ts';

const run = promisify(execFile);
const child = new URL('./fixtures/collector-child.ts', import.meta.url).pathname;

async function fullCollections(mode: 'growth' | 'growth-none', flags: string[] = []): Promise<number> {
  const { stdout } = await run(process.execPath, [...flags, child, mode], { timeout: 30_000 });
  return (JSON.parse(stdout) as { full: number }).full;
}

describe('heap growth', () => {
  test('with the setting, long-lived allocation of half the live heap runs no full collection; without, it does', async () => {
    expect(await fullCollections('growth')).toBe(0);
    expect(await fullCollections('growth-none')).toBeGreaterThanOrEqual(1);
  });

  test.each(['--heap-growing-percent=10', '--heap_growing_percent=10'])(
    "a process started with %s keeps it: the setting does not override the operator's",
    async (flag) => {
      expect(await fullCollections('growth', [flag])).toBeGreaterThanOrEqual(1);
    },
  );
});

const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0;

/** The most steps one marking took on the event loop's thread, from `--trace-gc`, in a process on core 0 alone. */
async function markingSteps(flags: string[] = []): Promise<number> {
  const { stdout } = await run('taskset', ['-c', '0', process.execPath, '--trace-gc', ...flags, child, 'marking'], {
    timeout: 60_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  expect(stdout).toContain('kept');
  const steps = [...stdout.matchAll(/in (\d+) steps since start of marking/g)].map((match) => Number(match[1]));
  expect(steps.length, stdout).toBeGreaterThan(0);
  return Math.max(...steps);
}

describe('marking on one core', () => {
  test('the flags: no concurrent marking for one core, unless the operator chose', async () => {
    const flags = async (operator: string[]) =>
      JSON.parse((await run(process.execPath, [...operator, child, 'flags'], { timeout: 30_000 })).stdout) as string[];
    expect(await flags([])).toContain('--no-concurrent-marking');
    // Another flag of the marking's is not a choice of it.
    expect(await flags(['--trace-concurrent-marking'])).toContain('--no-concurrent-marking');
    for (const operator of [['--concurrent-marking'], ['--no-concurrent-marking'], ['--no_concurrent_marking']])
      expect(await flags(operator)).not.toContain('--no-concurrent-marking');
  });

  test.skipIf(!hasTaskset)(
    "a process on one core marks on its event loop's thread in many small steps; with the operator's --concurrent-marking, V8's threads mark most of it",
    async () => {
      const tuned = await markingSteps();
      const concurrent = await markingSteps(['--concurrent-marking']);
      expect(tuned).toBeGreaterThanOrEqual(50);
      expect(concurrent, `tuned ${tuned}, concurrent ${concurrent}`).toBeLessThan(tuned / 2);
    },
    120_000,
  );
});

describe('flags on the command line', () => {
  test('npm start passes them, and this Node takes them (it refuses a V8 flag it does not know)', async () => {
    const scripts = (
      JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts;
    expect(scripts.start).toBe(`node ${COMMAND_LINE_FLAGS.join(' ')} src/main.ts`);
    const { stdout } = await run(process.execPath, [...COMMAND_LINE_FLAGS, '-p', '"started"'], { timeout: 30_000 });
    expect(stdout.trim()).toBe('started');
    await expect(run(process.execPath, ['--no-such-collector-flag', '-p', '0'], { timeout: 30_000 })).rejects.toThrow();
  });

  test("with them V8's memory reducer never acts after full collections; without them (V8's default) it does", async () => {
    // The reducer starts 100 ms after a full collection here instead of 8 s, and says what it does.
    const reducer = async (flags: readonly string[]) => {
      const watch = ['--gc-memory-reducer-start-delay-ms=100', '--trace-memory-reducer'];
      const { stdout } = await run(process.execPath, [...flags, ...watch, child, 'garbage'], { timeout: 60_000 });
      expect(stdout).toContain('kept');
      return stdout.split('\n').filter((line) => line.includes('Memory reducer'));
    };
    expect(await reducer(COMMAND_LINE_FLAGS)).toEqual([]);
    expect((await reducer([])).length).toBeGreaterThan(0);
  });
});

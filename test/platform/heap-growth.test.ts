// The server's heap growth (src/platform/heap-growth.ts): after the collection that reduces memory once the server has
// started, V8 alone would run a full collection within a few megabytes of long-lived allocation; with the setting the
// old generation may double first. Each case runs in a process of its own, since V8's flags are the process's.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';

const run = promisify(execFile);
const child = new URL('./fixtures/heap-growth-child.ts', import.meta.url).pathname;

async function fullCollections(setting: 'set' | 'none'): Promise<number> {
  const { stdout } = await run(process.execPath, [child, setting], { timeout: 30_000 });
  return (JSON.parse(stdout) as { full: number }).full;
}

describe('heap growth', () => {
  test('with the setting, long-lived allocation of half the live heap runs no full collection; without, it does', async () => {
    expect(await fullCollections('set')).toBe(0);
    expect(await fullCollections('none')).toBeGreaterThanOrEqual(1);
  });

  test.each(['--heap-growing-percent=10', '--heap_growing_percent=10'])(
    "a process started with %s keeps it: the setting does not override the operator's",
    async (flag) => {
      const { stdout } = await run(process.execPath, [flag, child, 'set'], { timeout: 30_000 });
      expect((JSON.parse(stdout) as { full: number }).full).toBeGreaterThanOrEqual(1);
    },
  );
});

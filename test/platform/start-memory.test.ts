// The memory the start used is given back once, at the first quiet moment after the start: not while a request is in
// flight or just came, not after the server stopped it (src/platform/start-memory.ts).
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, test } from 'vitest';
import { collectToReduceMemory, reclaimStartMemory } from '../../src/platform/start-memory.ts';

let server: Server | undefined;
afterEach(() => {
  server?.close();
  server?.closeAllConnections();
  server = undefined;
});

/** A server that holds each request until `release` is called. */
async function holdingServer(): Promise<{ url: string; release(): void; arrived: Promise<unknown> }> {
  const held: ServerResponse[] = [];
  server = createServer((_req, res) => void held.push(res)).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    release: () => {
      for (const res of held.splice(0)) res.end('ok');
    },
    arrived: once(server, 'request'),
  };
}

describe('giving back the memory of the start', () => {
  test('collects nothing before ready', async () => {
    await holdingServer();
    let collected = 0;
    const reclaim = reclaimStartMemory(server!, { idleMs: 10, collect: () => collected++ });
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(collected).toBe(0);
    reclaim.stop();
  });

  test('collects once the server has been quiet for a moment', async () => {
    await holdingServer();
    let collected = 0;
    const reclaim = reclaimStartMemory(server!, { idleMs: 20, collect: () => collected++ });
    reclaim.ready();
    expect(await reclaim.done).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(collected).toBe(1);
  });

  test('waits while a request is in flight, one that came before ready too, and for a quiet moment after it', async () => {
    const { url, release, arrived } = await holdingServer();
    let collectedAt: number | undefined;
    const reclaim = reclaimStartMemory(server!, { idleMs: 30, collect: () => (collectedAt = performance.now()) });
    const answer = fetch(url);
    await arrived;
    reclaim.ready();
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(collectedAt).toBeUndefined();
    const releasedAt = performance.now();
    release();
    await (await answer).text();
    expect(await reclaim.done).toBe(true);
    // The quiet moment counts from the answer's end, which is after its release.
    expect(collectedAt! - releasedAt).toBeGreaterThanOrEqual(25);
  });

  test('collects nothing once stopped', async () => {
    await holdingServer();
    let collected = 0;
    const reclaim = reclaimStartMemory(server!, { idleMs: 20, collect: () => collected++ });
    reclaim.ready();
    reclaim.stop();
    expect(await reclaim.done).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(collected).toBe(0);
  });

  test('the collection leaves the exposure of the garbage collector to new contexts as it found it', () => {
    const exposedBefore = runInNewContext('typeof gc');
    collectToReduceMemory();
    expect(runInNewContext('typeof gc')).toBe(exposedBefore);
    // Exposed by someone else before (the flag set at run time): still exposed after.
    setFlagsFromString('--expose-gc');
    try {
      collectToReduceMemory();
      expect(runInNewContext('typeof gc')).toBe('function');
    } finally {
      setFlagsFromString(exposedBefore === 'function' ? '--expose-gc' : '--no-expose-gc');
    }
  });
});

// While another workspace is being served, a workspace's large bodies take at most about half of the event loop: its
// next turn begins only after a pause as long as the loop was busy during its last one. Alone on the server, its turns
// follow each other at once. The turns' middleware in an Express app of its own, whose handler keeps the event loop
// busy for a while as parsing a large body does.
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import express from 'express';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { locals } from '../../src/platform/context.ts';
import { LARGE_BODY_BYTES, largeBodyTurns } from '../../src/platform/large-bodies.ts';

const BUSY_MS = 60;
const body = new Uint8Array(LARGE_BODY_BYTES + 1024).fill(0x78);

describe('the turns of a workspace that sends large bodies back to back', () => {
  let server: ReturnType<ReturnType<typeof express>['listen']>;
  let url: string;
  /** When each request's turn began and ended (its handler's start, the turn's end), by its name. */
  const turns = new Map<string, { began: number; ended: number }>();

  beforeAll(async () => {
    const app = express();
    const { take, give } = largeBodyTurns();
    app.use((req, res, next) => {
      locals(res).caller = { workspace: { id: req.get('x-workspace')! } } as never;
      next();
    });
    app.use(take);
    app.post(
      '/work',
      (req, _res, next) => {
        const began = performance.now();
        // Reads the body, then holds the event loop, as parsing and checking a large one does.
        req.resume();
        req.once('end', () => {
          while (performance.now() - began < BUSY_MS);
          turns.set(req.get('x-name')!, { began, ended: performance.now() });
          next();
        });
      },
      give,
      (_req, res) => {
        res.json({ ok: true });
      },
    );
    app.post('/small', (_req, res) => {
      res.json({ ok: true });
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const send = (path: string, workspace: string, name: string, payload: Uint8Array<ArrayBuffer>) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'x-workspace': workspace, 'x-name': name, 'content-type': 'application/octet-stream' },
      body: payload,
    }).then((response) => response.status);

  test('alone, the next turn follows the last one; while another workspace is served, it waits as long as the last one kept the loop busy', async () => {
    expect(await Promise.all([send('/work', 'ws_a', 'alone 1', body), send('/work', 'ws_a', 'alone 2', body)])).toEqual(
      [200, 200],
    );
    const [first, second] = [turns.get('alone 1')!, turns.get('alone 2')!].sort((x, y) => x.began - y.began);
    expect(second!.began).toBeGreaterThanOrEqual(first!.ended);

    // Another workspace's request comes: from now on, for a second, ws_b is being served.
    expect(await send('/small', 'ws_b', 'other', new TextEncoder().encode('{}'))).toBe(200);
    expect(
      await Promise.all([send('/work', 'ws_c', 'shared 1', body), send('/work', 'ws_c', 'shared 2', body)]),
    ).toEqual([200, 200]);
    const [before, after] = [turns.get('shared 1')!, turns.get('shared 2')!].sort((x, y) => x.began - y.began);
    // The pause is at least the time the handler held the loop (a lower bound: a busy machine only makes it longer).
    expect(after!.began - before!.ended).toBeGreaterThanOrEqual(BUSY_MS * 0.9);
  });
});

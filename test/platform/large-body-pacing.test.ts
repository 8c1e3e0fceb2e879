// While another workspace is being served, a workspace's large bodies take at most about half of the event loop: its
// next turn begins only after a pause as long as the loop was busy during its last one. Alone on the server, its turns
// follow each other at once. The turns' middleware in an Express app of its own, whose handler keeps the event loop
// busy for a while as parsing a large body does; the pauses it asks for are held by the test until it lets them go.
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import express from 'express';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { locals } from '../../src/platform/context.ts';
import { LARGE_BODY_BYTES, largeBodyTurns } from '../../src/platform/large-bodies.ts';
import { eventually } from '../support/expect.ts';

const BUSY_MS = 60;
const body = new Uint8Array(LARGE_BODY_BYTES + 1024).fill(0x78);

describe('the turns of a workspace that sends large bodies back to back', () => {
  let server: ReturnType<ReturnType<typeof express>['listen']>;
  let url: string;
  /** The order in which the requests' turns began and ended, by their names. */
  const events: string[] = [];
  /** The pauses the turns asked for, each with what ends it. */
  const pauses: Array<{ ms: number; resume: () => void }> = [];

  beforeAll(async () => {
    const app = express();
    const { take, give } = largeBodyTurns({ wait: (ms, resume) => pauses.push({ ms, resume }) });
    app.use((req, res, next) => {
      locals(res).caller = { workspace: { id: req.get('x-workspace')! } } as never;
      next();
    });
    app.use(take);
    app.post(
      '/work',
      (req, _res, next) => {
        events.push(`${req.get('x-name')} began`);
        // Reads the body, then holds the event loop, as parsing and checking a large one does.
        req.resume();
        req.once('end', () => {
          const started = performance.now();
          while (performance.now() - started < BUSY_MS);
          events.push(`${req.get('x-name')} ended`);
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

  test('alone, the next turn follows the last one at once', async () => {
    expect(await Promise.all([send('/work', 'ws_a', 'alone 1', body), send('/work', 'ws_a', 'alone 2', body)])).toEqual(
      [200, 200],
    );
    expect(pauses).toEqual([]);
    const first = events.indexOf('alone 1 began') < events.indexOf('alone 2 began') ? 'alone 1' : 'alone 2';
    const second = first === 'alone 1' ? 'alone 2' : 'alone 1';
    expect(events.indexOf(`${second} began`)).toBeGreaterThan(events.indexOf(`${first} ended`));
  });

  test('while another workspace is served, the next turn waits as long as the last one kept the loop busy', async () => {
    // Another workspace's request comes: for the next second, ws_b is being served.
    expect(await send('/small', 'ws_b', 'other', new TextEncoder().encode('{}'))).toBe(200);
    const answers = Promise.all([send('/work', 'ws_c', 'shared 1', body), send('/work', 'ws_c', 'shared 2', body)]);
    await eventually(
      async () => pauses.length,
      (count) => count === 1,
    );
    // The pause is at least the time the handler held the loop, and the next turn has not begun.
    expect(pauses[0]!.ms).toBeGreaterThanOrEqual(BUSY_MS);
    expect(events.filter((event) => event.startsWith('shared') && event.endsWith('began'))).toHaveLength(1);
    pauses[0]!.resume();
    expect(await answers).toEqual([200, 200]);
    expect(events.filter((event) => event.startsWith('shared')).map((event) => event.split(' ')[2])).toEqual([
      'began',
      'ended',
      'began',
      'ended',
    ]);
  });
});

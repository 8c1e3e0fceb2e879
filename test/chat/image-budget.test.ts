// Image bytes are admitted, then bounded: a request's images are read only once the rest of it is known to be good
// (its project), within 50 MB in all, and within the process's budget of image bytes (IMAGE_BYTES_IN_FLIGHT), which
// a request takes before any image is read and gives back with its answer; over the budget, 503 images_busy with
// Retry-After and nothing fetched.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { transferableSymbol, valueSymbol } from 'piscina';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ImageEntry } from '../../src/features/engine/image-order.ts';
import { type ImagesInput, readImagesInOrder } from '../../src/features/engine/image-worker.ts';
import { IMAGE_LIMITS } from '../../src/features/engine/images.ts';
import { expectProblem } from '../support/expect.ts';
import { png } from '../support/images.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const PNG = png(2, 2);
const MB = 1024 * 1024;

/** Serves `/small.png` and `/<n>mb.png` (n MB of PNG-typed bytes), and lists what was asked. */
async function startImageServer(): Promise<{ url: string; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    const size = /^\/(\d+)mb\.png$/.exec(req.url ?? '');
    if (req.url === '/small.png') res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
    else if (size) {
      res.on('error', () => {});
      const body = Buffer.alloc(Number(size[1]) * MB);
      body.set(PNG);
      res.writeHead(200, { 'content-type': 'image/png' }).end(body);
    } else res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const withImages = (...urls: string[]) => ({
  model: 'sandbox-writer',
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in these images?' },
        ...urls.map((url) => ({ type: 'image_url', image_url: { url } })),
      ],
    },
  ],
});

describe('image bytes of requests', () => {
  let images: Awaited<ReturnType<typeof startImageServer>>;
  let roomy: TestServer;
  let tight: TestServer;
  beforeAll(async () => {
    images = await startImageServer();
    [roomy, tight] = await Promise.all([
      startTestServer({ env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } }),
      // Room for small data: images, not for one image to fetch (20 MB).
      startTestServer({ env: { WEBHOOKS_ALLOW_LOOPBACK: 'true', IMAGE_BYTES_IN_FLIGHT: String(MB) } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([roomy?.close(), tight?.close(), images?.close()]);
  });

  test('over the process budget: 503 images_busy with Retry-After, and nothing fetched', async () => {
    const before = images.requests.length;
    const answer = await tight.call('POST', '/v1/chat/completions', { body: withImages(`${images.url}/small.png`) });
    expectProblem(answer, 503, 'images_busy');
    expect(answer.headers.get('retry-after')).toBe(String(IMAGE_LIMITS.retryAfterSeconds));
    expect(answer.body.error).toMatchObject({ type: 'server_error', code: 'images_busy' });
    expect(images.requests.length).toBe(before);
    const responses = await tight.call('POST', '/v1/responses', {
      body: {
        model: 'sandbox-writer',
        input: [{ role: 'user', content: [{ type: 'input_image', image_url: `${images.url}/small.png` }] }],
      },
    });
    expectProblem(responses, 503, 'images_busy');
    expect(images.requests.length).toBe(before);
  });

  test('a data: image within the budget is read, and its bytes are given back with the answer', async () => {
    const budget = tight.platform.services.engine.imageBudget;
    const dataUrl = `data:image/png;base64,${Buffer.from(PNG).toString('base64')}`;
    for (let i = 0; i < 3; i++) {
      const answer = await tight.call('POST', '/v1/chat/completions', { body: withImages(dataUrl) });
      expect(answer.status, answer.text).toBe(200);
    }
    // Given back when each response closed: bounded wait for the last one's close event.
    for (let i = 0; i < 50 && budget.available !== budget.totalBytes; i++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(budget.available).toBe(budget.totalBytes);
  });

  test('a request whose project is unknown is refused before any image is fetched', async () => {
    const before = images.requests.length;
    const answer = await roomy.call('POST', '/v1/chat/completions', {
      body: { ...withImages(`${images.url}/small.png`), project_id: 'prj_01JD1N4Q8R2S5T7V9W3X6Y0Z1A' },
    });
    expect(answer.status).toBe(404);
    expect(images.requests.length).toBe(before);
  });

  test('a caller whose spend limit is spent is refused with 402 before any image is fetched', async () => {
    const key = await roomy.createKey('editor');
    const limit = await roomy.call('POST', '/v1/spend-limits', {
      body: { scope: { type: 'api_key', id: key.id }, amount_usd: 0.000001, period: 'day' },
    });
    expect(limit.status, limit.text).toBe(201);
    const spending = await roomy.call('POST', '/v1/chat/completions', {
      key: key.secret,
      body: { model: 'sandbox-writer', messages: [{ role: 'user', content: 'Announce the spring sale.' }] },
    });
    expect(spending.status, spending.text).toBe(200);
    const before = images.requests.length;
    const chat = await roomy.call('POST', '/v1/chat/completions', {
      key: key.secret,
      body: withImages(`${images.url}/small.png`),
    });
    expectProblem(chat, 402, 'spend_limit_reached');
    const responses = await roomy.call('POST', '/v1/responses', {
      key: key.secret,
      body: {
        model: 'sandbox-writer',
        input: [{ role: 'user', content: [{ type: 'input_image', image_url: `${images.url}/small.png` }] }],
      },
    });
    expectProblem(responses, 402, 'spend_limit_reached');
    expect(images.requests.length).toBe(before);
  });

  test("a request's images are 50 MB in all at most: the image that passes it is refused, the next not fetched", async () => {
    const before = images.requests.length;
    const answer = await roomy.call('POST', '/v1/chat/completions', {
      body: withImages(
        `${images.url}/19mb.png`,
        `${images.url}/19mb.png`,
        `${images.url}/19mb.png`,
        `${images.url}/small.png`,
      ),
    });
    expectProblem(answer, 422, 'image_unreadable');
    expect(answer.body.errors[0]).toMatchObject({
      pointer: '/messages/0/content/3',
      detail: "the request's images are larger than 50 MB in all",
    });
    expect(images.requests.slice(before)).toEqual(['/19mb.png', '/19mb.png', '/19mb.png']);
    const budget = roomy.platform.services.engine.imageBudget;
    expect(budget.available).toBe(budget.totalBytes);
  });

  test("the image thread sends a request's fetched images only once all of them, data: URLs included, fit", async () => {
    // readImagesInOrder is what the image pool's thread runs; here it runs in the test's thread, which shows what it hands
    // back: what piscina transfers to the event loop's thread, and what it sends as a plain message.
    const input = (...entries: ImageEntry[]): ImagesInput => ({
      entries,
      allowPrivateNetworks: true,
      maxBytes: IMAGE_LIMITS.maxBytes,
      totalBytes: IMAGE_LIMITS.perRequestBytes,
      timeoutMs: IMAGE_LIMITS.timeoutMs,
      headers: {},
    });
    const url = (path: string) => ({ url: `${images.url}${path}` });
    const before = images.requests.length;
    const refusals = [
      await readImagesInOrder(input(url('/19mb.png'), url('/19mb.png'), url('/19mb.png'), url('/small.png'))),
      await readImagesInOrder(input(url('/19mb.png'), url('/19mb.png'), { dataBytes: 19 * MB }, url('/small.png'))),
      await readImagesInOrder(input(url('/small.png'), url('/missing.png'), url('/small.png'))),
      await readImagesInOrder(input(url('/19mb.png'), { refusal: { failure: 'data_url_base64' } }, url('/small.png'))),
    ];
    expect(refusals).toEqual([
      { index: 2, refusal: { failure: 'too_large', ofAll: true } },
      { index: 2, refusal: { failure: 'too_large', ofAll: true } },
      { index: 1, refusal: { failure: 'status', status: 404 } },
      { index: 1, refusal: { failure: 'data_url_base64' } },
    ]);
    // A refusal carries no bytes, and nothing after the refused image is fetched.
    for (const refusal of refusals) expect(transferableSymbol in refusal).toBe(false);
    expect(images.requests.slice(before)).toEqual([
      ...['/19mb.png', '/19mb.png', '/19mb.png'],
      ...['/19mb.png', '/19mb.png'],
      ...['/small.png', '/missing.png'],
      '/19mb.png',
    ]);

    const movable = (await readImagesInOrder(
      input(url('/small.png'), { dataBytes: 10 }, url('/1mb.png')),
    )) as unknown as Record<symbol, unknown>;
    const read = movable[valueSymbol] as { fetched: Array<{ mediaType: string; bytes: Uint8Array } | null> };
    expect(read.fetched.map((image) => image && [image.mediaType, image.bytes.length])).toEqual([
      ['image/png', PNG.length],
      null,
      ['image/png', MB],
    ]);
    // Each fetched image is a buffer of its own, moved whole: posted with the transfer list, none is left here.
    const buffers = movable[transferableSymbol] as ArrayBuffer[];
    expect(buffers).toHaveLength(2);
    expect(buffers[0]).toBe(read.fetched[0]!.bytes.buffer);
    expect(buffers[1]).toBe(read.fetched[2]!.bytes.buffer);
    const channel = new MessageChannel();
    channel.port1.postMessage(read, buffers);
    channel.port1.close();
    expect(buffers.map((buffer) => buffer.byteLength)).toEqual([0, 0]);
  });

  test('a bad data: URL after images by URL is refused at its place, and what was fetched before it is let go', async () => {
    const budget = roomy.platform.services.engine.imageBudget;
    const answer = await roomy.call('POST', '/v1/chat/completions', {
      body: withImages(`${images.url}/small.png`, 'data:image/png;base64,not base64!', `${images.url}/small.png`),
    });
    expectProblem(answer, 422, 'image_unreadable');
    expect(answer.body.errors[0]).toMatchObject({
      pointer: '/messages/0/content/2',
      detail: 'its data: URL is not valid base64',
    });
    expect(budget.available).toBe(budget.totalBytes);
  });
});

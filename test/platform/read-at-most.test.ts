// readAtMost (platform/url-guard.ts) reads a fetched body up to a bound, chunk by chunk into one buffer: whatever the
// chunks and the declared length (right, too small, too large, absent), the bytes are the body's first ones and
// `truncated` says whether there was more; and a body that is there at once (read chunk after chunk as microtasks)
// lets the event loop turn while it is read.
import { describe, expect, test } from 'vitest';
import { READ_BYTES_PER_TURN, readAtMost } from '../../src/platform/url-guard.ts';

function body(chunks: number[]): { stream: ReadableStream<Uint8Array>; bytes: Uint8Array } {
  const total = chunks.reduce((sum, n) => sum + n, 0);
  const bytes = Uint8Array.from({ length: total }, (_, i) => (i * 7 + 3) & 0xff);
  let at = 0;
  let next = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next === chunks.length) return controller.close();
      const length = chunks[next++]!;
      controller.enqueue(bytes.slice(at, at + length));
      at += length;
    },
  });
  return { stream, bytes };
}

describe('reading a body up to a bound', () => {
  const chunks = [1, 65_536, 3, 200_000, 70_000, 17];
  const total = chunks.reduce((sum, n) => sum + n, 0);

  test.each([
    ['no declared length', undefined],
    ['the right declared length', total],
    ['a declared length too small', 10],
    ['a declared length too large', total * 10],
    ['a declared length that is not a number', Number.NaN],
  ])('%s: the whole body under the bound, its first bytes over it', async (_name, declared) => {
    for (const max of [total + 1, total, total - 1, 70_000, 65_537, 1]) {
      const { stream, bytes } = body(chunks);
      const read = await readAtMost(stream, max, declared);
      expect(Buffer.from(read.bytes).equals(Buffer.from(bytes.subarray(0, Math.min(max, total)))), `max ${max}`).toBe(
        true,
      );
      expect(read.truncated, `max ${max}`).toBe(max < total);
    }
  });

  test('a body that is all there at once lets the event loop turn every READ_BYTES_PER_TURN bytes', async () => {
    const chunk = 64 * 1024;
    const count = (8 * READ_BYTES_PER_TURN) / chunk;
    const { stream, bytes } = body(Array.from({ length: count }, () => chunk));
    let turns = 0;
    let reading = true;
    const turn = () => {
      if (!reading) return;
      turns++;
      setImmediate(turn);
    };
    setImmediate(turn);
    const read = await readAtMost(stream, bytes.length + 1);
    reading = false;
    expect(Buffer.from(read.bytes).equals(Buffer.from(bytes))).toBe(true);
    expect(turns).toBeGreaterThanOrEqual(7);
  });

  test('an empty body is empty and whole', async () => {
    const read = await readAtMost(body([]).stream, 100, 0);
    expect({ length: read.bytes.length, truncated: read.truncated }).toEqual({ length: 0, truncated: false });
  });
});

// An asset's If-None-Match header is read in time linear in it: splitting it at commas read a run of white space again
// from each of its characters when no comma followed. The header is at most Node's 16 KiB of headers.
import { expect, test } from 'vitest';
import { sendAsset } from '../../src/platform/assets.ts';

function send(ifNoneMatch: string): number {
  let status = 200;
  const headers = new Map<string, unknown>();
  const req = { get: (name: string) => (name === 'if-none-match' ? ifNoneMatch : undefined) };
  const res = {
    setHeader: (name: string, value: unknown) => headers.set(name, value),
    getHeader: (name: string) => headers.get(name),
    status(code: number) {
      status = code;
      return this;
    },
    end: () => undefined,
  };
  sendAsset(req as never, res as never, { body: Buffer.from('x'), etag: '"v1"', contentType: 'text/plain' } as never);
  return status;
}

test('a header of white space without a comma after it, and one listing the tag among spaces', () => {
  expect(send(`${'\t'.repeat(16_000)}x`)).toBe(200);
  expect(send(`"v0"${' '.repeat(8_000)},${' '.repeat(8_000)}"v1"`)).toBe(304);
});

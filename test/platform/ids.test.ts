// Identifiers: the contract's form (prefix, then a ULID in Crockford base32), strictly increasing within a millisecond
// and across them (cursor pagination orders by id), and random parts that use the whole alphabet evenly (the random
// bytes come from a pool refilled from the CSPRNG, not one system call per character).
import { describe, expect, test } from 'vitest';
import { newId } from '../../src/platform/ids.ts';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

describe('newId', () => {
  test('ids of one millisecond and of the next are well-formed and strictly increasing', () => {
    const now = new Date('2026-11-25T10:00:00.000Z');
    const ids = [
      ...Array.from({ length: 5000 }, () => newId('req', now)),
      ...Array.from({ length: 5000 }, () => newId('req', new Date(now.getTime() + 1))),
    ];
    for (const id of ids) expect(id).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
  });

  test('the random part spreads over the whole alphabet (64,000 fresh draws)', () => {
    // A later millisecond for every id than any before (also the other tests'), so that each random part is freshly
    // drawn: within a millisecond, or for an earlier one, a monotonic ULID is the previous one plus one.
    const counts = new Map<string, number>();
    const draws = 64_000;
    for (let i = 0; i < draws; i++) {
      const random = newId('evt', new Date(4_000_000_000_000 + i * 1000)).slice(4 + 10);
      for (const char of random.slice(0, 4)) counts.set(char, (counts.get(char) ?? 0) + 1);
    }
    expect([...counts.keys()].sort().join('')).toBe(CROCKFORD);
    const expected = (draws * 4) / 32;
    // Each character within 5% of its expected count (8,000 ± 400; the standard deviation is about 88).
    for (const count of counts.values()) expect(Math.abs(count - expected)).toBeLessThan(expected * 0.05);
  });

  test('chat completion ids keep OpenAI’s form', () => {
    expect(newId('chatcmpl')).toMatch(/^chatcmpl-[0-9A-HJKMNP-TV-Z]{26}$/);
  });
});

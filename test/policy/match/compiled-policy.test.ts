// A whole text against a policy (src/features/policy/match/compiled-policy.ts): code-point offsets, block and
// redact, and the holdback.
import { describe, expect, test } from 'vitest';
import { compilePolicy } from '../../../src/features/policy/match.ts';
import { personal, phrases, regex } from './rules.ts';

describe('scan and apply', () => {
  test('scan: sorted by start then longer first, overlaps removed (earlier, then longer, kept)', () => {
    const policy = compilePolicy([
      phrases(['beta gamma'], 'redact'),
      regex('alpha beta', 'redact', { id: 'r1' }),
      regex('gamma delta', 'redact', { id: 'r2' }),
      regex('delta', 'redact', { id: 'r3' }),
    ]);
    expect(policy.scan('alpha beta gamma delta').map((m) => [m.ruleId, m.start, m.end])).toEqual([
      ['r1', 0, 10],
      ['r2', 11, 22],
    ]);
  });

  test('apply redacts right to left with each rule’s replacement (default [redacted]), offsets of the original', () => {
    const policy = compilePolicy([
      personal(['email', 'payment_card']),
      phrases(['world-class'], 'redact', { replacement: '***' }),
    ]);
    const text = '😀 Write to jane.doe@example.com or pay with 4111 1111 1111 1111; world–class!';
    const result = policy.apply(text);
    expect(result.text).toBe('😀 Write to [redacted] or pay with [redacted]; ***!');
    expect(result.blocked).toBeNull();
    expect(result.redactions.map((m) => [m.start, m.matchedText])).toEqual([
      [11, 'jane.doe@example.com'],
      [44, '4111 1111 1111 1111'],
      [65, 'world–class'],
    ]);
    expect(compilePolicy([]).apply(text)).toEqual({ text, blocked: null, redactions: [] });
  });

  test('apply: any match of a block rule blocks (the first one), even one overlapping a redaction', () => {
    const policy = compilePolicy([regex('secret \\w+', 'redact'), phrases(['project falcon', 'launch date'])]);
    const result = policy.apply('The secret project falcon has a launch date.');
    expect(result.blocked).toMatchObject({
      matchedText: 'project falcon',
      start: 11,
      action: 'block',
      ruleId: 'voice.banned_phrases',
    });
    expect(result.redactions).toEqual([]);
  });
});

describe('holdback', () => {
  test('per kind, and the maximum over the rules', () => {
    expect(compilePolicy([]).holdback).toBe(0);
    expect(compilePolicy([phrases(['game-changer', 'art'])]).holdback).toBe(2 * 12 + 8);
    expect(compilePolicy([personal(['payment_card'])]).holdback).toBe(19 + 18 + 2);
    expect(compilePolicy([personal(['phone'])]).holdback).toBe(37);
    expect(compilePolicy([personal(['email'])]).holdback).toBe(347);
    // A bounded regex: its longest match plus one (an assertion after it reads one more); unbounded: 256.
    expect(compilePolicy([regex('ACME-\\d{4}')]).holdback).toBe(10);
    expect(compilePolicy([regex('\\bACME-(?:\\d{4}|[a-z]{2,6})\\b')]).holdback).toBe(12);
    expect(compilePolicy([regex('\\bACME-\\d+')]).holdback).toBe(256);
    expect(compilePolicy([regex('ACME-\\d{4}'), phrases(['x'])]).holdback).toBe(10);
  });
});

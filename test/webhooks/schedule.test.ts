// The retry schedule is written once, in src/features/webhooks/schedule.ts. The AsyncAPI document restates it as a
// table for readers, and the guide includes it at build time: both must show exactly the code's table.
import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { MAX_ATTEMPTS, nextAttemptAt, RETRY_WAITS_S, scheduleTable } from '../../src/features/webhooks/schedule.ts';

const asyncapi = JSON.parse(readFileSync(new URL('../../generated/asyncapi.json', import.meta.url), 'utf8')) as {
  info: { description: string };
};
const guide = readFileSync(new URL('../../docs/guides/receiving-webhooks.md', import.meta.url), 'utf8');

test('the schedule is 24 attempts: 10 s growing ×1.87 per attempt, capped at 6 h, about 71 h in all', () => {
  expect(RETRY_WAITS_S).toHaveLength(MAX_ATTEMPTS - 1);
  expect(RETRY_WAITS_S.slice(0, 4)).toEqual([10, 19, 35, 65]);
  expect(Math.max(...RETRY_WAITS_S)).toBe(6 * 3600);
  const total = RETRY_WAITS_S.reduce((sum, wait) => sum + wait, 0);
  expect(total).toBeGreaterThan(70 * 3600);
  expect(total).toBeLessThan(72 * 3600);
});

test('the AsyncAPI document shows exactly the table of the code', () => {
  const rows = asyncapi.info.description.split('\n').filter((line) => line.startsWith('|'));
  expect(rows.join('\n')).toBe(scheduleTable());
});

test('the guide includes the table of the code (expanded by the docs build)', () => {
  expect(guide).toContain('<!-- include: retry-schedule -->');
});

test('jitter keeps every retry within ±5 % of its wait, and there is none after the 24th attempt', () => {
  const ended = new Date('2026-11-21T00:00:00.000Z');
  RETRY_WAITS_S.forEach((wait, i) => {
    const earliest = nextAttemptAt(i + 1, ended, () => 0)!.getTime() - ended.getTime();
    const latest = nextAttemptAt(i + 1, ended, () => 0.999_999)!.getTime() - ended.getTime();
    expect(earliest).toBe(Math.round(wait * 1000 * 0.95));
    expect(latest).toBeLessThanOrEqual(Math.round(wait * 1000 * 1.05));
    expect(latest).toBeGreaterThan(wait * 1000);
  });
  expect(nextAttemptAt(MAX_ATTEMPTS, ended)).toBeNull();
});

// The retry schedule of DESIGN.md, written once: 24 attempts over about 72 hours, the first at once, then waits that
// start at 10 s and grow ×1.87 per attempt up to 6 h, each with a jitter of at most ±5 %. The AsyncAPI document and
// docs/webhooks.md show this table; test/webhooks/schedule.test.ts fails when they drift apart.

export const MAX_ATTEMPTS = 24;
export const JITTER = 0.05;

const FIRST_WAIT_S = 10;
const GROWTH = 1.87;
const CAP_S = 6 * 3600;

/**
 * `RETRY_WAITS_S[n - 1]`: the wait, in seconds, between the end of attempt `n` and the start of attempt `n + 1`
 * (before jitter), for n = 1 … 23.
 */
export const RETRY_WAITS_S: readonly number[] = Array.from({ length: MAX_ATTEMPTS - 1 }, (_, i) =>
  Math.min(CAP_S, Math.round(FIRST_WAIT_S * GROWTH ** i)),
);

/**
 * When attempt `attempt + 1` is due after attempt `attempt` failed and ended at `endedAt`; `null` when `attempt`
 * was the last. `random` (0 ≤ r < 1) picks the jitter.
 */
export function nextAttemptAt(attempt: number, endedAt: Date, random: () => number = Math.random): Date | null {
  if (attempt >= MAX_ATTEMPTS) return null;
  const wait = RETRY_WAITS_S[attempt - 1]! * 1000;
  const jitter = 1 + (random() * 2 - 1) * JITTER;
  return new Date(endedAt.getTime() + Math.round(wait * jitter));
}

/** `1 h 27 min 9 s`, `19 s`: how the docs write a duration. */
export function formatDuration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const min = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return [h ? `${h} h` : '', min ? `${min} min` : '', s || (!h && !min) ? `${s} s` : ''].filter(Boolean).join(' ');
}

/** The schedule as the Markdown table of the docs: attempt, wait after the previous attempt ended, time since the first. */
export function scheduleTable(): string {
  const rows = [
    '| attempt | waits after the previous attempt ended | since the first attempt, about |',
    '|---|---|---|',
    '| 1 | at once, when the event happens | 0 |',
  ];
  let total = 0;
  RETRY_WAITS_S.forEach((wait, i) => {
    total += wait;
    rows.push(`| ${i + 2} | ${formatDuration(wait)} | ${formatDuration(total)} |`);
  });
  return rows.join('\n');
}

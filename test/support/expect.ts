// Small assertions and waits the server and webhook suites share.
import { expect } from 'vitest';
import type { Answer } from './server.ts';

/** The answer is a problem document with this status and stable `code`. */
export function expectProblem(answer: Answer, status: number, code: string): void {
  expect({ status: answer.status, code: answer.body?.code }).toEqual({ status, code });
}

/** Polls until `check` accepts the value, at most `timeoutMs`. */
export async function eventually<T>(
  read: () => Promise<T>,
  check: (value: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

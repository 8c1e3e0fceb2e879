// Time comes from a clock that tests can replace (key rotation grace, expiry, retention).
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that stands still until moved; for tests. */
export class ManualClock implements Clock {
  #now: number;
  constructor(start: Date | string = new Date()) {
    this.#now = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.#now);
  }
  advance(ms: number): void {
    this.#now += ms;
  }
  set(to: Date | string): void {
    this.#now = new Date(to).getTime();
  }
}

/** ISO 8601 UTC with milliseconds: the one timestamp format of the API and of the database. */
export function iso(date: Date): string {
  return date.toISOString();
}

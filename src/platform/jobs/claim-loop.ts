// The loop every database-driven worker runs (the job runner, the webhook delivery worker): claim due work with a
// lease, run each claimed item, claim again while there is more, wake at once when work is committed (notify.ts)
// and every `pollMs` for work that fell due (retries, a crashed worker's leases, other SQLite processes), and on
// stop, claim nothing more and wait for what is in flight. What "due", "claim" and "run" mean is the worker's.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { DatabaseKind } from '../../storage/database.ts';
import { iso } from '../clock.ts';
import { outsideTraces } from '../telemetry.ts';
import { listenForWork } from './notify.ts';

/** What every background worker of a process offers the server and `npm run worker`. */
export interface BackgroundWorker {
  /** Names it in logs and in `RunningServer.workers` (`webhook-delivery`, `jobs`). */
  readonly name: string;
  start(): Promise<void>;
  /** Looks for due work now. */
  wake(): void;
  /** Claims nothing more, then waits for the work in flight to end. */
  stop(): Promise<void>;
}

export interface ClaimLoopOptions<Item> {
  name: string;
  kind: DatabaseKind;
  databaseUrl: string;
  /** The notification channel of this work (notifyOnCommit). */
  channel: string;
  logger: Logger;
  /** Items in flight at most. */
  concurrency: number;
  pollMs: number;
  /** Leases up to `limit` due items to this worker, in as few round trips as it can. */
  claim(limit: number): Promise<Item[]>;
  /**
   * Runs one claimed item. It may return the next item, already leased to this worker, to run at once in its place
   * (an ordered queue's next); `stopping()` tells it not to lease one.
   */
  run(item: Item, stopping: () => boolean): Promise<Item | undefined>;
  /** Log fields that identify an item whose run threw. */
  describe(item: Item): Record<string, unknown>;
}

export class ClaimLoop<Item> implements BackgroundWorker {
  readonly name: string;
  readonly #options: ClaimLoopOptions<Item>;
  readonly #inFlight = new Set<Promise<void>>();
  #cycle: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  #poll: NodeJS.Timeout | undefined;
  #stopListening: (() => Promise<void>) | undefined;

  constructor(options: ClaimLoopOptions<Item>) {
    this.name = options.name;
    this.#options = options;
  }

  async start(): Promise<void> {
    const { kind, databaseUrl, channel, logger, pollMs } = this.#options;
    this.#stopListening = await listenForWork(kind, databaseUrl, channel, logger, () => this.wake());
    this.#poll = setInterval(() => this.wake(), pollMs);
    this.#poll.unref();
    this.wake();
  }

  /** Looks for due work now (coalesced: a wake during a look makes it look once more). */
  wake(): void {
    if (this.#stopped) return;
    if (this.#cycle) {
      this.#again = true;
      return;
    }
    this.#cycle = outsideTraces(() => this.#run()).finally(() => {
      this.#cycle = undefined;
      // A wake that came after the last look had decided to end is not lost.
      if (this.#again) this.wake();
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#poll);
    await this.#stopListening?.();
    await this.#cycle;
    // A finishing item may hand on to the next of its queue only while not stopping, so this set only shrinks.
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
  }

  async #run(): Promise<void> {
    try {
      do {
        this.#again = false;
        const free = this.#options.concurrency - this.#inFlight.size;
        if (free <= 0) return; // a finishing item wakes the loop
        const claimed = await this.#options.claim(free);
        for (const item of claimed) this.#dispatch(item);
        if (claimed.length === free) this.#again = true;
      } while (this.#again && !this.#stopped);
    } catch (error) {
      this.#again = false; // not at once: the database may be down
      this.#options.logger.error(
        { err: error, worker: this.name },
        'claiming work failed; trying again at the next poll',
      );
    }
  }

  #dispatch(item: Item): void {
    let handedOn = false;
    const work = this.#options
      .run(item, () => this.#stopped)
      .then((next) => {
        // The queue's next item, already leased to this worker: it takes this one's place at once.
        if (next !== undefined) {
          handedOn = true;
          this.#dispatch(next);
        }
      })
      .catch((error: unknown) =>
        this.#options.logger.error(
          { err: error, worker: this.name, ...this.#options.describe(item) },
          'running claimed work failed; its lease will run out and it runs again',
        ),
      )
      .finally(() => {
        this.#inFlight.delete(work);
        if (!handedOn) this.wake();
      });
    this.#inFlight.add(work);
  }
}

export interface Lease {
  token: string;
  until: string;
  /** Leases that ended before this instant have run out. */
  expired: string;
}

/** A new lease of `ms`. Leases measure real elapsed time (is the worker still alive?), not a clock that tests move. */
export function newLease(ms: number): Lease {
  const now = Date.now();
  return { token: randomUUID(), until: iso(new Date(now + ms)), expired: iso(new Date(now)) };
}

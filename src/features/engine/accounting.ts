// The accounting of a generation's calls: each call is admitted by the middleware first (the spend limits reserve its
// bound of cost), and when its calls end, whatever happened, their usage is recorded (usage-records.ts, priced from
// the catalogue) and the admissions settled, before the usage event goes out.
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Metrics } from '../../platform/metrics.ts';
import type { Database } from '../../storage/schema.ts';
import type { CallRun } from './call.ts';
import type { CatalogueEntry } from './catalogue-entry.ts';
import type { GenerationEvent, GenerationRequest, TokenUsage } from './generation.ts';
import { merge } from './merge.ts';
import type { Admission, CallCaller, EngineMiddleware, ModelCall } from './middleware.ts';
import { priceOf } from './pricing.ts';
import { recordUsage } from './usage-records.ts';

/** A call as the middleware's `admit` sees it: who makes it, and a bound of its cost, computed when asked. */
export function modelCall(
  request: { workspaceId: string; apiKeyId: string | null; projectId?: string | null; now: Date },
  maxCostUsd: () => number,
): ModelCall {
  return {
    workspaceId: request.workspaceId,
    apiKeyId: request.apiKeyId,
    projectId: request.projectId ?? null,
    maxCostUsd,
    now: request.now,
  };
}

export class Accounting {
  readonly #db: Kysely<Database>;
  readonly #logger: Logger;
  readonly #metrics: Metrics;
  readonly #middleware: EngineMiddleware[];

  constructor(options: {
    db: Kysely<Database>;
    logger: Logger;
    metrics: Metrics;
    middleware: EngineMiddleware[];
  }) {
    this.#db = options.db;
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    this.#middleware = options.middleware;
  }

  /** Refuses a call that would be refused whatever it costs (a spent limit): every middleware's `precheck`. */
  async precheck(caller: CallCaller): Promise<void> {
    for (const middleware of this.#middleware) await middleware.precheck?.(caller);
  }

  /** Runs every middleware's `admit` in order; when one refuses, those already admitted are settled. */
  async admit(call: ModelCall): Promise<Admission[]> {
    const admissions: Admission[] = [];
    try {
      for (const middleware of this.#middleware) {
        const admission = await middleware.admit?.(call);
        if (admission) admissions.push(admission);
      }
    } catch (error) {
      await this.settle(admissions);
      throw error;
    }
    return admissions;
  }

  /** Settles admitted calls; a failure is logged, never the call's (its answer is not withheld for bookkeeping). */
  async settle(admissions: Admission[]): Promise<void> {
    for (const admission of admissions) {
      try {
        await admission.settle();
      } catch (error) {
        this.#logger.error({ err: error }, 'a model call admitted under a spend limit could not be settled');
      }
    }
  }

  /**
   * Runs the calls of every choice, then records each call's usage (whatever happened), settles the call's
   * admissions, and sends the sum.
   */
  async *withUsage(
    model: CatalogueEntry,
    request: GenerationRequest,
    calls: CallRun[],
    admissions: Admission[],
  ): AsyncGenerator<GenerationEvent> {
    let completed = false;
    try {
      yield* merge(
        calls.map((call) => call.events),
        () => {
          calls.forEach((call) => {
            call.stop();
          });
        },
      );
      completed = true;
    } finally {
      const usages = calls.map((call) => call.usage());
      const total = usages.reduce<TokenUsage>(
        (sum, u) => ({
          inputTokens: sum.inputTokens + u.inputTokens,
          cachedInputTokens: sum.cachedInputTokens + u.cachedInputTokens,
          outputTokens: sum.outputTokens + u.outputTokens,
        }),
        { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 },
      );
      const costs = usages.map((u) => priceOf(model, u));
      await recordUsage(
        { db: this.#db, logger: this.#logger, metrics: this.#metrics },
        model,
        request,
        usages.map((usage, i) => ({ usage, costUsd: costs[i]! })),
      );
      await this.settle(admissions);
      // A generation its client abandoned ends without a usage event: what it cost is recorded, nothing else follows.
      if (completed && !request.signal.aborted)
        yield { type: 'usage', usage: total, costUsd: Math.round(costs.reduce((a, b) => a + b, 0) * 1e11) / 1e11 };
    }
  }
}

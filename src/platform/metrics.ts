// The process's metrics in Prometheus's text format (prom-client), served at GET /metrics when METRICS_TOKEN is set:
// an operator endpoint outside the contract, read with Prometheus's own bearer setting.
//
// Every server has its own Registry (tests start many servers in one process; the global default registry would
// mix them and refuse a metric registered twice). What is recorded as it happens (requests, provider calls, tokens,
// webhook attempts) costs a counter increment and a histogram observation; what needs a query (queue depths) is
// computed when Prometheus scrapes, by the gauges features declare (Feature.gauges), each one cheap count on an index.
// Node's own metrics (`process_*`, `nodejs_*`, under their usual names, which the common dashboards expect) belong to
// the process, not to a server: one registry of them per process, added to every scrape.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { PENDING } from '../storage/partial-indexes.ts';
import type { Platform } from './context.ts';
import { Problem } from './problems.ts';

const PREFIX = 'content_service_';

/** Seconds: from a cached answer (a few ms) to a long streamed generation. */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const PROVIDER_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];
const FIRST_TOKEN_BUCKETS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];

/**
 * How a provider call ended: `ok`; `aborted` (its client went away); `rate_limited` (429), `unavailable` (5xx, 408,
 * unreachable), `timeout` (PROVIDER_TIMEOUT_MS) and `upstream_error` (another refusal) from the provider; `refused`
 * when the provider could not take the prompt (a local model's context).
 */
export type ProviderOutcome =
  | 'ok'
  | 'aborted'
  | 'rate_limited'
  | 'unavailable'
  | 'timeout'
  | 'upstream_error'
  | 'refused';

/** A gauge computed when Prometheus scrapes (Feature.gauges): one value per set of labels. */
export interface ScrapeGauge {
  /** Without the `content_service_` prefix. */
  name: string;
  help: string;
  labelNames?: string[];
  /** The values now; a failure leaves the gauge out of that scrape and is logged. */
  collect(): Promise<Array<{ labels?: Record<string, string>; value: number }>>;
}

let processRegistry: Registry | undefined;

/** Node's metrics of this process, collected from the first server that serves metrics on. */
function nodeMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export class Metrics {
  readonly registry = new Registry();
  readonly #logger: Logger;
  readonly #withNodeMetrics: boolean;

  readonly #requests = new Counter({
    name: `${PREFIX}http_requests_total`,
    help: 'HTTP requests answered, by operation of the contract (`none`: a path outside it), method and status code.',
    labelNames: ['operation', 'method', 'status'] as const,
    registers: [this.registry],
  });
  readonly #requestDuration = new Histogram({
    name: `${PREFIX}http_request_duration_seconds`,
    help: 'Time from receiving a request to the end of its answer (a streamed answer: its last byte), by operation.',
    labelNames: ['operation'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [this.registry],
  });
  readonly #providerCalls = new Counter({
    name: `${PREFIX}ai_provider_calls_total`,
    help: 'Calls to AI providers (one per choice and per embedding batch), by catalogue model, provider and outcome.',
    labelNames: ['model', 'provider', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly #providerDuration = new Histogram({
    name: `${PREFIX}ai_provider_call_duration_seconds`,
    help: 'Duration of AI provider calls, retries included, by catalogue model, provider and outcome.',
    labelNames: ['model', 'provider', 'outcome'] as const,
    buckets: PROVIDER_BUCKETS,
    registers: [this.registry],
  });
  readonly #firstToken = new Histogram({
    name: `${PREFIX}ai_time_to_first_token_seconds`,
    help: 'Time from the start of a streamed generation call to its first text or tool call, by catalogue model.',
    labelNames: ['model'] as const,
    buckets: FIRST_TOKEN_BUCKETS,
    registers: [this.registry],
  });
  readonly #tokens = new Counter({
    name: `${PREFIX}ai_tokens_total`,
    help: 'Tokens billed, by feature, catalogue model and kind (input includes cached_input).',
    labelNames: ['feature', 'model', 'kind'] as const,
    registers: [this.registry],
  });
  readonly #cost = new Counter({
    name: `${PREFIX}ai_cost_usd_total`,
    help: 'Cost of model calls in US dollars, priced from the catalogue, by feature and catalogue model.',
    labelNames: ['feature', 'model'] as const,
    registers: [this.registry],
  });
  readonly #webhookDeliveries = new Counter({
    name: `${PREFIX}webhook_delivery_attempts_total`,
    help: 'Webhook delivery attempts sent by this process, by outcome (succeeded: a 2xx answer).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  /** `nodeMetrics`: add Node's process metrics to the scrape (a server that serves /metrics). */
  constructor(options: { logger: Logger; nodeMetrics?: boolean }) {
    this.#logger = options.logger;
    this.#withNodeMetrics = options.nodeMetrics ?? false;
    if (this.#withNodeMetrics) nodeMetrics();
  }

  request(operation: string, method: string, status: number, seconds: number): void {
    this.#requests.inc({ operation, method, status: String(status) });
    this.#requestDuration.observe({ operation }, seconds);
  }

  providerCall(model: string, provider: string, outcome: ProviderOutcome, seconds: number): void {
    this.#providerCalls.inc({ model, provider, outcome });
    this.#providerDuration.observe({ model, provider, outcome }, seconds);
  }

  firstToken(model: string, seconds: number): void {
    this.#firstToken.observe({ model }, seconds);
  }

  usage(
    feature: string,
    model: string,
    usage: { inputTokens: number; cachedInputTokens: number; outputTokens: number },
    costUsd: number,
  ): void {
    if (usage.inputTokens > 0) this.#tokens.inc({ feature, model, kind: 'input' }, usage.inputTokens);
    if (usage.cachedInputTokens > 0)
      this.#tokens.inc({ feature, model, kind: 'cached_input' }, usage.cachedInputTokens);
    if (usage.outputTokens > 0) this.#tokens.inc({ feature, model, kind: 'output' }, usage.outputTokens);
    if (costUsd > 0) this.#cost.inc({ feature, model }, costUsd);
  }

  webhookAttempt(outcome: 'succeeded' | 'failed'): void {
    this.#webhookDeliveries.inc({ outcome });
  }

  /** Registers a gauge computed at scrape time. */
  gauge(definition: ScrapeGauge): void {
    const logger = this.#logger;
    new Gauge({
      name: `${PREFIX}${definition.name}`,
      help: definition.help,
      labelNames: definition.labelNames ?? [],
      registers: [this.registry],
      async collect() {
        this.reset();
        try {
          for (const { labels, value } of await definition.collect()) {
            if (labels) this.set(labels, value);
            else this.set(value);
          }
        } catch (error) {
          logger.warn(
            { err: error, metric: definition.name },
            'a metric could not be collected; it is left out of this scrape',
          );
        }
      },
    });
  }

  /** The text Prometheus reads. */
  async text(): Promise<string> {
    const own = await this.registry.metrics();
    return this.#withNodeMetrics ? `${own}\n${await nodeMetrics().metrics()}` : own;
  }
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * GET /metrics: passes on (to the server's 404) unless `token` is set; then answers 401 without
 * `Authorization: Bearer <token>`, compared in constant time.
 */
export function metricsEndpoint(metrics: Metrics, token: string | null) {
  const expected = token === null ? null : digest(token);
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (expected === null || req.path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) return next();
    const match = /^Bearer (.+)$/i.exec(req.get('authorization') ?? '');
    if (!match || !timingSafeEqual(digest(match[1]!), expected)) {
      throw new Problem('unauthenticated', 'Send the metrics token as Authorization: Bearer <METRICS_TOKEN>.', {
        headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' },
      });
    }
    const text = await metrics.text();
    res.status(200).setHeader('Content-Type', metrics.registry.contentType);
    res.setHeader('Cache-Control', 'no-store');
    res.end(text);
  };
}

/**
 * The gauges of the platform (the job queue, the database pool) and of every feature (Feature.gauges), registered on
 * the platform's metrics. The job queue's depth counts the pending jobs on their partial index (`jobs_due`), which
 * holds only pending rows: it stays cheap however long the history.
 */
export function registerGauges(platform: Platform): void {
  const { metrics, db, storage } = platform;
  metrics.gauge({
    name: 'jobs_queue_depth',
    help: 'Background jobs waiting to run or running (status pending), over every process sharing the database.',
    async collect() {
      const row = await db
        .selectFrom('jobs')
        .select((eb) => eb.fn.countAll<number | string>().as('count'))
        .where('status', '=', PENDING)
        .executeTakeFirstOrThrow();
      return [{ value: Number(row.count) }];
    },
  });
  const pool = storage.pool;
  if (pool) {
    metrics.gauge({
      name: 'db_pool_connections',
      help: "Connections of this server's PostgreSQL pool by state (idle, in_use) and requests waiting for one (waiting).",
      labelNames: ['state'],
      async collect() {
        const { total, idle, waiting } = pool();
        return [
          { labels: { state: 'idle' }, value: idle },
          { labels: { state: 'in_use' }, value: total - idle },
          { labels: { state: 'waiting' }, value: waiting },
        ];
      },
    });
  }
  for (const feature of platform.features) for (const gauge of feature.gauges?.(platform) ?? []) metrics.gauge(gauge);
}

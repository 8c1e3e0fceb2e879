// The process's metrics in Prometheus's text format (prom-client), served at GET /metrics when METRICS_TOKEN is set:
// an operator endpoint outside the contract, read with Prometheus's own bearer setting.
//
// Every server has its own Registry (tests start many servers in one process; the global default registry would
// mix them and refuse a metric registered twice). What is recorded as it happens costs a counter increment and a
// histogram observation: the platform's own (requests), and those a feature declares (Feature.metrics: the engine's
// provider calls, tokens and cost, the webhooks' attempts), which the platform registers without knowing them. What
// needs a query (queue depths) is computed when Prometheus scrapes, by the gauges features declare (Feature.gauges),
// each one cheap count on an index.
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

/** A counter a feature records into (Feature.metrics, Metrics.count); its name is without the prefix. */
export interface CounterDefinition<Label extends string = string> {
  type: 'counter';
  name: string;
  help: string;
  labelNames: readonly Label[];
}

/** A histogram a feature records into (Feature.metrics, Metrics.observe); its name is without the prefix. */
export interface HistogramDefinition<Label extends string = string> {
  type: 'histogram';
  name: string;
  help: string;
  labelNames: readonly Label[];
  buckets: number[];
}

export type MetricDefinition = CounterDefinition | HistogramDefinition;

export const counter = <Label extends string>(
  definition: Omit<CounterDefinition<Label>, 'type'>,
): CounterDefinition<Label> => ({ type: 'counter', ...definition });

export const histogram = <Label extends string>(
  definition: Omit<HistogramDefinition<Label>, 'type'>,
): HistogramDefinition<Label> => ({ type: 'histogram', ...definition });

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
  /** The instruments of the features' definitions, made when first registered or recorded into. */
  readonly #instruments = new Map<MetricDefinition, Counter | Histogram>();

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

  /** Registers a feature's counter or histogram (at start, so that a scrape names it before its first value). */
  register(definition: MetricDefinition): Counter | Histogram {
    let instrument = this.#instruments.get(definition);
    if (!instrument) {
      const common = {
        name: `${PREFIX}${definition.name}`,
        help: definition.help,
        labelNames: definition.labelNames,
        registers: [this.registry],
      };
      instrument =
        definition.type === 'counter' ? new Counter(common) : new Histogram({ ...common, buckets: definition.buckets });
      this.#instruments.set(definition, instrument);
    }
    return instrument;
  }

  /** Adds `value` (1 when not given) to a feature's counter. */
  count<Label extends string>(definition: CounterDefinition<Label>, labels: Record<Label, string>, value = 1): void {
    (this.register(definition) as Counter).inc(labels, value);
  }

  /** Observes `value` in a feature's histogram. */
  observe<Label extends string>(
    definition: HistogramDefinition<Label>,
    labels: Record<Label, string>,
    value: number,
  ): void {
    (this.register(definition) as Histogram).observe(labels, value);
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
 * The gauges of the platform (the job queue, the database pool) and of every feature (Feature.gauges), and the
 * features' counters and histograms (Feature.metrics), registered on the platform's metrics. The job queue's depth counts the pending jobs on their partial index (`jobs_due`), which
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
  for (const feature of platform.features) {
    for (const gauge of feature.gauges?.(platform) ?? []) metrics.gauge(gauge);
    for (const definition of feature.metrics ?? []) metrics.register(definition);
  }
}

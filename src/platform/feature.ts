// The shape of a feature: everything the platform needs from a folder under src/features/ to serve it. A feature
// exports one `Feature` object and is listed once in src/features/index.ts; the entry points hand that list to the
// app (Platform.features), the workers, the migrations and the retention loop, which loop over it, so a new feature
// edits no platform file.
// docs/server.md ("Adding a feature") has the checklist.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Request, Response, Router } from 'express';
import type { Kysely, Migration } from 'kysely';
import type { Logger } from 'pino';
import type { Handlers, OperationId } from '../../generated/operations.ts';
import type { Config } from '../config.ts';
import type { DatabaseKind } from '../storage/database.ts';
import type { Database } from '../storage/schema.ts';
import type { Clock } from './clock.ts';
import type { Platform, RequestContext, Services } from './context.ts';
import type { BackgroundWorker } from './jobs/claim-loop.ts';
import type { JobDefinitions } from './jobs/runner.ts';
import type { MetricDefinition, Metrics, ScrapeGauge } from './metrics.ts';
import type { Problem, ProblemDocument } from './problems.ts';

/** What a feature's background workers are built from, in a server and in `npm run worker` alike. */
export interface WorkerServices {
  config: Config;
  db: Kysely<Database>;
  kind: DatabaseKind;
  clock: Clock;
  logger: Logger;
  /** The content engine of the process (src/services.ts). */
  engine: Services['engine'];
  /** The process's metrics (the server's, served at GET /metrics; a worker process's are not served). */
  metrics: Metrics;
}

/** One dependency that GET /readyz checks (a name of the ServiceReadinessCheck schema, and how to probe it). */
export interface ReadinessProbe {
  name: string;
  /** Resolves when the dependency answers; the check fails when it throws or takes over 2 s. */
  probe(): Promise<void>;
}

/**
 * Authenticates a request to an operation of a security scheme other than bearer keys (`embedKey`): throws a
 * Problem to refuse it. Runs where bearer authentication runs (after routing, before the role and body checks).
 */
export type Authenticator = (req: Request, res: Response, platform: Platform) => Promise<void> | void;

/** Reshapes the problem document of one of the feature's operations (OpenAI's `error` object on chat completions). */
export type ProblemShaper = (problem: Problem, body: ProblemDocument) => ProblemDocument;

/** A WebSocket endpoint on the API's own HTTP port (the documents' real-time sessions); the service behind it is
 *  started and stopped with the others (src/services.ts). */
export interface UpgradeEndpoint {
  /** Whether an upgrade request for this path is this endpoint's. */
  matches(pathname: string): boolean;
  /** Takes over the upgrade request: completes the handshake or refuses it on the socket. */
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

export interface Feature {
  /** The folder's name (`webhooks`); in logs. */
  name: string;
  /** The operations it implements, typed by the contract; src/handlers.ts checks them against `notImplemented`. */
  handlers: Partial<Handlers<RequestContext>>;
  /**
   * Its migrations by name, `NNN_<what>`: NNN continues the one sequence of every migration (src/storage/database.ts
   * `allMigrations` sorts them by name; a name, once released, never changes, since databases record it).
   */
  migrations?: Record<string, Migration>;
  /** Deletes what the feature keeps only for a while; run at start-up and every 10 minutes (src/platform/retention.ts). */
  retention?: (db: Kysely<Database>, now: Date) => Promise<void>;
  /** Its background workers, started by every server (unless WEBHOOKS_WORKER=false) and by `npm run worker`. */
  workers?: (services: WorkerServices) => BackgroundWorker[];
  /** The handlers of its job kinds (src/platform/jobs/runner.ts), built once per job runner from the process's
   *  services; kinds are named `<feature>.<what>`. */
  jobs?: (services: WorkerServices) => JobDefinitions;
  /** Gauges of its state computed when Prometheus scrapes GET /metrics (queue depths): each one cheap query. */
  gauges?: (platform: Platform) => ScrapeGauge[];
  /**
   * The counters and histograms it records into as things happen (Metrics.count, Metrics.observe): registered when a
   * server starts, so that GET /metrics names them before their first value.
   */
  metrics?: MetricDefinition[];
  /**
   * Loads what its requests would otherwise load on their first call (the engine's tokenizer): run by a server after
   * it listens and before GET /readyz says ready, so that no caller waits for it.
   */
  preload?: (platform: Platform) => void | Promise<void>;
  /** What GET /readyz checks besides the database and the rate-limit store. */
  readiness?: (platform: Platform) => ReadinessProbe[];
  /** Problem shapes of its operations. */
  problemShapes?: Partial<Record<OperationId, ProblemShaper>>;
  /** Authenticators of the security schemes its operations use, other than bearer keys. */
  authenticators?: Partial<Record<'embedKey', Authenticator>>;
  /**
   * Pages outside the contract that a browser opens (the reference editor), with their assets: mounted before the
   * contract's routes, so a path they do not answer falls through to the contract's 404.
   */
  pages?: (platform: Platform) => Router;
  /** Its WebSocket endpoints, built once per server (src/server.ts routes upgrade requests to them). */
  upgrades?: (platform: Platform) => UpgradeEndpoint[];
}

/** The job definitions of every feature; a kind defined twice throws. */
export function collectJobs(features: readonly Feature[], services: WorkerServices): JobDefinitions {
  const all: JobDefinitions = {};
  for (const feature of features) {
    for (const [kind, definition] of Object.entries(feature.jobs?.(services) ?? {})) {
      if (kind in all) throw new Error(`job kind ${kind} of feature ${feature.name} is already defined`);
      all[kind] = definition!;
    }
  }
  return all;
}

/** One map from each feature's entries (handlers, problem shapes, authenticators); a key defined twice throws. */
export function collectByKey<K extends 'handlers' | 'problemShapes' | 'authenticators'>(
  features: readonly Feature[],
  part: K,
): NonNullable<Feature[K]> {
  const all: Record<string, unknown> = {};
  for (const feature of features) {
    for (const [key, value] of Object.entries(feature[part] ?? {})) {
      if (key in all)
        throw new Error(`${part} ${key} of feature ${feature.name} is already defined by another feature`);
      all[key] = value;
    }
  }
  return all as NonNullable<Feature[K]>;
}

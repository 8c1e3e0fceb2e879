// The long-lived services of a process, in the one place that says what they are, what they are built from and in
// which order they start, stop and are released: the content engine (with the features' middleware: the brand voice,
// the output policy, the spend limits), the documents' real-time sessions and the workflows' runtime. Features reach them as
// `platform.services.<name>`; each declares its own on the Services interface (src/platform/context.ts).
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { type Config, ConfigError } from './config.ts';
import { Realtime } from './features/documents/index.ts';
import { Catalogue, Engine, loadProvidersConfig, type ProvidersConfig } from './features/engine/index.ts';
import { spendLimitMiddleware } from './features/limits/index.ts';
import { policyMiddleware } from './features/policy/index.ts';
import { checkVoiceTrainingModel, voiceMiddleware } from './features/voices/index.ts';
import { WorkflowRuntime } from './features/workflows/index.ts';
import type { Clock } from './platform/clock.ts';
import type { Platform, Services } from './platform/context.ts';
import type { Metrics } from './platform/metrics.ts';
import type { Database } from './storage/schema.ts';

/**
 * The engine's providers, read from the environment before anything else starts: a provider variable that does not
 * parse, or a VOICE_TRAINING_MODEL the catalogue cannot serve, is a configuration error at start, before the database
 * is opened.
 */
export function engineProviders(config: Config): ProvidersConfig {
  const providers = loadProvidersConfig(config.environment, (message) => {
    throw new ConfigError(message);
  });
  checkVoiceTrainingModel(new Catalogue(providers), config.voiceTrainingModel);
  return providers;
}

/** The engine of a process: every generation is written in its voice and checked against the output policy, and every
 *  model call (embeddings too) is admitted under the spend limits before the provider is called. */
export function createEngine({
  providers,
  db,
  logger,
  clock,
  metrics,
}: {
  providers: ProvidersConfig;
  db: Kysely<Database>;
  logger: Logger;
  clock: Clock;
  metrics: Metrics;
}): Engine {
  return new Engine({
    providers,
    db,
    logger,
    metrics,
    middleware: [voiceMiddleware(db), policyMiddleware(db, logger, clock), spendLimitMiddleware(db)],
  });
}

export interface ServerServices {
  /** The platform, its services built. */
  platform: Platform;
  /** Once the server listens. */
  start(): Promise<void>;
  /** At shutdown, before the HTTP server drains: no more work taken, work in flight finished (a workflow step), then
   *  the real-time sessions saved and closed (a step may still have used a live document). */
  stop(): Promise<void>;
  /** After the drain (no request uses them any more), before the database closes: their connections released. */
  dispose(): Promise<void>;
}

/** Builds a server's services on the platform's parts and the engine's providers (engineProviders). */
export function createServices(parts: Omit<Platform, 'services'>, providers: ProvidersConfig): ServerServices {
  // The runtime and the real-time sessions are handed the whole platform; its services are complete before either
  // is used (they start below, after this returns).
  const services = {} as Services;
  const platform: Platform = { ...parts, services };
  services.engine = createEngine({ ...parts, providers });
  services.realtime = new Realtime(platform);
  services.workflows = new WorkflowRuntime(platform);
  return {
    platform,
    start: () => services.workflows.start(),
    async stop() {
      await services.workflows.stop();
      await services.realtime.close();
    },
    async dispose() {
      await services.realtime.dispose();
      await services.workflows.dispose();
    },
  };
}

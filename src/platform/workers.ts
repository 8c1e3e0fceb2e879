// The background workers of a process, in a server and in `npm run worker` alike: every feature's own workers
// (Feature.workers: the webhook delivery worker) and one job runner for every feature's job kinds (Feature.jobs),
// when there are any.
import { collectJobs, type Feature, type WorkerServices } from './feature.ts';
import type { BackgroundWorker } from './jobs/claim-loop.ts';
import { JobRunner } from './jobs/runner.ts';

export function createWorkers(features: readonly Feature[], services: WorkerServices): BackgroundWorker[] {
  const workers = features.flatMap((feature) => feature.workers?.(services) ?? []);
  const definitions = collectJobs(features, services);
  if (Object.keys(definitions).length > 0) {
    const { config, db, kind, clock, logger } = services;
    workers.push(new JobRunner({ db, kind, databaseUrl: config.databaseUrl, clock, logger, definitions }));
  }
  return workers;
}

/** Creates and starts the workers; returns them by name. */
export async function startWorkers(
  features: readonly Feature[],
  services: WorkerServices,
): Promise<Map<string, BackgroundWorker>> {
  const workers = createWorkers(features, services);
  await Promise.all(workers.map((worker) => worker.start()));
  return new Map(workers.map((worker) => [worker.name, worker]));
}

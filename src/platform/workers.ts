// The background workers of a process, in a server and in `npm run worker` alike: every feature's own workers
// (Feature.workers: the webhook delivery worker) and one job runner for every feature's job kinds (Feature.jobs),
// when there are any.
import { features } from '../features/index.ts';
import { collectJobs, type Feature, type WorkerServices } from './feature.ts';
import type { BackgroundWorker } from './jobs/claim-loop.ts';
import { JobRunner } from './jobs/runner.ts';

export function createWorkers(services: WorkerServices): BackgroundWorker[] {
  const all = features as readonly Feature[];
  const workers = all.flatMap((feature) => feature.workers?.(services) ?? []);
  const definitions = collectJobs(all);
  if (Object.keys(definitions).length > 0) {
    const { config, db, kind, clock, logger } = services;
    workers.push(new JobRunner({ db, kind, databaseUrl: config.databaseUrl, clock, logger, definitions }));
  }
  return workers;
}

/** Creates and starts the workers; returns them by name. */
export async function startWorkers(services: WorkerServices): Promise<Map<string, BackgroundWorker>> {
  const workers = createWorkers(services);
  await Promise.all(workers.map((worker) => worker.start()));
  return new Map(workers.map((worker) => [worker.name, worker]));
}

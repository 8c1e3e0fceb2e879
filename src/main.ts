// `npm start`: the server, configured from the environment (README, "Configuration"). It binds the port before it
// loads the server's modules, so that a port in use is one line at once and GET /healthz answers while the rest
// starts; the server's modules come after, by a dynamic import. Before all of them, Node's module compile cache is
// turned on (platform/compile-cache.ts), so that every module the start loads after it is read from the cache, and
// V8's garbage collector is tuned (platform/collector.ts): those two are the modules this file imports statically.
import { performance } from 'node:perf_hooks';
import { tuneCollector } from './platform/collector.ts';
import { enableCompileCache, flushCompileCache } from './platform/compile-cache.ts';
import type { RunningServer } from './server.ts';

enableCompileCache();
tuneCollector();
const [
  { loadConfig },
  { listen },
  { createLogger },
  { stopOnSignals, surviveLostConnections },
  { startupFailure },
  { collectToReduceMemory, reclaimStartMemory },
] = await Promise.all([
  import('./config.ts'),
  import('./platform/listener.ts'),
  import('./platform/logging.ts'),
  import('./platform/signals.ts'),
  import('./platform/startup-failure.ts'),
  import('./platform/start-memory.ts'),
]);

async function seedDemo(running: RunningServer): Promise<void> {
  const { createFirstWorkspace } = await import('./features/workspace/index.ts');
  const { db, config } = running.platform;
  const created = await createFirstWorkspace(db, {
    name: 'Demo workspace',
    region: config.region,
    ownerEmail: 'owner@demo.example',
    keyName: 'Demo owner key',
  });
  if (!created) {
    running.platform.logger.debug('the database has a workspace: no demo workspace made');
    return;
  }
  const { workspace, secret } = created;
  const base = config.publicBaseUrl;
  process.stdout.write(
    [
      '',
      `  Created the demo workspace ${workspace.id} (${config.region}) with an owner API key.`,
      '  The key is shown only this once:',
      '',
      `    ${secret}`,
      '',
      '  Try it:',
      '',
      `    curl -s ${base}/v1/workspace -H 'Authorization: Bearer ${secret}'`,
      '',
      '  and a chat completion on the built-in sandbox model (no provider key needed):',
      '',
      `    curl -s ${base}/v1/chat/completions -H 'Authorization: Bearer ${secret}' -H 'Content-Type: application/json' \\`,
      `      -d '{"model": "sandbox-writer", "messages": [{"role": "user", "content": "Announce our spring sale on coffee roasts"}]}'`,
      '',
      '',
    ].join('\n'),
  );
}

/**
 * Loads the server's modules in parts, letting the event loop run after each: loading a module graph holds the loop
 * until all of it is loaded, and between the parts the listener answers `GET /healthz` and `GET /readyz`, and the
 * database's answer is heard (`between` throws to stop the start). Each part loads what the next would load first, so
 * the last loads little; together they are the server's modules, loaded once.
 */
async function loadInParts(between: () => void): Promise<typeof import('./server.ts')> {
  const parts = [() => import('./storage/database.ts'), () => import('./app.ts'), () => import('./features/index.ts')];
  for (const part of parts) {
    await part();
    await new Promise((resolve) => setImmediate(resolve));
    between();
  }
  const server = await import('./server.ts');
  between();
  return server;
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  surviveLostConnections(logger);
  const listener = await listen(config);
  logger.info({ url: listener.url }, `listening at ${listener.url}; GET /readyz answers 200 once started`);
  if (config.reusePort && !config.redisUrl)
    logger.warn(
      'REUSE_PORT without REDIS_URL: each server on the port counts rate limits alone, and editors of one document on two servers do not see each other live',
    );
  // The memory the start grows and then no longer uses, given back at the first quiet moment once ready
  // (platform/start-memory.ts); the requests that come meanwhile count.
  const reclaim = reclaimStartMemory(listener.server, {
    collect: () => {
      const [started, before] = [performance.now(), process.memoryUsage.rss()];
      collectToReduceMemory();
      const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
      logger.debug(
        {
          ms: Math.round(performance.now() - started),
          rss_mb: mb(process.memoryUsage.rss()),
          rss_before_mb: mb(before),
        },
        'gave back the memory the start no longer uses',
      );
    },
  });
  // While the server's modules load, the database is asked whether it refuses this server: a refusal stops the start
  // at once, not after the whole load. Its answer is not waited for: the pool connects again anyway.
  const { reachDatabase } = await import('./storage/reach.ts');
  const check: { refusal?: unknown } = {};
  void reachDatabase(config.databaseUrl).catch((error: unknown) => {
    check.refusal = error;
  });
  const { startServer } = await loadInParts(() => {
    if ('refusal' in check) throw check.refusal;
  });
  const running = await startServer(config, { logger, listener });
  // From the process's start: what an operator waits from `npm start` until the server serves.
  const ms = Math.round(performance.now());
  logger.info(
    {
      ms,
      url: running.url,
      region: config.region,
      database: running.platform.storage.kind,
      rate_limit_store: config.redisUrl ? 'redis' : 'memory',
    },
    `ready in ${ms} ms`,
  );
  // What this start compiled is kept now, for the next start, whether or not this process ever exits by itself.
  flushCompileCache();
  reclaim.ready();
  // The signals are heard from here on: a stop asked for while the demo workspace is being made waits for it, so
  // that it is made whole or not at all.
  // A seed that fails (the database busy past its timeout) leaves a server that serves: it is said, not fatal.
  const seeded = config.seedDemo
    ? seedDemo(running).catch((error: unknown) =>
        logger.error({ err: error }, 'the demo workspace could not be made; the next start tries again'),
      )
    : Promise.resolve();
  stopOnSignals(logger, 'shutting down: draining requests', async () => {
    reclaim.stop();
    await seeded;
    return running.close();
  });
  await seeded;
}

main().catch((error: unknown) => {
  process.stderr.write(`${startupFailure(error, process.env.DATABASE_URL)}\n`);
  process.exit(1);
});

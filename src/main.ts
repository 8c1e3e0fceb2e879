// `npm start`: the server, configured from the environment (README, "Configuration").
import { loadConfig } from './config.ts';
import { createWorkspace } from './features/workspace/index.ts';
import { stopOnSignals, surviveLostConnections } from './platform/signals.ts';
import { startupFailure } from './platform/startup-failure.ts';
import { type RunningServer, startServer } from './server.ts';

async function seedDemo(running: RunningServer): Promise<void> {
  const { db, config } = running.platform;
  const existing = await db.selectFrom('workspaces').select('id').limit(1).executeTakeFirst();
  if (existing) return;
  const { workspace, secret } = await createWorkspace(db, {
    name: 'Demo workspace',
    region: config.region,
    ownerEmail: 'owner@demo.example',
    keyName: 'Demo owner key',
  });
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

async function main(): Promise<void> {
  const config = loadConfig();
  const running = await startServer(config);
  const { logger } = running.platform;
  surviveLostConnections(logger);
  logger.info(
    {
      url: running.url,
      region: config.region,
      database: running.platform.storage.kind,
      rate_limit_store: config.redisUrl ? 'redis' : 'memory',
    },
    'content-service listening',
  );
  if (config.seedDemo) await seedDemo(running);

  stopOnSignals(logger, 'shutting down: draining requests', () => running.close());
}

main().catch((error: unknown) => {
  process.stderr.write(`${startupFailure(error, process.env.DATABASE_URL)}\n`);
  process.exit(1);
});

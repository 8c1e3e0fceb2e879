// The defaults of the configuration are the ones the README's Configuration table promises (a default timeout or
// limit that drifted by a factor of 1,000 would otherwise pass every test that sets its own value).
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { loadConfig, type Config } from '../../src/config.ts';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The default column of the variable's row, its first `code` value. */
function documentedDefault(variable: string): string | undefined {
  const row = readme.split('\n').find((line) => line.startsWith(`| \`${variable}\` |`));
  return row?.split('|')[2]?.match(/`([^`]*)`/)?.[1];
}

const settings: Array<[string, (config: Config) => unknown]> = [
  ['PORT', (config) => config.port],
  ['HOST', (config) => config.host],
  ['DATABASE_URL', (config) => config.databaseUrl],
  ['REGION', (config) => config.region],
  ['LOG_LEVEL', (config) => config.logLevel],
  ['SEED_DEMO', (config) => config.seedDemo],
  ['BODY_LIMIT_BYTES', (config) => config.bodyLimitBytes],
  ['SHUTDOWN_TIMEOUT_MS', (config) => config.shutdownTimeoutMs],
  ['WEBHOOKS_WORKER', (config) => config.webhooksWorker],
  ['WEBHOOKS_ALLOW_LOOPBACK', (config) => config.webhooksAllowLoopback],
];

describe('configuration defaults', () => {
  test.each(settings)('%s defaults to what the README says', (variable, read) => {
    const documented = documentedDefault(variable);
    expect(documented, `README row of ${variable}`).toBeDefined();
    expect(String(read(loadConfig({})))).toBe(documented);
  });

  test('TRUST_PROXY and REDIS_URL are unset by default', () => {
    const config = loadConfig({});
    expect(config.trustProxy).toBe(false);
    expect(config.redisUrl).toBeUndefined();
  });
});

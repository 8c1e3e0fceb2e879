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
  ['PROVIDER_TIMEOUT_MS', (config) => config.providers.timeoutMs],
  ['PROVIDER_MAX_RETRIES', (config) => config.providers.maxRetries],
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

  test('no AI provider is enabled by default (only the built-in sandbox models are available)', () => {
    expect(loadConfig({}).providers.enabled).toEqual({});
  });

  test('a provider is enabled by its key; a self-hosted one by its base URL, with the models it names', () => {
    const { enabled } = loadConfig({ OPENAI_API_KEY: 'sk-test', OLLAMA_BASE_URL: 'http://127.0.0.1:11434/v1', OLLAMA_MODELS: 'llama3.2:3b, Qwen/Qwen2.5-7B' }).providers;
    expect(Object.keys(enabled).sort()).toEqual(['ollama', 'openai']);
    expect(enabled.ollama).toMatchObject({ models: ['llama3.2:3b', 'Qwen/Qwen2.5-7B'], contextWindow: 8192 });
  });

  test('a provider variable that does not parse stops the start with a configuration error', () => {
    expect(() => loadConfig({ OPENAI_BASE_URL: 'ftp://example.com' })).toThrow(/OPENAI_BASE_URL must be an http or https URL/);
    expect(() => loadConfig({ PROVIDER_MAX_RETRIES: '-1' })).toThrow(/PROVIDER_MAX_RETRIES/);
    expect(() => loadConfig({ OLLAMA_BASE_URL: 'http://127.0.0.1:11434/v1', OLLAMA_MODELS: 'bad model' })).toThrow(/OLLAMA_MODELS/);
  });
});

// The defaults of the configuration are the ones the README's Configuration table promises (a default timeout or
// limit that drifted by a factor of 1,000 would otherwise pass every test that sets its own value).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  ['AUTH_CACHE_MS', (config) => config.authCacheMs],
  ['WEBHOOKS_WORKER', (config) => config.webhooksWorker],
  ['WEBHOOKS_ALLOW_LOOPBACK', (config) => config.webhooksAllowLoopback],
  ['PROVIDER_TIMEOUT_MS', (config) => config.providers.timeoutMs],
  ['PROVIDER_MAX_RETRIES', (config) => config.providers.maxRetries],
  ['REALTIME_VERSION_IDLE_MS', (config) => config.realtimeVersionIdleMs],
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
    expect(loadConfig({}).providers.local).toBeUndefined();
  });

  test('LOCAL_MODEL_PATH enables the local provider: its name from the file, its context size and threads as documented', () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-local-'));
    try {
      const path = join(dir, 'Tiny-Llama.Q4.gguf');
      writeFileSync(path, 'GGUF');
      expect(documentedDefault('LOCAL_MODEL_CONTEXT_SIZE')).toBe('4096');
      expect(loadConfig({ LOCAL_MODEL_PATH: path }).providers.local).toEqual({ modelPath: path, name: 'tiny-llama.q4', contextSize: 4096, threads: undefined });
      expect(loadConfig({ LOCAL_MODEL_PATH: path, LOCAL_MODEL_NAME: 'tiny', LOCAL_MODEL_CONTEXT_SIZE: '512', LOCAL_MODEL_THREADS: '2' }).providers.local).toEqual({ modelPath: path, name: 'tiny', contextSize: 512, threads: 2 });
      expect(() => loadConfig({ LOCAL_MODEL_PATH: join(dir, 'missing.gguf') })).toThrow(/LOCAL_MODEL_PATH must name a GGUF model file/);
      expect(() => loadConfig({ LOCAL_MODEL_PATH: dir })).toThrow(/LOCAL_MODEL_PATH/);
      expect(() => loadConfig({ LOCAL_MODEL_PATH: path, LOCAL_MODEL_NAME: 'Has Spaces' })).toThrow(/LOCAL_MODEL_NAME/);
      expect(() => loadConfig({ LOCAL_MODEL_PATH: path, LOCAL_MODEL_CONTEXT_SIZE: '100' })).toThrow(/LOCAL_MODEL_CONTEXT_SIZE must be at least 256/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a provider is enabled by its key; a self-hosted one by its base URL, with the models it names', () => {
    const { enabled } = loadConfig({ OPENAI_API_KEY: 'sk-test', OLLAMA_BASE_URL: 'http://127.0.0.1:11434/v1', OLLAMA_MODELS: 'llama3.2:3b, Qwen/Qwen2.5-7B' }).providers;
    expect(Object.keys(enabled).sort()).toEqual(['ollama', 'openai']);
    expect(enabled.ollama).toMatchObject({ models: ['llama3.2:3b', 'Qwen/Qwen2.5-7B'], contextWindow: 8192 });
  });

  test('VOICE_TRAINING_MODEL names an available model other than the sandbox’s, or stops the start', () => {
    expect(loadConfig({}).voiceTrainingModel).toBeNull();
    expect(loadConfig({ OPENAI_API_KEY: 'sk-test', VOICE_TRAINING_MODEL: 'gpt-4o-mini' }).voiceTrainingModel).toBe('gpt-4o-mini');
    expect(() => loadConfig({ VOICE_TRAINING_MODEL: 'gpt-4o-mini' })).toThrow(/set OPENAI_API_KEY/);
    expect(() => loadConfig({ VOICE_TRAINING_MODEL: 'nope' })).toThrow(/no model nope/);
    expect(() => loadConfig({ VOICE_TRAINING_MODEL: 'sandbox-writer' })).toThrow(/sandbox/);
  });

  test('a provider variable that does not parse stops the start with a configuration error', () => {
    expect(() => loadConfig({ OPENAI_BASE_URL: 'ftp://example.com' })).toThrow(/OPENAI_BASE_URL must be an http or https URL/);
    expect(() => loadConfig({ PROVIDER_MAX_RETRIES: '-1' })).toThrow(/PROVIDER_MAX_RETRIES/);
    expect(() => loadConfig({ OLLAMA_BASE_URL: 'http://127.0.0.1:11434/v1', OLLAMA_MODELS: 'bad model' })).toThrow(/OLLAMA_MODELS/);
  });
});

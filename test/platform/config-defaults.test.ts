// The defaults of the configuration are the ones docs/configuration.md promises (a default timeout or
// limit that drifted by a factor of 1,000 would otherwise pass every test that sets its own value).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { type Config, ConfigError, loadConfig } from '../../src/config.ts';
import { Catalogue } from '../../src/features/engine/catalogue.ts';
import { loadProvidersConfig } from '../../src/features/engine/providers/registry.ts';
import { checkVoiceTrainingModel } from '../../src/features/voices/training.ts';

/** The providers an environment configures, as the engine reads them when it is built (src/services.ts). */
function providers(env: Record<string, string>) {
  return loadProvidersConfig(env, (message) => {
    throw new ConfigError(message);
  });
}

const readme = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');

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
  ['WEBHOOK_ATTEMPT_TIMEOUT_MS', (config) => config.webhookAttemptTimeoutMs],
  ['PROVIDER_TIMEOUT_MS', (config) => providers(config.environment as Record<string, string>).timeoutMs],
  ['PROVIDER_MAX_RETRIES', (config) => providers(config.environment as Record<string, string>).maxRetries],
  ['REALTIME_VERSION_IDLE_MS', (config) => config.realtimeVersionIdleMs],
];

describe('configuration defaults', () => {
  test.each(settings)('%s defaults to what docs/configuration.md says', (variable, read) => {
    const documented = documentedDefault(variable);
    expect(documented, `docs/configuration.md row of ${variable}`).toBeDefined();
    expect(String(read(loadConfig({})))).toBe(documented);
  });

  test('WEBHOOK_ATTEMPT_TIMEOUT_MS is shorter only outside production, and never longer', () => {
    expect(loadConfig({ WEBHOOK_ATTEMPT_TIMEOUT_MS: '1000' }).webhookAttemptTimeoutMs).toBe(1000);
    expect(() => loadConfig({ NODE_ENV: 'production', WEBHOOK_ATTEMPT_TIMEOUT_MS: '1000' })).toThrow(
      /WEBHOOK_ATTEMPT_TIMEOUT_MS is a development setting/,
    );
    expect(loadConfig({ NODE_ENV: 'production', WEBHOOK_ATTEMPT_TIMEOUT_MS: '15000' }).webhookAttemptTimeoutMs).toBe(
      15_000,
    );
    expect(() => loadConfig({ WEBHOOK_ATTEMPT_TIMEOUT_MS: '15001' })).toThrow(/from 100 to 15000/);
  });

  test('TRUST_PROXY and REDIS_URL are unset by default', () => {
    const config = loadConfig({});
    expect(config.trustProxy).toBe(false);
    expect(config.redisUrl).toBeUndefined();
  });

  test('METRICS_TOKEN is unset by default (no /metrics), as docs/configuration.md says; a short one is refused', () => {
    expect(documentedDefault('METRICS_TOKEN')).toBeUndefined();
    expect(readme).toMatch(/^\| `METRICS_TOKEN` \| unset \|/m);
    expect(loadConfig({}).metricsToken).toBeNull();
    expect(loadConfig({ METRICS_TOKEN: '' }).metricsToken).toBeNull();
    expect(loadConfig({ METRICS_TOKEN: 'a'.repeat(16) }).metricsToken).toBe('a'.repeat(16));
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(
      /METRICS_TOKEN must be at least 16 characters long, got 5/,
    );
  });

  test('no AI provider is enabled by default (only the built-in sandbox models are available)', () => {
    expect(providers({}).configured).toEqual({ sandbox: {} });
  });

  test('LOCAL_MODEL_PATH enables the local provider: its name from the file, its context size and threads as documented', () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-local-'));
    try {
      const path = join(dir, 'Tiny-Llama.Q4.gguf');
      writeFileSync(path, 'GGUF');
      expect(documentedDefault('LOCAL_MODEL_CONTEXT_SIZE')).toBe('4096');
      expect(providers({ LOCAL_MODEL_PATH: path }).configured.local).toEqual({
        modelPath: path,
        name: 'tiny-llama.q4',
        contextSize: 4096,
        threads: undefined,
      });
      expect(
        providers({
          LOCAL_MODEL_PATH: path,
          LOCAL_MODEL_NAME: 'tiny',
          LOCAL_MODEL_CONTEXT_SIZE: '512',
          LOCAL_MODEL_THREADS: '2',
        }).configured.local,
      ).toEqual({ modelPath: path, name: 'tiny', contextSize: 512, threads: 2 });
      expect(() => providers({ LOCAL_MODEL_PATH: join(dir, 'missing.gguf') })).toThrow(
        /LOCAL_MODEL_PATH must name a GGUF model file/,
      );
      expect(() => providers({ LOCAL_MODEL_PATH: dir })).toThrow(/LOCAL_MODEL_PATH/);
      expect(() => providers({ LOCAL_MODEL_PATH: path, LOCAL_MODEL_NAME: 'Has Spaces' })).toThrow(/LOCAL_MODEL_NAME/);
      expect(() => providers({ LOCAL_MODEL_PATH: path, LOCAL_MODEL_CONTEXT_SIZE: '100' })).toThrow(
        /LOCAL_MODEL_CONTEXT_SIZE must be at least 256/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a provider is enabled by its key; a self-hosted one by its base URL, with the models it names', () => {
    const config = providers({
      OPENAI_API_KEY: 'sk-test',
      OLLAMA_BASE_URL: 'http://127.0.0.1:11434/v1',
      OLLAMA_MODELS: 'llama3.2:3b, Qwen/Qwen2.5-7B',
    });
    expect(Object.keys(config.configured).sort()).toEqual(['ollama', 'openai', 'sandbox']);
    expect(config.configured.ollama).toMatchObject({ models: ['llama3.2:3b', 'Qwen/Qwen2.5-7B'], contextWindow: 8192 });
    expect(new Catalogue(config).get('ollama:qwen-qwen2.5-7b')).toMatchObject({
      provider: 'ollama',
      upstream_id: 'Qwen/Qwen2.5-7B',
      context_window: 8192,
    });
  });

  test('VOICE_TRAINING_MODEL names an available model other than the sandbox’s, or stops the start', () => {
    const check = (env: Record<string, string>) =>
      checkVoiceTrainingModel(new Catalogue(providers(env)), loadConfig(env).voiceTrainingModel);
    expect(loadConfig({}).voiceTrainingModel).toBeNull();
    expect(() => check({})).not.toThrow();
    expect(() => check({ OPENAI_API_KEY: 'sk-test', VOICE_TRAINING_MODEL: 'gpt-4o-mini' })).not.toThrow();
    expect(() => check({ VOICE_TRAINING_MODEL: 'gpt-4o-mini' })).toThrow(/set OPENAI_API_KEY/);
    expect(() => check({ VOICE_TRAINING_MODEL: 'nope' })).toThrow(/no model nope/);
    expect(() => check({ VOICE_TRAINING_MODEL: 'sandbox-writer' })).toThrow(ConfigError);
  });

  test('a provider variable that does not parse is a configuration error (the start stops when the engine is built)', () => {
    expect(() => providers({ OPENAI_BASE_URL: 'ftp://example.com' })).toThrow(
      /OPENAI_BASE_URL must be an http or https URL/,
    );
    expect(() => providers({ PROVIDER_MAX_RETRIES: '-1' })).toThrow(/PROVIDER_MAX_RETRIES/);
    expect(() => providers({ OLLAMA_BASE_URL: 'http://127.0.0.1:11434/v1', OLLAMA_MODELS: 'bad model' })).toThrow(
      /OLLAMA_MODELS/,
    );
  });
});

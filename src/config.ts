// The server's configuration, read once from environment variables. docs/configuration.md has the table.
import type { components } from '../generated/openapi.ts';
import { regionServers, regions } from '../generated/operations.ts';

export type Region = components['schemas']['Region'];
/** The contract's regions (the Region schema's enum). */
export const REGIONS: readonly Region[] = regions;

export interface Config {
  host: string;
  port: number;
  /**
   * Share the port with the other processes on this machine that share it too (REUSE_PORT; Linux's SO_REUSEPORT): the
   * kernel spreads new connections among them, so that several servers use several cores behind one address.
   */
  reusePort: boolean;
  databaseUrl: string;
  redisUrl: string | undefined;
  region: Region;
  logLevel: string;
  /** The base URL clients use to reach this server; in `Link` headers and `Location`s. */
  publicBaseUrl: string;
  /** The base URL of each region, for `wrong_region` answers and `GET /v1/workspace`. */
  regionBaseUrls: Record<Region, string>;
  production: boolean;
  /** Create a demo workspace and owner key on the first start (never in production). */
  seedDemo: boolean;
  bodyLimitBytes: number;
  /** Express's `trust proxy`: which proxies may set X-Forwarded-For. */
  trustProxy: boolean | number | string;
  shutdownTimeoutMs: number;
  /** How long an authenticated key is remembered (AUTH_CACHE_MS; 0: every request reads the database). */
  authCacheMs: number;
  /**
   * Run every background worker inside this process (WEBHOOKS_WORKER, default true): the webhook delivery worker and
   * the job runner (src/platform/workers.ts). `false` leaves them to `npm run worker` processes.
   */
  webhooksWorker: boolean;
  /** PostgreSQL: the most connections of this process's pool (DATABASE_POOL_MAX). */
  databasePoolMax: number;
  /** PostgreSQL: how long a query waits for a free connection of the pool before it is refused (DATABASE_POOL_TIMEOUT_MS). */
  databasePoolTimeoutMs: number;
  /** PostgreSQL: the most connections of the workflow engine's own pool (WORKFLOW_DATABASE_POOL_MAX). */
  workflowDatabasePoolMax: number;
  /** How many workflow runs one server executes at a time (WORKFLOW_CONCURRENCY). */
  workflowConcurrency: number;
  /** Development only: webhook URLs may be http and point at loopback or private addresses. */
  webhooksAllowLoopback: boolean;
  /**
   * How long a webhook attempt may take for a complete answer (WEBHOOK_ATTEMPT_TIMEOUT_MS): the contract's 15 s;
   * shorter only outside production, for tests that wait for a timeout.
   */
  webhookAttemptTimeoutMs: number;
  /**
   * The variables the configuration was read from. The AI providers own theirs (their keys, base URLs, models): the
   * engine reads them when it is built (src/features/engine/providers/registry.ts), and a value that does not parse stops the
   * start there as here.
   */
  environment: Readonly<Record<string, string | undefined>>;
  /** The model that writes a voice's style summary and traits at training (VOICE_TRAINING_MODEL, checked against the
   *  catalogue when the engine is built); null: they are derived from the measurements. */
  voiceTrainingModel: string | null;
  /** A real-time editing session saves a version after this long without changes (REALTIME_VERSION_IDLE_MS). */
  realtimeVersionIdleMs: number;
  /** Where email goes out (SMTP_URL, `smtp://` or `smtps://`); null: no email is sent. */
  smtpUrl: string | null;
  /** The sender of the emails (MAIL_FROM). */
  mailFrom: string;
  /** The bearer token of GET /metrics (METRICS_TOKEN); null: the endpoint is not served (404). */
  metricsToken: string | null;
}

export class ConfigError extends Error {}

/** The time a webhook receiver has for a complete answer, as the AsyncAPI document promises it. */
export const WEBHOOK_ATTEMPT_TIMEOUT_MS = 15_000;

/** The base URL of each region, as the contract's `servers` name them. */
function specRegionUrls(): Record<Region, string> {
  return { ...regionServers };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max)
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got ${raw}`);
  return value;
}

/**
 * Express's `trust proxy`: `true`/`false`, a hop count (`1`: trust the nearest proxy), or a comma-separated list of
 * addresses, subnets or the names loopback, linklocal, uniquelocal.
 */
function trustProxy(raw: string | undefined): boolean | number | string {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  for (const entry of raw.split(',').map((e) => e.trim())) {
    if (!/^(loopback|linklocal|uniquelocal|[0-9A-Fa-f:.]+(\/\d{1,3})?)$/.test(entry)) {
      throw new ConfigError(`TRUST_PROXY must be true, false, a hop count or addresses/subnets, got ${raw}`);
    }
  }
  return raw;
}

function flag(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === 'false') return raw === 'true';
  throw new ConfigError(`${name} must be true or false, got ${raw}`);
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const region = (env.REGION ?? 'eu') as Region;
  if (!REGIONS.includes(region)) throw new ConfigError(`REGION must be ${REGIONS.join(' or ')}, got ${region}`);
  const databaseUrl = env.DATABASE_URL || 'sqlite:./data/content-service.db';
  if (!/^(sqlite:|postgres(ql)?:\/\/)/.test(databaseUrl))
    throw new ConfigError('DATABASE_URL must be sqlite:PATH or postgres://…');
  const production = env.NODE_ENV === 'production';
  const publicBaseUrl = (env.PUBLIC_BASE_URL || `http://localhost:${port}`).replace(/\/$/, '');
  const regionBaseUrls = specRegionUrls();
  regionBaseUrls[region] = publicBaseUrl;
  if (env.EU_BASE_URL) regionBaseUrls.eu = env.EU_BASE_URL.replace(/\/$/, '');
  if (env.US_BASE_URL) regionBaseUrls.us = env.US_BASE_URL.replace(/\/$/, '');
  const webhooksAllowLoopback = flag(env, 'WEBHOOKS_ALLOW_LOOPBACK', false);
  if (webhooksAllowLoopback && production)
    throw new ConfigError(
      'WEBHOOKS_ALLOW_LOOPBACK is a development setting; it cannot be true with NODE_ENV=production',
    );
  const webhookAttemptTimeoutMs = integer(env, 'WEBHOOK_ATTEMPT_TIMEOUT_MS', WEBHOOK_ATTEMPT_TIMEOUT_MS, 100, 15_000);
  if (webhookAttemptTimeoutMs !== WEBHOOK_ATTEMPT_TIMEOUT_MS && production)
    throw new ConfigError(
      `WEBHOOK_ATTEMPT_TIMEOUT_MS is a development setting; receivers are promised ${WEBHOOK_ATTEMPT_TIMEOUT_MS} ms with NODE_ENV=production`,
    );
  return {
    host: env.HOST || '0.0.0.0',
    port,
    reusePort: flag(env, 'REUSE_PORT', false),
    databaseUrl,
    redisUrl: env.REDIS_URL || undefined,
    region,
    logLevel: env.LOG_LEVEL || 'info',
    publicBaseUrl,
    regionBaseUrls,
    production,
    seedDemo: !production && env.SEED_DEMO !== 'false',
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 1_048_576, 1024, 100 * 1_048_576),
    trustProxy: trustProxy(env.TRUST_PROXY),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    authCacheMs: integer(env, 'AUTH_CACHE_MS', 5000, 0, 60_000),
    webhooksWorker: flag(env, 'WEBHOOKS_WORKER', true),
    workflowConcurrency: integer(env, 'WORKFLOW_CONCURRENCY', 10, 1, 1000),
    databasePoolMax: integer(env, 'DATABASE_POOL_MAX', 10, 1, 1000),
    databasePoolTimeoutMs: integer(env, 'DATABASE_POOL_TIMEOUT_MS', 5000, 100, 600_000),
    workflowDatabasePoolMax: integer(env, 'WORKFLOW_DATABASE_POOL_MAX', 5, 1, 1000),
    webhooksAllowLoopback,
    webhookAttemptTimeoutMs,
    environment: { ...env },
    voiceTrainingModel: env.VOICE_TRAINING_MODEL || null,
    realtimeVersionIdleMs: integer(env, 'REALTIME_VERSION_IDLE_MS', 30_000, 100, 3_600_000),
    smtpUrl: smtpUrl(env.SMTP_URL),
    mailFrom: env.MAIL_FROM || 'content-service <no-reply@content-service.example>',
    metricsToken: metricsToken(env.METRICS_TOKEN),
  };
}

/** METRICS_TOKEN: a secret Prometheus sends; a short one would be guessable. */
function metricsToken(value: string | undefined): string | null {
  if (!value) return null;
  if (value.length < 16)
    throw new ConfigError(`METRICS_TOKEN must be at least 16 characters long, got ${value.length}`);
  return value;
}

/** SMTP_URL: `smtp://[user:password@]host[:port]` or `smtps://…`, or unset. */
function smtpUrl(value: string | undefined): string | null {
  if (!value) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`SMTP_URL must be smtp://host:port or smtps://host:port, got ${value}`);
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:')
    throw new ConfigError(`SMTP_URL must be smtp://host:port or smtps://host:port, got ${url.protocol}`);
  return value;
}

// Starts real servers for tests: on loopback, on a fresh SQLite file or a fresh PostgreSQL database, with the
// demo-free workspace of each test. A response that breaks the contract fails the test that provoked it.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { type OperationId, operationTable } from '../../generated/operations.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import { features } from '../../src/features/index.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import type { Clock } from '../../src/platform/clock.ts';
import type { Role } from '../../src/platform/context.ts';
import { collectByKey } from '../../src/platform/feature.ts';
import { createLogger } from '../../src/platform/logging.ts';
import type { OperationHandler, OperationHandlers } from '../../src/platform/operations.ts';
import { Problem } from '../../src/platform/problems.ts';
import { type RunningServer, startServer } from '../../src/server.ts';
import type { DatabaseKind, Storage } from '../../src/storage/database.ts';

export type { DatabaseKind };

const DEFAULT_POSTGRES = 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

function reachable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) || 5432, timeout: 500 });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

/**
 * The PostgreSQL server of the storage tests: TEST_DATABASE_URL, else the local one when it answers. With
 * REQUIRE_POSTGRES=1 (set by .ci/run) an unreachable server is an error instead of a skip.
 */
export const postgresUrl: string | undefined = await (async () => {
  const url = process.env.TEST_DATABASE_URL ?? DEFAULT_POSTGRES;
  if (await reachable(url)) return url;
  if (process.env.REQUIRE_POSTGRES === '1')
    throw new Error(`REQUIRE_POSTGRES=1 but PostgreSQL at ${url} does not answer`);
  return undefined;
})();

export const redisAvailable: boolean = await (async () => {
  if (await reachable(REDIS_URL)) return true;
  if (process.env.REQUIRE_REDIS === '1') throw new Error(`REQUIRE_REDIS=1 but Redis at ${REDIS_URL} does not answer`);
  return false;
})();

/** The database kinds to run storage tests on: SQLite always, PostgreSQL when reachable. */
export const databaseKinds: DatabaseKind[] = postgresUrl ? ['sqlite', 'postgres'] : ['sqlite'];

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A new, empty database of the kind: a temporary SQLite file, or a new PostgreSQL database on the test server. */
export async function freshDatabase(kind: DatabaseKind): Promise<TestDatabase> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'content-service-'));
    return { url: `sqlite:${join(dir, 'test.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (!postgresUrl) throw new Error('PostgreSQL is not reachable');
  const name = `cs_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/**
 * Opens the one connection of a pool that gives up waiting after a few milliseconds, before the test that needs that
 * limit: on a busy machine, opening a PostgreSQL connection can itself take longer than the limit.
 */
export async function openPoolConnection(storage: Storage, attempts = 20): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await sql`select 1`.execute(storage.db);
      return;
    } catch (error) {
      if (attempt >= attempts) throw error;
    }
  }
}

export interface TestServer extends RunningServer {
  /** The test seam, when started with `handlerOverrides: true`; otherwise a map that refuses replacements. */
  handlerOverrides: HandlerOverrides;
  /** The secret of the workspace's owner key. */
  ownerKey: string;
  workspaceId: string;
  ownerKeyId: string;
  database: TestDatabase;
  /** Responses that broke the contract; `close()` fails when there are any. */
  responseValidationErrors: Array<{ operationId: string | undefined; error: unknown }>;
  /** fetch() against the server with an optional bearer key and JSON body. */
  call(method: string, path: string, options?: CallOptions): Promise<Answer>;
  /** A new key of the test workspace (or another one) with this role; returns its secret and id. */
  createKey(role: Role, options?: { key?: string }): Promise<{ secret: string; id: string }>;
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  rawBody?: string | Uint8Array<ArrayBuffer>;
  headers?: Record<string, string>;
}

export interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: the JSON of whichever operation was called; tests read it as the contract says, and the server validates every answer against the contract
  body: any;
  text: string;
}

export interface TestServerOptions {
  database?: DatabaseKind;
  /** Use this database instead of a fresh one (two servers on one database). */
  databaseUrl?: string;
  clock?: Clock;
  /** The server's logger; by default one at TEST_LOG_LEVEL, silent unless set. */
  logger?: Logger;
  redisUrl?: string;
  rateLimitKeyPrefix?: string;
  env?: Record<string, string>;
  workspace?: boolean;
  /**
   * Starts the server with the HandlerOverrides test seam (below), so that the test can replace handlers while
   * it runs; servers started without it bind the handlers directly, as in production.
   */
  handlerOverrides?: boolean;
}

/**
 * TEST SEAM: replacements for the handlers of operations, looked up on every request so that a test can set and
 * remove one while the server runs (a handler that fails, that breaks its response schema, that waits, or that
 * streams). An operation in `notImplemented` with a replacement is served by it instead of answering 501. Everything
 * around the handler (auth, rate limit, validation, Idempotency-Key, problem documents) stays the real code.
 */
export class HandlerOverrides {
  // biome-ignore lint/suspicious/noExplicitAny: a replacement may serve any operation; the map cannot tie each key to its request type.
  readonly #handlers = new Map<OperationId, OperationHandler<any>>();
  readonly #enabled: boolean;

  constructor(enabled = true) {
    this.#enabled = enabled;
  }

  set<K extends OperationId>(id: K, handler: OperationHandler<K>): this {
    // A server started without the seam binds the features' handlers: a replacement set there would change nothing.
    if (!this.#enabled) throw new Error('start the test server with { handlerOverrides: true } to replace handlers');
    this.#handlers.set(id, handler);
    return this;
  }

  get<K extends OperationId>(id: K): OperationHandler<K> | undefined {
    return this.#handlers.get(id);
  }

  delete(id: OperationId): boolean {
    return this.#handlers.delete(id);
  }

  clear(): void {
    this.#handlers.clear();
  }

  /**
   * The handlers to build the app with: for every operation of the contract, its replacement while one is set, else
   * the feature's handler, else the 501 of an operation not built.
   */
  handlers(): OperationHandlers {
    const own = collectByKey(features, 'handlers') as OperationHandlers;
    // biome-ignore lint/suspicious/noExplicitAny: the handlers of every operation, each bound by its id below.
    const all: Record<string, OperationHandler<any>> = {};
    for (const id of Object.keys(operationTable) as OperationId[]) {
      // biome-ignore lint/suspicious/noExplicitAny: as above.
      const handler = own[id] as OperationHandler<any> | undefined;
      all[id] = (request, context) => {
        const chosen = this.#handlers.get(id) ?? handler;
        if (!chosen) throw new Problem('not_implemented', `${id} is specified but not available on this server yet.`);
        return chosen(request, context);
      };
    }
    return all as OperationHandlers;
  }
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const database = options.databaseUrl
    ? { url: options.databaseUrl, drop: async () => {} }
    : await freshDatabase(options.database ?? 'sqlite');
  const config: Config = loadConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: database.url,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    NODE_ENV: 'test',
    SHUTDOWN_TIMEOUT_MS: '2000',
    ...(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
    ...options.env,
  });
  const responseValidationErrors: TestServer['responseValidationErrors'] = [];
  const handlerOverrides = new HandlerOverrides(options.handlerOverrides === true);
  const running = await startServer(config, {
    clock: options.clock,
    logger: options.logger ?? createLogger(config.logLevel),
    rateLimitKeyPrefix: options.rateLimitKeyPrefix ?? `test:${Math.random().toString(36).slice(2)}`,
    onResponseValidationError: (details) => responseValidationErrors.push(details),
    handlers: options.handlerOverrides ? handlerOverrides.handlers() : undefined,
    // A test file's first call that needs the tokenizer loads it: most files never count a token.
    preload: false,
  });
  // The base URL is known only after listening; links in responses must point at this server.
  running.platform.config.publicBaseUrl = running.url;
  running.platform.config.regionBaseUrls[config.region] = running.url;

  let ownerKey = '';
  let workspaceId = '';
  let ownerKeyId = '';
  if (options.workspace !== false) {
    const created = await createWorkspace(running.platform.db, {
      name: 'Test workspace',
      region: config.region,
      ownerEmail: 'owner@test.example',
      now: running.platform.clock.now(),
    });
    ownerKey = created.secret;
    workspaceId = created.workspace.id;
    ownerKeyId = created.apiKey.id;
  }

  const call: TestServer['call'] = async (method, path, callOptions = {}) => {
    const headers: Record<string, string> = { ...callOptions.headers };
    const key = callOptions.key === undefined ? ownerKey : callOptions.key;
    if (key) headers.Authorization = `Bearer ${key}`;
    let body: string | Uint8Array<ArrayBuffer> | undefined = callOptions.rawBody;
    if (callOptions.body !== undefined) {
      body = JSON.stringify(callOptions.body);
      headers['Content-Type'] ??= 'application/json';
    }
    const response = await fetch(running.url + path, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    if (/json/.test(response.headers.get('content-type') ?? '') && text) parsed = JSON.parse(text);
    return { status: response.status, headers: response.headers, body: parsed, text };
  };

  const createKey: TestServer['createKey'] = async (role, createOptions = {}) => {
    const answer = await call('POST', '/v1/api-keys', {
      key: createOptions.key ?? ownerKey,
      body: { name: `${role} key`, role },
    });
    if (answer.status !== 201) throw new Error(`could not create a ${role} key: ${answer.status} ${answer.text}`);
    return { secret: answer.body.secret as string, id: answer.body.id as string };
  };

  const close = async () => {
    await running.close();
    if (!options.databaseUrl) await database.drop();
    if (responseValidationErrors.length > 0) {
      throw new Error(
        `responses broke the contract: ${JSON.stringify(responseValidationErrors.map((e) => ({ op: e.operationId, error: String((e.error as Error)?.message ?? e.error) })))}`,
      );
    }
  };

  return {
    ...running,
    handlerOverrides,
    close,
    ownerKey,
    workspaceId,
    ownerKeyId,
    database,
    responseValidationErrors,
    call,
    createKey,
  };
}

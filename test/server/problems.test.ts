// Problem documents of the real server:
// - the error catalogue in src/platform/problems.ts is exactly the spec's table in ErrorCode.yaml (codes, statuses);
// - a handler whose answer breaks its schema is answered 500 response_validation_failed and reported; a handler that
//   throws is 500 internal_error without a stack trace (both through the handlerOverrides test seam);
// - a workspace homed in the other region is 421 wrong_region naming that region's base URL;
// - a specified but unbuilt operation (src/handlers.ts `notImplemented`, empty today) is 501 not_implemented;
// - the access log's level says whose fault an answer is: 2xx–4xx info, 501 warn, other 5xx error.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { type ErrorCode, Problem, problemCatalogue, problemTypeBase } from '../../src/platform/problems.ts';
import { startServer } from '../../src/server.ts';
import { type Answer, databaseKinds, HandlerOverrides, startTestServer, type TestServer } from '../support/server.ts';
import { schemaErrors } from '../support/spec.ts';

const REQUEST_ID = /^req_[0-9A-HJKMNP-TV-Z]{26}$/;

function expectProblem(answer: Answer, status: number, code: ErrorCode): void {
  expect({ status: answer.status, code: answer.body?.code }).toEqual({ status, code });
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json(;|$)/);
  expect(answer.headers.get('x-request-id')).toMatch(REQUEST_ID);
  expect(answer.body).toMatchObject({
    type: problemTypeBase + code,
    title: problemCatalogue[code].title,
    status,
    code,
    request_id: answer.headers.get('x-request-id'),
  });
  expect(schemaErrors('/components/schemas/Problem', answer.body)).toEqual([]);
}

describe('the error catalogue', () => {
  const errorCode = parse(
    readFileSync(new URL('../../openapi/components/schemas/ErrorCode.yaml', import.meta.url), 'utf8'),
  ) as { description: string; enum: string[] };
  const table = new Map<string, number>();
  for (const line of errorCode.description.split('\n')) {
    const row = /^\|\s*`([a-z_]+)`\s*\|\s*(\d{3})\s*\|/.exec(line.trim());
    if (row) table.set(row[1]!, Number(row[2]));
  }

  test('the table of ErrorCode.yaml lists every code of its enum once', () => {
    expect(table.size).toBeGreaterThan(30);
    expect([...table.keys()].sort()).toEqual([...errorCode.enum].sort());
  });

  test('problemCatalogue has exactly the codes of the table, with the same statuses', () => {
    const catalogue = Object.fromEntries(Object.entries(problemCatalogue).map(([code, entry]) => [code, entry.status]));
    expect(catalogue).toEqual(Object.fromEntries(table));
  });

  test('every title fits the contract and is distinct', () => {
    const titles = Object.values(problemCatalogue).map((entry) => entry.title);
    for (const title of titles) expect(title.length).toBeLessThanOrEqual(200);
    expect(new Set(titles).size).toBe(titles.length);
  });
});

describe.each(databaseKinds)('problems on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ database: kind, handlerOverrides: true });
  });
  afterAll(async () => {
    server?.handlerOverrides.clear();
    await server?.close();
  });

  describe('through the handlerOverrides test seam', () => {
    test('a handler whose answer breaks its schema is 500 response_validation_failed, and it is reported', async () => {
      server.handlerOverrides.set('getWorkspace', async () => ({
        status: 200,
        contentType: 'application/json',
        body: { id: 'not a workspace', object: 'workspace' },
      }));
      try {
        const answer = await server.call('GET', '/v1/workspace');
        expectProblem(answer, 500, 'response_validation_failed');
        expect(answer.text).not.toContain('not a workspace');
        expect(server.responseValidationErrors).toHaveLength(1);
        expect(server.responseValidationErrors[0]!.operationId).toBe('getWorkspace');
      } finally {
        server.handlerOverrides.delete('getWorkspace');
        // The harness fails close() on reported errors; this one was provoked on purpose.
        server.responseValidationErrors.length = 0;
      }
      expect((await server.call('GET', '/v1/workspace')).status).toBe(200);
    });

    test('a handler that answers a status its operation does not document is 500 response_validation_failed', async () => {
      server.handlerOverrides.set('getWorkspace', async () => ({
        status: 418,
        contentType: 'application/json',
        body: { teapot: true },
      }));
      try {
        expectProblem(await server.call('GET', '/v1/workspace'), 500, 'response_validation_failed');
        expect(server.responseValidationErrors).toHaveLength(1);
      } finally {
        server.handlerOverrides.delete('getWorkspace');
        server.responseValidationErrors.length = 0;
      }
    });

    test('a handler that throws is 500 internal_error, quoting the request id and no stack trace', async () => {
      server.handlerOverrides.set('getWorkspace', async () => {
        throw new Error('database on fire at /srv/secret/path.ts:12');
      });
      try {
        const answer = await server.call('GET', '/v1/workspace');
        expectProblem(answer, 500, 'internal_error');
        expect(answer.body.detail).toContain(answer.headers.get('x-request-id'));
        expect(answer.text).not.toMatch(/on fire|secret|\bat\s/);
      } finally {
        server.handlerOverrides.delete('getWorkspace');
      }
      expect(server.responseValidationErrors).toEqual([]);
    });
  });

  describe('regions', () => {
    test('a workspace homed in us, called on the eu server, is 421 wrong_region with the us base URL', async () => {
      const us = await createWorkspace(server.platform.db, { name: 'US workspace', region: 'us' });
      for (const [method, path, body] of [
        ['GET', '/v1/workspace', undefined],
        ['GET', '/v1/api-keys', undefined],
        ['POST', '/v1/api-keys', { name: 'k', role: 'viewer' }],
      ] as const) {
        const answer = await server.call(method, path, { key: us.secret, body });
        expectProblem(answer, 421, 'wrong_region');
        expect(answer.body).toMatchObject({ region: 'us', base_url: 'https://us.content-service.example' });
        expect(answer.body.detail).toContain(us.workspace.id);
      }
      // Nothing was created in the us workspace.
      const keys = await server.platform.db
        .selectFrom('api_keys')
        .select('id')
        .where('workspace_id', '=', us.workspace.id)
        .execute();
      expect(keys).toHaveLength(1);
    });

    test('on a us server, an eu workspace is sent to the eu base URL, and a us workspace is served', async () => {
      const usServer = await startTestServer({
        database: kind,
        env: { REGION: 'us', EU_BASE_URL: 'https://api.eu.example/' },
      });
      try {
        const eu = await createWorkspace(usServer.platform.db, { name: 'EU workspace', region: 'eu' });
        const answer = await usServer.call('GET', '/v1/workspace', { key: eu.secret });
        expectProblem(answer, 421, 'wrong_region');
        expect(answer.body).toMatchObject({ region: 'eu', base_url: 'https://api.eu.example' });
        const home = await usServer.call('GET', '/v1/workspace');
        expect(home.status).toBe(200);
        expect(home.body).toMatchObject({ region: 'us', base_url: usServer.url });
      } finally {
        await usServer.close();
      }
    });
  });
});

describe('the level of the access log line', () => {
  test('a client error is info, 501 not_implemented is warn, a failure of ours is error', async () => {
    const lines: Array<{ level: number; msg: string; access?: { status: number }; err?: unknown }> = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line));
        done();
      },
    });
    const dir = mkdtempSync(join(tmpdir(), 'content-service-log-levels-'));
    const config = loadConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      DATABASE_URL: `sqlite:${join(dir, 'test.db')}`,
      LOG_LEVEL: 'info',
      NODE_ENV: 'test',
      WEBHOOKS_WORKER: 'false',
    });
    const overrides = new HandlerOverrides();
    const running = await startServer(config, {
      logger: pino({ level: 'info' }, sink),
      rateLimitKeyPrefix: `test:${Math.random()}`,
      handlers: overrides.handlers(),
    });
    try {
      const { secret } = await createWorkspace(running.platform.db, { name: 'Logs', region: 'eu' });
      const get = (path: string, key: string | null = secret) =>
        fetch(running.url + path, { headers: key ? { Authorization: `Bearer ${key}` } : {} }).then((r) => r.status);
      overrides.set('getWorkspace', async () => {
        throw new Error('provoked');
      });
      expect(await get('/v1/workspace')).toBe(500);
      overrides.clear();
      expect(await get('/v1/workspace')).toBe(200);
      expect(await get('/v1/workspace', null)).toBe(401);
      expect(await get('/v1/nowhere')).toBe(404);
      expect(await get('/v1/members?limit=0')).toBe(422);
      // Every operation is built today; an operation listed in src/handlers.ts `notImplemented` answers this.
      overrides.set('listWorkflows', async () => {
        throw new Problem('not_implemented', 'listWorkflows is specified but not available on this server yet.');
      });
      expect(await get('/v1/workflows')).toBe(501);
      overrides.clear();
      await running.close();
      const levelOf = (status: number) =>
        lines
          // The API's requests: not the GET /healthz the server sends itself before it says it is ready.
          .filter((line) => line.access?.status === status && /^GET \/v1\//.test(line.msg))
          .map((line) => pino.levels.labels[line.level]);
      expect({
        200: levelOf(200),
        401: levelOf(401),
        404: levelOf(404),
        422: levelOf(422),
        501: levelOf(501),
        500: levelOf(500),
      }).toEqual({
        200: ['info'],
        401: ['info'],
        404: ['info'],
        422: ['info'],
        501: ['warn'],
        500: ['error'],
      });
      // A 501 is an answer, not an error: no synthetic error object in its line.
      expect(lines.find((line) => line.access?.status === 501)?.err).toBeUndefined();
    } finally {
      await running.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

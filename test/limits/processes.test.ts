import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Catalogue } from '../../src/features/engine/catalogue.ts';
import { priceOf } from '../../src/features/engine/pricing.ts';
import { loadProvidersConfig } from '../../src/features/engine/providers/registry.ts';
import { features } from '../../src/features/index.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { migrate, openStorage, type Storage } from '../../src/storage/database.ts';
import { type FakeProvider, startFakeOpenAi } from '../support/fake-providers.ts';
import { freePort, type ServerProcess, startServerProcess, waitUntilReady } from '../support/processes.ts';
import { freshDatabase, postgresUrl, type TestDatabase } from '../support/server.ts';

// What the fake reports for every call; the engine reserves more (the prompt it counts and all of max_tokens).
const USAGE = { input: 5, output: 10 };

async function call(baseUrl: string, method: string, path: string, key: string, body?: unknown) {
  const response = await fetch(baseUrl + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

describe.skipIf(!postgresUrl)('spend limits across two server processes on one PostgreSQL database', () => {
  let database: TestDatabase;
  let storage: Storage;
  let openai: FakeProvider;
  let a: ServerProcess;
  let b: ServerProcess;
  let ownerKey: string;
  let workspaceId: string;

  beforeAll(async () => {
    openai = await startFakeOpenAi({
      chunkDelayMs: 5,
      reply: () => ({ text: 'Spring sale: everything must go now.', usage: USAGE }),
    });
    database = await freshDatabase('postgres');
    storage = openStorage(database.url);
    await migrate(storage.db, features);
    const created = await createWorkspace(storage.db, {
      name: 'Two processes',
      region: 'eu',
      ownerEmail: 'owner@limits.example',
    });
    [ownerKey, workspaceId] = [created.secret, created.workspace.id];
    const env = { DATABASE_URL: database.url, OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: openai.url };
    a = startServerProcess(env, await freePort());
    b = startServerProcess(env, await freePort());
    await Promise.all([waitUntilReady(a), waitUntilReady(b)]);
  });

  afterAll(async () => {
    for (const server of [a, b]) if (server && server.child.exitCode === null) server.child.kill('SIGKILL');
    await storage?.close();
    await database?.drop();
    await openai?.close();
  });

  test('40 concurrent calls, 20 through each process, pass the workspace limit by less than one call', async () => {
    const catalogue = new Catalogue(
      loadProvidersConfig({ OPENAI_API_KEY: 'sk-test' }, (message) => {
        throw new Error(message);
      }),
    );
    const cost = priceOf(catalogue.get('gpt-4o-mini')!, {
      inputTokens: USAGE.input,
      cachedInputTokens: 0,
      outputTokens: USAGE.output,
    });
    const amount = Math.round(3 * cost * 1e11) / 1e11;
    const limit = await call(a.url, 'POST', '/v1/spend-limits', ownerKey, {
      scope: { type: 'workspace', id: workspaceId },
      amount_usd: amount,
      period: 'day',
    });
    expect(limit.status).toBe(201);
    const body = {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Announce the spring sale.' }],
      max_completion_tokens: 20,
    };
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call(i % 2 === 0 ? a.url : b.url, 'POST', '/v1/chat/completions', ownerKey, body),
      ),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.every((status) => status === 200 || status === 402)).toBe(true);
    expect(statuses).toContain(200);
    expect(statuses).toContain(402);
    for (const refused of answers.filter((answer) => answer.status === 402))
      expect(refused.body.spend_limit.id).toBe(limit.body.id);

    // Then one call after another until the limit refuses: the spend reaches the limit, and passes it by less than one call.
    for (
      let i = 0;
      i < 10 && (await call(i % 2 ? b.url : a.url, 'POST', '/v1/chat/completions', ownerKey, body)).status === 200;
      i++
    );
    const spent = (await call(b.url, 'GET', `/v1/spend-limits/${limit.body.id}`, ownerKey)).body.spent_usd as number;
    expect(spent).toBeGreaterThanOrEqual(amount);
    expect(spent - amount).toBeLessThan(cost);
    const today = new Date().toISOString().slice(0, 10);
    expect(spent).toBe(
      (await call(a.url, 'GET', `/v1/usage?start_date=${today}&end_date=${today}`, ownerKey)).body.totals.cost_usd,
    );
    expect(await storage.db.selectFrom('spend_reservations').select('id').execute()).toEqual([]);
  });
});

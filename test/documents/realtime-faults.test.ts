// What an editor typed survives the process it typed into: two server processes on one PostgreSQL database, joined by
// Redis; editor A types into the first, editor B watches on the second. The first is killed (SIGKILL) as soon as B
// has seen A's last word, and A never comes back: the document read through the second process holds every word.
// Three processes, a kill and Redis on a loaded machine: each step is bounded (its failure says which step and what
// the servers wrote), and a failed attempt is run once more.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { features } from '../../src/features/index.ts';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { migrate, openStorage } from '../../src/storage/database.ts';
import {
  callJson as call,
  freePort,
  type ServerProcess,
  startServerProcess,
  terminate,
  waitUntilReady,
} from '../support/processes.ts';
import { appendParagraph, connectEditor, type Editor } from '../support/realtime.ts';
import { freshDatabase, postgresUrl, REDIS_URL, redisAvailable, type TestDatabase } from '../support/server.ts';

/** Polls `read` until `done` holds: at most `attempts` tries, 100 ms apart; returns the last value read. */
async function until<T>(read: () => Promise<T> | T, done: (value: T) => boolean, attempts = 100): Promise<T> {
  let value = await read();
  for (let i = 0; i < attempts && !done(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    value = await read();
  }
  return value;
}

/** `work`, or a failure naming `what` and what both servers wrote after `ms`: no step of this test waits unbounded. */
async function within<T>(ms: number, what: string, work: Promise<T>, output: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms\n${output()}`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe.runIf(postgresUrl && redisAvailable)('an editor whose server process is killed', () => {
  let database: TestDatabase;
  let key: string;
  let first: ServerProcess;
  let second: ServerProcess;
  const editors: Editor[] = [];

  beforeAll(async () => {
    database = await freshDatabase('postgres');
    const storage = openStorage(database.url);
    await migrate(storage.db, features);
    key = (await createWorkspace(storage.db, { name: 'Killed editor', region: 'eu' })).secret;
    await storage.close();
    const env = { DATABASE_URL: database.url, REDIS_URL };
    first = startServerProcess(env, await freePort());
    second = startServerProcess(env, await freePort());
    await Promise.all([waitUntilReady(first), waitUntilReady(second)]);
  });

  afterAll(async () => {
    for (const editor of editors) editor.close();
    for (const server of [first, second]) if (server && server.child.exitCode === null) server.child.kill('SIGKILL');
    await database?.drop();
  });

  test('every word that reached the other process is in the document read through it', {
    timeout: 120_000,
    retry: 1,
  }, async () => {
    const outputs = () => `first:\n${first.output()}\nsecond:\n${second.output()}`;
    const created = await within(
      20_000,
      'creating the document',
      call(first.url, 'POST', '/v1/documents', key, { title: 'Typed', content: 'Start.' }),
      outputs,
    );
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const typist = connectEditor(first.url, id, created.body.edit_token.token);
    editors.push(typist);
    await within(20_000, 'the typist connecting', typist.ready, outputs);
    const watcherToken = (
      await within(
        20_000,
        'an edit token',
        call(second.url, 'POST', `/v1/documents/${id}/edit-token`, key, {}),
        outputs,
      )
    ).body.token;
    const watcher = connectEditor(second.url, id, watcherToken);
    editors.push(watcher);
    await within(20_000, 'the watcher connecting', watcher.ready, outputs);

    const words = Array.from({ length: 30 }, (_, i) => `word${i}`);
    for (const word of words) {
      appendParagraph(typist.doc, word);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seen = await until(
      () => watcher.text(),
      (text) => words.every((word) => text.includes(word)),
    );
    expect(words.filter((word) => !seen.includes(word))).toEqual([]);
    // At once: nothing the first process had not saved yet may be missed.
    first.child.kill('SIGKILL');
    typist.close();

    const read = await until(
      async () =>
        (await within(20_000, 'reading the document', call(second.url, 'GET', `/v1/documents/${id}`, key), outputs))
          .body.content as string,
      (content) => words.every((word) => content.includes(word)),
    );
    expect(words.filter((word) => !read.includes(word))).toEqual([]);
    expect(await terminate(second), second.output()).toBe(0);
  });
});

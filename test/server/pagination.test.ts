// Cursor pagination as DESIGN.md and the contract describe it, on the real server (SQLite and PostgreSQL), through
// listApiKeys (ordered by id) and listMembers (ordered by added_at): `limit` 1..100 with default 20, newest first,
// `next_cursor` null exactly on the last page, a `Link: <…>; rel="next"` header exactly when there is a next page
// whose URL keeps the filters and answers that page; walking every page returns every item once; a cursor keeps
// its position when items are added or removed meanwhile; a cursor the API did not issue and an out-of-range limit
// are 422 validation_failed.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/platform/clock.ts';
import { type Answer, databaseKinds, startTestServer, type TestServer } from '../support/server.ts';

type Role = 'owner' | 'admin' | 'editor' | 'viewer';
const roles: Role[] = ['admin', 'editor', 'viewer'];

/** The URL of the `Link: <…>; rel="next"` header, or null when there is none. */
function nextLink(answer: Answer): URL | null {
  const header = answer.headers.get('link');
  if (header === null) return null;
  const match = /^<([^>]+)>; rel="next"$/.exec(header);
  expect(match, `Link header ${header}`).not.toBeNull();
  return new URL(match![1]!);
}

describe.each(databaseKinds)('pagination on %s', (kind) => {
  let server: TestServer;
  const clock = new ManualClock();
  /** Every key of the workspace, oldest first: the owner key, then the ones created here. */
  const keys: Array<{ id: string; role: Role }> = [];

  beforeAll(async () => {
    server = await startTestServer({ database: kind, clock });
    keys.push({ id: server.ownerKeyId, role: 'owner' });
    for (let i = 0; i < 45; i++) {
      const role = roles[i % roles.length]!;
      // Half of the keys share an instant with the previous one: the order must not depend on distinct times.
      if (i % 2 === 0) clock.advance(1000);
      const answer = await server.call('POST', '/v1/api-keys', { body: { name: `key ${i}`, role } });
      expect(answer.status).toBe(201);
      keys.push({ id: answer.body.id, role });
    }
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Follows the Link headers from `path`; checks on every page that Link and next_cursor agree. */
  async function walk(path: string, options: { maxPages?: number } = {}): Promise<{ ids: string[]; pages: Answer[] }> {
    const pages: Answer[] = [];
    let current: string | null = path;
    for (let i = 0; current !== null && i < (options.maxPages ?? 60); i++) {
      const answer = await server.call('GET', current);
      expect({ current, status: answer.status, problem: answer.status === 200 ? undefined : answer.body }).toEqual({
        current,
        status: 200,
        problem: undefined,
      });
      pages.push(answer);
      const link = nextLink(answer);
      expect(link === null).toBe(answer.body.next_cursor === null);
      if (link) {
        expect(link.origin).toBe(server.url);
        expect(link.pathname).toBe(new URL(path, server.url).pathname);
        expect(link.searchParams.get('cursor')).toBe(answer.body.next_cursor);
      }
      current = link ? link.pathname + link.search : null;
    }
    expect(current, `more pages than expected from ${path}`).toBeNull();
    return { ids: pages.flatMap((p) => p.body.data.map((item: { id: string }) => item.id)), pages };
  }

  const newestFirst = () => keys.map((k) => k.id).reverse();

  describe('API keys', () => {
    test('the first page has 20 items by default, a next_cursor and a Link to the next page', async () => {
      const answer = await server.call('GET', '/v1/api-keys');
      expect(answer.status).toBe(200);
      expect(answer.body.data.map((k: { id: string }) => k.id)).toEqual(newestFirst().slice(0, 20));
      expect(answer.body.next_cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      const link = nextLink(answer)!;
      expect(link.toString()).toBe(`${server.url}/v1/api-keys?cursor=${answer.body.next_cursor}`);
      const second = await server.call('GET', link.pathname + link.search);
      expect(second.body.data.map((k: { id: string }) => k.id)).toEqual(newestFirst().slice(20, 40));
    });

    test.each([1, 7, 20, 45, 46])(
      'walking every page with limit=%i returns every key once, newest first',
      async (limit) => {
        const { ids, pages } = await walk(`/v1/api-keys?limit=${limit}`);
        expect(ids).toEqual(newestFirst());
        expect(pages.length).toBe(Math.ceil(keys.length / limit));
        for (const page of pages.slice(0, -1)) expect(page.body.data.length).toBe(limit);
        const last = pages[pages.length - 1]!;
        expect(last.body.next_cursor).toBeNull();
        expect(last.headers.get('link')).toBeNull();
      },
    );

    test('limit=100 returns everything on one page, with no next_cursor and no Link', async () => {
      const answer = await server.call('GET', '/v1/api-keys?limit=100');
      expect(answer.body.data.map((k: { id: string }) => k.id)).toEqual(newestFirst());
      expect(answer.body.next_cursor).toBeNull();
      expect(answer.headers.get('link')).toBeNull();
    });

    test('next_cursor passed by hand gives the same pages as the Link', async () => {
      const ids: string[] = [];
      let cursor: string | null = null;
      for (let i = 0; i < 20; i++) {
        const answer: Answer = await server.call('GET', `/v1/api-keys?limit=10${cursor ? `&cursor=${cursor}` : ''}`);
        ids.push(...answer.body.data.map((k: { id: string }) => k.id));
        cursor = answer.body.next_cursor;
        if (cursor === null) break;
      }
      expect(cursor).toBeNull();
      expect(ids).toEqual(newestFirst());
    });

    test('the Link keeps the filters, and the pages it leads to stay filtered', async () => {
      const first = await server.call('GET', '/v1/api-keys?role=editor&status=active&limit=4');
      const link = nextLink(first)!;
      expect(Object.fromEntries(link.searchParams)).toEqual({
        role: 'editor',
        status: 'active',
        limit: '4',
        cursor: first.body.next_cursor,
      });

      const { ids, pages } = await walk('/v1/api-keys?role=editor&status=active&limit=4');
      const editors = newestFirst().filter((id) => keys.find((k) => k.id === id)!.role === 'editor');
      expect(ids).toEqual(editors);
      for (const page of pages)
        expect(
          page.body.data.every((k: { role: string; status: string }) => k.role === 'editor' && k.status === 'active'),
        ).toBe(true);
    });

    test('a cursor keeps its place when keys are created after it was issued', async () => {
      const first = await server.call('GET', '/v1/api-keys?limit=5');
      const created = await server.call('POST', '/v1/api-keys', {
        body: { name: 'created meanwhile', role: 'viewer' },
      });
      expect(created.status).toBe(201);
      const link = nextLink(first)!;
      const second = await server.call('GET', link.pathname + link.search);
      expect(second.body.data.map((k: { id: string }) => k.id)).toEqual(newestFirst().slice(5, 10));
      // Revoked, not deleted: it stays listed; from here on it is part of the list.
      expect((await server.call('DELETE', `/v1/api-keys/${created.body.id}`)).status).toBe(200);
      keys.push({ id: created.body.id, role: 'viewer' });
      const again = await server.call('GET', '/v1/api-keys?limit=1');
      expect(again.body.data.map((k: { id: string }) => k.id)).toEqual([created.body.id]);
    });
  });

  describe('members', () => {
    /** Every member, in the order they were added; the workspace's creator first. */
    const members: string[] = [];

    beforeAll(async () => {
      const list = await server.call('GET', '/v1/members');
      members.push(...list.body.data.map((m: { id: string }) => m.id));
      expect(members.length).toBe(1);
      for (let i = 0; i < 24; i++) {
        // Groups of three share an instant.
        if (i % 3 === 0) clock.advance(1000);
        const answer = await server.call('POST', '/v1/members', {
          body: { email: `member-${i}@pages.example`, role: roles[i % roles.length] },
        });
        expect(answer.status).toBe(201);
        members.push(answer.body.id);
      }
    });

    const addedNewestFirst = async () => {
      const all = await server.call('GET', '/v1/members?limit=100');
      return all.body.data as Array<{ id: string; added_at: string }>;
    };

    test('walking every page returns every member once, most recently added first', async () => {
      const full = await addedNewestFirst();
      expect(full.map((m) => m.id).sort()).toEqual([...members].sort());
      const times = full.map((m) => m.added_at);
      expect(times).toEqual([...times].sort().reverse());

      for (const limit of [1, 2, 3, 10, 25]) {
        const { ids } = await walk(`/v1/members?limit=${limit}`);
        expect({ limit, ids }).toEqual({ limit, ids: full.map((m) => m.id) });
      }
    });

    test('the default page is 20 members, and the role filter is kept in the Link', async () => {
      const first = await server.call('GET', '/v1/members');
      expect(first.body.data.length).toBe(20);
      expect(nextLink(first)).not.toBeNull();

      const { ids } = await walk('/v1/members?role=viewer&limit=3');
      const viewers = (await server.call('GET', '/v1/members?role=viewer&limit=100')).body.data.map(
        (m: { id: string }) => m.id,
      );
      expect(viewers.length).toBe(8);
      expect(ids).toEqual(viewers);
      const firstFiltered = await server.call('GET', '/v1/members?role=viewer&limit=3');
      expect(nextLink(firstFiltered)!.searchParams.get('role')).toBe('viewer');
    });

    test('a member added again is listed by when it was added, not by its older user id', async () => {
      const returning = members[3]!;
      expect((await server.call('DELETE', `/v1/members/${returning}`)).status).toBe(204);
      clock.advance(1000);
      const again = await server.call('POST', '/v1/members', {
        body: { email: 'member-2@pages.example', role: 'viewer' },
      });
      expect(again.body.id).toBe(returning);
      const first = await server.call('GET', '/v1/members?limit=1');
      expect(first.body.data[0].id).toBe(returning);
      const { ids } = await walk('/v1/members?limit=4');
      expect(ids.filter((id) => id === returning)).toEqual([returning]);
      expect(ids.length).toBe(members.length);
    });

    test('a cursor keeps its place when the member it points at is removed', async () => {
      const full = (await addedNewestFirst()).map((m) => m.id);
      const first = await server.call('GET', '/v1/members?limit=4');
      const lastOfPage = first.body.data[3].id as string;
      expect((await server.call('DELETE', `/v1/members/${lastOfPage}`)).status).toBe(204);
      const link = nextLink(first)!;
      const second = await server.call('GET', link.pathname + link.search);
      expect(second.body.data.map((m: { id: string }) => m.id)).toEqual(full.slice(4, 8));
    });
  });

  describe('invalid parameters', () => {
    const notACursor = [
      'garbage',
      Buffer.from('not json').toString('base64url'),
      Buffer.from('null').toString('base64url'),
      Buffer.from('{"v":2,"id":"key_01M7Q2V3GK111YYJGRJ8GTSVW2"}').toString('base64url'),
      Buffer.from('{"v":1,"id":42}').toString('base64url'),
      Buffer.from('{"v":1,"id":"usr_01KY51922251RZN0J0KZDFGA75","at":7}').toString('base64url'),
      'not+a/cursor=',
      'x'.repeat(513),
    ];

    test.each(notACursor.map((cursor) => [cursor.slice(0, 40), cursor]))(
      'cursor %s is 422 validation_failed at query/cursor',
      async (_label, cursor) => {
        for (const path of ['/v1/api-keys', '/v1/members']) {
          const answer = await server.call('GET', `${path}?cursor=${encodeURIComponent(cursor)}`);
          expect({
            path,
            status: answer.status,
            code: answer.body.code,
            pointers: answer.body.errors?.map((e: { pointer: string }) => e.pointer),
          }).toEqual({
            path,
            status: 422,
            code: 'validation_failed',
            pointers: ['query/cursor'],
          });
        }
      },
    );

    test.each(['0', '101', '-1', '2.5', 'ten', ''])(
      'limit=%s is 422 validation_failed at query/limit',
      async (limit) => {
        for (const path of ['/v1/api-keys', '/v1/members', '/v1/audit-logs', '/v1/request-logs']) {
          const answer = await server.call('GET', `${path}?limit=${limit}`);
          expect({
            path,
            status: answer.status,
            code: answer.body.code,
            pointers: answer.body.errors?.map((e: { pointer: string }) => e.pointer),
          }).toEqual({
            path,
            status: 422,
            code: 'validation_failed',
            pointers: ['query/limit'],
          });
        }
      },
    );

    test('limit=1 and limit=100 are the bounds that are accepted', async () => {
      expect((await server.call('GET', '/v1/api-keys?limit=1')).body.data.length).toBe(1);
      expect((await server.call('GET', '/v1/api-keys?limit=100')).status).toBe(200);
    });
  });
});

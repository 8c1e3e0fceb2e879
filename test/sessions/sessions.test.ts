// People's sessions against a real server, on SQLite and PostgreSQL: a one-time sign-in link starts a session (its
// cookie HttpOnly, SameSite=Lax, not Secure on plain-HTTP loopback) that stands in for an API key as the member with
// the member's role; a used, expired or tampered link is refused; a state-changing request with the cookie needs the
// session's CSRF token and this server's origin; signing out, and removing the member (through the API or by the
// directory), ends the session; sign-ins land on paths of this server only.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { run as runCli } from '../../src/cli.ts';
import { localPath } from '../../src/features/sessions/index.ts';
import { createDirectoryToken, PATCH_OP, SCIM_JSON, USER_SCHEMA } from '../directory/support.ts';
import { expectProblem } from '../support/expect.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { addMember, redeem, signIn, signInLink } from './support.ts';

describe.each(databaseKinds)('sessions on %s', (database) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ database });
  });
  afterAll(async () => {
    await server?.close();
  });

  test('a sign-in link shows who signs in, then its POST starts a session and lands on the dashboard', async () => {
    const url = await signInLink(server, 'owner@test.example');
    expect(url).toMatch(new RegExp(`^${server.url}/sign-in/link\\?token=cs_link_[0-9A-Za-z]{40}$`));
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(await page.text()).toContain('owner@test.example');
    // Opening the page used nothing up.
    const answer = await redeem(server, new URL(url).searchParams.get('token')!);
    expect(answer.status).toBe(303);
    expect(answer.headers.get('location')).toBe('/dashboard');
    const cookie = answer.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^cs_session=cs_sess_[0-9A-Za-z]{40}; Path=\/; Expires=/);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Lax');
    expect(cookie).not.toContain('Secure');

    const headers = { Cookie: cookie.split(';')[0]! };
    const current = await server.call('GET', '/v1/session', { key: null, headers });
    expect(current.status).toBe(200);
    expect(current.body).toMatchObject({
      object: 'session',
      method: 'link',
      current: true,
      role: 'owner',
      user: { email: 'owner@test.example' },
      workspace: { id: server.workspaceId, name: 'Test workspace' },
    });
    expect(Date.parse(current.body.expires_at) - Date.parse(current.body.created_at)).toBe(7 * 24 * 3_600_000);
    expect((await server.call('GET', '/v1/workspace', { key: null, headers })).status).toBe(200);
    // The session's own key is nobody's to manage: not in the key list.
    const keys = await server.call('GET', '/v1/api-keys?limit=100');
    expect(keys.body.data.some((key: { name: string }) => key.name.includes('signed in'))).toBe(false);
    // An API key's request has no session.
    expectProblem(await server.call('GET', '/v1/session'), 404, 'not_found');
  });

  test('a used, expired or tampered link is refused', async () => {
    const token = new URL(await signInLink(server, 'owner@test.example')).searchParams.get('token')!;
    expect((await redeem(server, token)).status).toBe(303);
    const used = await redeem(server, token);
    expect(used.status).toBe(403);
    expect(used.headers.get('set-cookie')).toBeNull();
    expect((await fetch(`${server.url}/sign-in/link?token=${token}`)).status).toBe(403);

    const fresh = new URL(await signInLink(server, 'owner@test.example')).searchParams.get('token')!;
    const tampered = `${fresh.slice(0, -1)}${fresh.endsWith('a') ? 'b' : 'a'}`;
    expect((await redeem(server, tampered)).status).toBe(403);
    expect((await redeem(server, `${fresh}x`)).status).toBe(403);

    const old = new URL(await signInLink(server, 'owner@test.example')).searchParams.get('token')!;
    await server.platform.db
      .updateTable('sign_in_links')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('used_at', 'is', null)
      .execute();
    expect((await redeem(server, old)).status).toBe(403);
    // The tampered link's own token still works: refusing the others used nothing up.
    expect((await redeem(server, fresh)).status).toBe(403);
  });

  test("a sign-in posted from another site's page is refused (login CSRF)", async () => {
    const token = new URL(await signInLink(server, 'owner@test.example')).searchParams.get('token')!;
    const refused = await redeem(server, token, 'https://evil.example');
    expect(refused.status).toBe(403);
    expect(refused.headers.get('set-cookie')).toBeNull();
    const crossSite = await fetch(`${server.url}/sign-in/link`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Sec-Fetch-Site': 'cross-site', Origin: 'null' },
      body: new URLSearchParams({ token }).toString(),
    });
    expect(crossSite.status).toBe(403);
    expect((await redeem(server, token)).status).toBe(303);
  });

  test('CSRF: a change made with the session needs its token and this origin; a key needs neither', async () => {
    const session = await signIn(server, 'owner@test.example');
    const body = { name: 'Launch', description: 'Spring launch' };
    expectProblem(await session.call('POST', '/v1/projects', { body, csrf: null }), 403, 'csrf_check_failed');
    expectProblem(await session.call('POST', '/v1/projects', { body, csrf: 'x'.repeat(43) }), 403, 'csrf_check_failed');
    expectProblem(
      await session.call('POST', '/v1/projects', { body, headers: { Origin: 'https://evil.example' } }),
      403,
      'csrf_check_failed',
    );
    for (const site of ['cross-site', 'same-site']) {
      expectProblem(
        await session.call('POST', '/v1/projects', { body, headers: { 'Sec-Fetch-Site': site, Origin: 'null' } }),
        403,
        'csrf_check_failed',
      );
    }
    // A page of ours with Referrer-Policy: no-referrer posts with Origin: null and Sec-Fetch-Site: same-origin.
    const fromOurPage = await session.call('POST', '/v1/projects', {
      body: { name: 'From our page' },
      headers: { 'Sec-Fetch-Site': 'same-origin', Origin: 'null' },
    });
    expect(fromOurPage.status, fromOurPage.text).toBe(201);
    expectProblem(await session.call('DELETE', '/v1/session', { csrf: null }), 403, 'csrf_check_failed');
    const created = await session.call('POST', '/v1/projects', { body, headers: { Origin: server.url } });
    expect(created.status, created.text).toBe(201);
    // What the session did is recorded as its person's.
    const audit = await server.call('GET', `/v1/audit-logs?action=project.created&limit=1`);
    expect(audit.body.data[0].actor).toMatchObject({ type: 'api_key', role: 'owner' });
    expect(audit.body.data[0].actor.api_key_name).toContain('owner@test.example');
    // Reads need no token; a key needs none at all.
    expect((await session.call('GET', '/v1/projects', { csrf: null })).status).toBe(200);
    expect((await server.call('POST', '/v1/projects', { body: { name: 'Keyed' } })).status).toBe(201);
  });

  test('a session acts with the member role: a viewer reads but cannot change', async () => {
    await addMember(server, 'vera@test.example', 'viewer');
    const viewer = await signIn(server, 'vera@test.example');
    expect((await viewer.call('GET', '/v1/projects')).status).toBe(200);
    const refused = await viewer.call('POST', '/v1/projects', { body: { name: 'No' } });
    expectProblem(refused, 403, 'insufficient_role');
    // The person used no key: the refusal speaks of their role.
    expect(refused.body).toMatchObject({
      title: 'Your role does not allow this operation',
      detail: 'This operation needs the editor role or higher; your role is viewer.',
    });
    const viewerKey = await server.createKey('viewer');
    const keyed = await server.call('POST', '/v1/projects', { key: viewerKey.secret, body: { name: 'No' } });
    expect(keyed.body.detail).toBe("This operation needs the editor role or higher; the key's role is viewer.");
  });

  test("a signed-in person's refusals of a role's ceiling name the person, not a key", async () => {
    await addMember(server, 'adam@test.example', 'admin');
    const admin = await signIn(server, 'adam@test.example');
    const ownerKey = await admin.call('POST', '/v1/api-keys', { body: { name: 'Too high', role: 'owner' } });
    expectProblem(ownerKey, 403, 'insufficient_role');
    expect(ownerKey.body.detail).toBe('A signed-in admin cannot create a key with the owner role.');
    const owner = await admin.call('POST', '/v1/members', { body: { email: 'olga@test.example', role: 'owner' } });
    expectProblem(owner, 403, 'insufficient_role');
    expect(owner.body.detail).toBe('A signed-in admin cannot add a member with the owner role.');
    const adminKey = await server.createKey('admin');
    const keyed = await server.call('POST', '/v1/api-keys', {
      key: adminKey.secret,
      body: { name: 'Too high', role: 'owner' },
    });
    expect(keyed.body.detail).toBe('An admin key cannot create a key with the owner role.');
  });

  test('listing one’s sessions, signing out of another and of the current one', async () => {
    await addMember(server, 'sam@test.example', 'editor');
    const laptop = await signIn(server, 'sam@test.example');
    const phone = await signIn(server, 'sam@test.example');
    const list = await laptop.call('GET', '/v1/sessions');
    expect(list.status).toBe(200);
    expect(list.body.data.map((s: { id: string }) => s.id)).toEqual([phone.sessionId, laptop.sessionId]);
    expect(list.body.data.map((s: { current: boolean }) => s.current)).toEqual([false, true]);
    // Another person's session is not found.
    const owner = await signIn(server, 'owner@test.example');
    expectProblem(await owner.call('DELETE', `/v1/sessions/${phone.sessionId}`), 404, 'not_found');

    expect((await laptop.call('DELETE', `/v1/sessions/${phone.sessionId}`)).status).toBe(204);
    expectProblem(await phone.call('GET', '/v1/projects'), 401, 'unauthenticated');
    const out = await laptop.call('DELETE', '/v1/session');
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/^cs_session=; Path=\/; Expires=Thu, 01 Jan 1970/);
    expectProblem(await laptop.call('GET', '/v1/projects'), 401, 'unauthenticated');
    // A key lists its member's sessions: the owner's key sees the owner's.
    const ownerSessions = await server.call('GET', '/v1/sessions?limit=100');
    expect(ownerSessions.body.data.some((s: { id: string }) => s.id === owner.sessionId)).toBe(true);
    expect(ownerSessions.body.data.every((s: { current: boolean }) => !s.current)).toBe(true);
  });

  test('removing the member through the API ends their session at once, and adding them back does not revive it', async () => {
    const userId = await addMember(server, 'rob@test.example', 'editor');
    const session = await signIn(server, 'rob@test.example');
    expect((await session.call('GET', '/v1/projects')).status).toBe(200);
    expect((await server.call('DELETE', `/v1/members/${userId}`)).status).toBe(204);
    expectProblem(await session.call('GET', '/v1/projects'), 401, 'unauthenticated');
    await addMember(server, 'rob@test.example', 'editor');
    expectProblem(await session.call('GET', '/v1/projects'), 401, 'unauthenticated');
  });

  test('a directory that deactivates or deletes its user ends their sessions', async () => {
    const token = await createDirectoryToken(server, 'okta');
    const scim = (method: string, path: string, body?: unknown) =>
      fetch(`${token.scim_base_url}${path}`, {
        method,
        headers: { Authorization: `Bearer ${token.secret}`, 'Content-Type': SCIM_JSON, Accept: SCIM_JSON },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const user = async (email: string) => {
      const created = await scim('POST', '/Users', {
        schemas: [USER_SCHEMA],
        userName: email,
        emails: [{ primary: true, value: email, type: 'work' }],
        active: true,
      });
      expect(created.status).toBe(201);
      return ((await created.json()) as { id: string }).id;
    };
    const deactivated = await user('dana@test.example');
    const deleted = await user('dora@test.example');
    const dana = await signIn(server, 'dana@test.example');
    const dora = await signIn(server, 'dora@test.example');
    expect((await dana.call('GET', '/v1/members?limit=100')).status).toBe(200);
    const members = await dora.call('GET', '/v1/members?limit=100');
    expect(members.body.data.find((m: { email: string }) => m.email === 'dora@test.example').scim_source).toBe('okta');

    const patched = await scim('PATCH', `/Users/${deactivated}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { active: false } }],
    });
    expect(patched.status).toBe(200);
    expectProblem(await dana.call('GET', '/v1/members'), 401, 'unauthenticated');

    expect((await scim('DELETE', `/Users/${deleted}`)).status).toBe(204);
    expectProblem(await dora.call('GET', '/v1/members'), 401, 'unauthenticated');
  });

  test('a session ends after 12 hours without a request and 7 days after it began', async () => {
    const idle = await signIn(server, 'owner@test.example');
    const old = await signIn(server, 'owner@test.example');
    const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3_600_000).toISOString();
    await server.platform.db
      .updateTable('sessions')
      .set({ last_seen_at: hoursAgo(12.1) })
      .where('id', '=', idle.sessionId)
      .execute();
    await server.platform.db
      .updateTable('sessions')
      .set({ expires_at: hoursAgo(0.01) })
      .where('id', '=', old.sessionId)
      .execute();
    expectProblem(await idle.call('GET', '/v1/workspace'), 401, 'unauthenticated');
    expectProblem(await old.call('GET', '/v1/workspace'), 401, 'unauthenticated');
    // Kept 30 days for nothing but the record, then deleted with the links.
    const { deleteOldSessions } = await import('../../src/features/sessions/retention.ts');
    await deleteOldSessions(server.platform.db, new Date(Date.now() + 31 * 24 * 3_600_000));
    const left = await server.platform.db.selectFrom('sessions').select('id').where('id', '=', old.sessionId).execute();
    expect(left).toEqual([]);
  });

  test('sign-ins land on paths of this server only', async () => {
    const token = new URL(
      await signInLink(server, 'owner@test.example', '/approvals/run_1/step?expires=1&signature=x'),
    ).searchParams.get('token')!;
    const landed = await redeem(server, token);
    expect(landed.headers.get('location')).toBe('/approvals/run_1/step?expires=1&signature=x');

    const base = server.url;
    for (const attempt of [
      'https://evil.example/',
      '//evil.example/x',
      '/\\evil.example',
      '\\\\evil.example',
      'javascript:alert(1)',
      '/%0d%0aLocation:%20https://evil.example',
      ' /dashboard',
      'dashboard',
      '/ok\u0000',
      '/ok\t//evil.example',
    ]) {
      if (attempt === '/%0d%0aLocation:%20https://evil.example') {
        // Percent-encoded, it is a path of this server (the browser never decodes it into a header).
        expect(localPath(attempt, base)).toBe(attempt);
        continue;
      }
      expect(localPath(attempt, base), attempt).toBeNull();
    }
    expect(localPath('/dashboard#/members', base)).toBe('/dashboard#/members');
  });

  test('POST /v1/sessions/links refuses a return_to elsewhere, and answers 422 email_not_configured without SMTP_URL', async () => {
    for (const returnTo of ['https://evil.example/', '//evil.example', '/\\evil.example']) {
      const answer = await server.call('POST', '/v1/sessions/links', {
        key: null,
        body: { email: 'owner@test.example', workspace_id: server.workspaceId, return_to: returnTo },
      });
      expectProblem(answer, 422, 'validation_failed');
      expect(answer.body.errors[0].pointer).toBe('/return_to');
    }
    expectProblem(
      await server.call('POST', '/v1/sessions/links', {
        key: null,
        body: { email: 'owner@test.example', workspace_id: server.workspaceId },
      }),
      422,
      'email_not_configured',
    );
  });

  test('the CLI prints a link that signs in, and refuses a return-to elsewhere', async () => {
    const env = { DATABASE_URL: server.database.url, PUBLIC_BASE_URL: server.url, LOG_LEVEL: 'silent' };
    const out: string[] = [];
    const err: string[] = [];
    const sink = (into: string[]) => ({ write: (chunk: string) => (into.push(chunk), true) }) as NodeJS.WritableStream;
    expect(await runCli(['login-link', '--email', 'OWNER@test.example'], env, sink(out), sink(err))).toBe(0);
    const printed = JSON.parse(out.join(''));
    expect(printed).toMatchObject({ workspace_id: server.workspaceId, url: expect.stringMatching(/^http/) });
    const landed = await redeem(server, new URL(printed.url).searchParams.get('token')!);
    expect(landed.status).toBe(303);

    expect(
      await runCli(
        ['login-link', '--email', 'owner@test.example', '--return-to', 'https://evil.example'],
        env,
        sink(out),
        sink(err),
      ),
    ).toBe(2);
    expect(await runCli(['login-link', '--email', 'nobody@test.example'], env, sink(out), sink(err))).toBe(1);
    expect(err.join('')).toContain('nobody@test.example is not a member');
  });
});

// Directory tokens through the API (owners only; the secret shown once and kept hashed; rotation with a 24-hour grace;
// revocation at once; audited) and the SCIM endpoints' refusals: no token, an unknown one, an API key, a revoked
// token, a previous secret past its grace, and a token of another workspace are each the same SCIM 401.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { ManualClock } from '../../src/platform/clock.ts';
import { expectProblem } from '../support/expect.ts';
import { capturedLogger } from '../support/logs.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { createDirectoryToken, expectScimError, GROUP_SCHEMA, scimClient, USER_SCHEMA } from './support.ts';

describe.each(databaseKinds)('directory tokens on %s', (kind) => {
  let server: TestServer;
  const clock = new ManualClock();

  const { logger, lines } = capturedLogger<{ msg: string; access?: { path: string; status: number } }>('info');

  beforeAll(async () => {
    server = await startTestServer({ database: kind, clock, logger });
  });
  afterAll(async () => {
    await server?.close();
  });

  const usersOf = (base: string, token: string | null) => scimClient(base, token)('GET', '/Users');

  test('an owner creates a token: its secret once, its hash stored, its SCIM base URL, an audit entry', async () => {
    const answer = await server.call('POST', '/v1/directory-tokens', {
      body: { name: 'Okta production', directory: 'okta' },
    });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({
      id: expect.stringMatching(/^dtk_[0-9A-HJKMNP-TV-Z]{26}$/),
      object: 'directory_token',
      name: 'Okta production',
      directory: 'okta',
      status: 'active',
      scim_base_url: `${server.url}/scim/v2/${server.workspaceId}`,
      redacted_value: `cs_scim_…${answer.body.secret.slice(-4)}`,
      last4: answer.body.secret.slice(-4),
      created_at: clock.now().toISOString(),
      updated_at: clock.now().toISOString(),
      created_by_api_key_id: server.ownerKeyId,
      last_used_at: null,
      rotated_at: null,
      previous_secret_expires_at: null,
      revoked_at: null,
      secret: expect.stringMatching(/^cs_scim_[0-9A-Za-z]{40}$/),
    });
    expect(answer.headers.get('location')).toBe(`/v1/directory-tokens/${answer.body.id}`);
    const { secret, ...shown } = answer.body;
    const read = await server.call('GET', `/v1/directory-tokens/${answer.body.id}`);
    expect(read.body).toEqual(shown);
    const row = await server.platform.db
      .selectFrom('directory_tokens')
      .selectAll()
      .where('id', '=', answer.body.id)
      .executeTakeFirstOrThrow();
    expect(row.secret_hash).toBe(createHash('sha256').update(secret).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(secret);

    expect((await usersOf(answer.body.scim_base_url, secret)).status).toBe(200);
    expect((await server.call('GET', `/v1/directory-tokens/${answer.body.id}`)).body.last_used_at).toBe(
      new Date(Math.floor(clock.now().getTime() / 60_000) * 60_000).toISOString(),
    );
    const audit = await server.call('GET', '/v1/audit-logs?limit=10');
    expect(audit.body.data[0]).toMatchObject({
      action: 'directory_token.created',
      target: { type: 'directory_token', id: answer.body.id, display_name: 'Okta production' },
      details: { name: 'Okta production', directory: 'okta' },
    });
  });

  test('only owners manage directory tokens; a directory name is lower-case letters, digits and dashes', async () => {
    const admin = await server.createKey('admin');
    expectProblem(await server.call('GET', '/v1/directory-tokens', { key: admin.secret }), 403, 'insufficient_role');
    expectProblem(
      await server.call('POST', '/v1/directory-tokens', { key: admin.secret, body: { name: 'x', directory: 'okta' } }),
      403,
      'insufficient_role',
    );
    expectProblem(
      await server.call('POST', '/v1/directory-tokens', { body: { name: 'x', directory: 'Entra ID' } }),
      422,
      'validation_failed',
    );
  });

  test('rotation: the new secret works, the previous one for 24 hours more, then not', async () => {
    const token = await createDirectoryToken(server, 'entra-id');
    clock.advance(1000);
    const rotated = await server.call('POST', `/v1/directory-tokens/${token.id}/rotate`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(token.secret);
    expect(rotated.body.previous_secret_expires_at).toBe(new Date(clock.now().getTime() + 86_400_000).toISOString());
    expect((await usersOf(token.scim_base_url, rotated.body.secret)).status).toBe(200);
    expect((await usersOf(token.scim_base_url, token.secret)).status).toBe(200);
    clock.advance(86_400_000);
    expectScimError(await usersOf(token.scim_base_url, token.secret), 401);
    expect((await usersOf(token.scim_base_url, rotated.body.secret)).status).toBe(200);
    const audit = await server.call('GET', '/v1/audit-logs?limit=10');
    expect(audit.body.data.map((e: { action: string }) => e.action)).toContain('directory_token.rotated');
  });

  test('revocation is immediate and answered with the token; a revoked token cannot be rotated', async () => {
    const token = await createDirectoryToken(server, 'okta');
    const revoked = await server.call('DELETE', `/v1/directory-tokens/${token.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ status: 'revoked', revoked_at: clock.now().toISOString() });
    expect((await server.call('DELETE', `/v1/directory-tokens/${token.id}`)).body).toEqual(revoked.body);
    expectScimError(await usersOf(token.scim_base_url, token.secret), 401);
    expectProblem(
      await server.call('POST', `/v1/directory-tokens/${token.id}/rotate`),
      409,
      'directory_token_inactive',
    );
    const active = await server.call('GET', '/v1/directory-tokens?status=active&limit=100');
    expect(active.body.data.map((t: { id: string }) => t.id)).not.toContain(token.id);
    const all = await server.call('GET', '/v1/directory-tokens?limit=100');
    expect(all.body.data.map((t: { id: string }) => t.id)).toContain(token.id);
  });

  test('no token, an unknown one, an API key, and a token of another workspace are each 401', async () => {
    const token = await createDirectoryToken(server, 'okta');
    const other = await createWorkspace(server.platform.db, {
      name: 'Other',
      region: server.platform.config.region,
      ownerEmail: 'owner@other.example',
      now: clock.now(),
    });
    const otherToken = await server.call('POST', '/v1/directory-tokens', {
      key: other.secret,
      body: { name: 'theirs', directory: 'okta' },
    });
    expect(otherToken.status).toBe(201);

    for (const secret of [
      null,
      'cs_scim_0000000000000000000000000000000000000000',
      server.ownerKey,
      otherToken.body.secret,
    ]) {
      const answer = await usersOf(token.scim_base_url, secret);
      expectScimError(answer, 401);
      expect(answer.body.detail).toBe('Send a directory token of this workspace as Authorization: Bearer <token>.');
    }
    // A write is refused before its body is read.
    const write = await scimClient(token.scim_base_url, otherToken.body.secret)('POST', '/Users', {
      schemas: [USER_SCHEMA],
      userName: 'intruder@other.example',
    });
    expectScimError(write, 401);
    // The token works for its own workspace, and the API refuses it as a key.
    expect((await usersOf(otherToken.body.scim_base_url, otherToken.body.secret)).status).toBe(200);
    expectProblem(await server.call('GET', '/v1/members', { key: token.secret }), 401, 'unauthenticated');
  });

  test('a directory renames a person it alone has; a person who is in another workspace too keeps their name', async () => {
    const token = await createDirectoryToken(server, 'names');
    const scim = scimClient(token.scim_base_url, token.secret);
    const other = await createWorkspace(server.platform.db, {
      name: 'Elsewhere',
      region: server.platform.config.region,
      ownerEmail: 'shared@names.example',
      now: clock.now(),
    });
    const named = async (userName: string, displayName: string) =>
      scim('POST', '/Users', { schemas: [USER_SCHEMA], userName, displayName });
    const alone = await named('alone@names.example', 'Al One');
    const shared = await named('shared@names.example', 'Sha Red');
    expect([alone.status, shared.status]).toEqual([201, 201]);
    const nameIn = async (key: string, id: string) =>
      (await server.call('GET', `/v1/members/${id}`, { key })).body.name;
    const sharedName = await nameIn(other.secret, shared.body.id);
    for (const user of [alone.body, shared.body]) {
      const renamed = await scim('PATCH', `/Users/${user.id}`, {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'replace', path: 'displayName', value: 'Renamed By Directory' }],
      });
      expect(renamed.status).toBe(200);
    }
    expect(await nameIn(server.ownerKey, alone.body.id)).toBe('Renamed By Directory');
    expect(await nameIn(server.ownerKey, shared.body.id)).toBe(sharedName);
    expect(await nameIn(other.secret, shared.body.id)).toBe(sharedName);
  });

  test('SCIM errors for a bad body, an unknown endpoint and a bad filter are SCIM errors', async () => {
    const token = await createDirectoryToken(server, 'okta');
    const response = await fetch(`${token.scim_base_url}/Users`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token.secret}`, 'Content-Type': 'application/scim+json' },
      body: '{"userName": ',
    });
    expect(response.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(await response.json()).toMatchObject({ status: '400', scimType: 'invalidSyntax' });
    const scim = scimClient(token.scim_base_url, token.secret);
    expectScimError(await scim('GET', '/Widgets'), 404);
    expectScimError(await scim('GET', `/Users?filter=${encodeURIComponent('userName eqq "x"')}`), 400, 'invalidFilter');
    expectScimError(await scim('POST', '/Users', { schemas: [USER_SCHEMA] }), 400, 'invalidValue');
    expectScimError(
      await scim('POST', '/Users', { schemas: [USER_SCHEMA], userName: 'not-an-address' }),
      400,
      'invalidValue',
    );
    expectScimError(await scim('POST', '/Bulk', { schemas: [] }), 501);
  });

  test('the access log has the whole path of a SCIM request, /scim prefix included', async () => {
    const token = await createDirectoryToken(server, 'logged');
    expect((await usersOf(token.scim_base_url, token.secret)).status).toBe(200);
    const path = `/scim/v2/${server.workspaceId}/Users`;
    // The line is written once the answer is sent, which the client may see first.
    await expect.poll(() => lines.find((line) => line.msg === `GET ${path} 200`)?.access?.path).toBe(path);
  });

  test("a filter that breaks SCIM's grammar is 400 invalidFilter, never an answer to part of it", async () => {
    const token = await createDirectoryToken(server, 'grammar');
    const scim = scimClient(token.scim_base_url, token.secret);
    const user = await scim('POST', '/Users', { schemas: [USER_SCHEMA], userName: 'dup@grammar.example' });
    expect(user.status).toBe(201);
    expect((await scim('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Dup' })).status).toBe(201);
    const list = (endpoint: string, filter: string) => scim('GET', `/${endpoint}?filter=${encodeURIComponent(filter)}`);
    for (const [endpoint, filter] of [
      ['Users', 'userName eq'],
      ['Users', 'userName eq "dup@grammar.example" and'],
      ['Users', 'userName eq "dup@grammar.example" or'],
      ['Users', 'userName'],
      ['Users', 'userName eq "dup@grammar.example" and and userName pr'],
      ['Users', 'userName eq dup@grammar.example'],
      ['Groups', 'displayName eq "Dup" and'],
      ['Groups', 'and displayName eq "Dup"'],
      ['Groups', '(displayName eq "Dup"'],
      ['Groups', `${'('.repeat(40)}displayName pr${')'.repeat(40)}`],
    ]) {
      const answer = await list(endpoint!, filter!);
      expectScimError(answer, 400, 'invalidFilter');
      expect(answer.body.detail, filter).toMatch(/^The filter /);
    }
    // Filters of the grammar that SCIMMY would read otherwise than written: refused, never answered wrongly.
    for (const [endpoint, filter] of [
      ['Users', 'not (userName sw "dup" or userName sw "x")'],
      ['Groups', 'not (displayName eq "Dup" and displayName pr)'],
      ['Users', 'emails co "grammar" and emails[type eq "work"]'],
      ['Users', 'emails[type eq "work"] and emails[value co "dup"]'],
    ]) {
      const answer = await list(endpoint!, filter!);
      expectScimError(answer, 400, 'invalidFilter');
      expect(answer.body.detail, filter).toMatch(/^The filter is not supported: /);
    }
    const single = await list('Users', 'not (userName sw "x")');
    expect(single.body.totalResults, JSON.stringify(single.body)).toBe(1);
    expect((await list('Users', 'emails[type eq "work"] or emails[value co "dup"]')).status).toBe(200);
    // Filters of the grammar are answered, the complex ones included.
    expect((await list('Groups', 'displayName eq "Dup"')).body.totalResults).toBe(1);
    expect(
      (await list('Groups', '(displayName eq "Dup" or displayName eq "x") and not (id eq "y") and displayName pr')).body
        .totalResults,
    ).toBe(1);
    expect((await list('Users', 'userName eq "dup@grammar.example" and active eq true')).body.totalResults).toBe(1);
  });

  test('filters on attributes some resources lack, on multi-valued ones and on attributes named with their schema, are answered as SCIM means them, never a 500', async () => {
    const token = await createDirectoryToken(server, 'absent');
    const scim = scimClient(token.scim_base_url, token.secret);
    const plain = await scim('POST', '/Users', { schemas: [USER_SCHEMA], userName: 'plain@absent.example' });
    const mailed = await scim('POST', '/Users', {
      schemas: [USER_SCHEMA],
      userName: 'mailed@absent.example',
      name: { givenName: 'Mae', familyName: 'Iled' },
      emails: [{ value: 'mailed@absent.example', type: 'work', primary: true }],
    });
    expect([plain.status, mailed.status]).toEqual([201, 201]);
    const empty = await scim('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Empty' });
    const team = await scim('POST', '/Groups', {
      schemas: [GROUP_SCHEMA],
      displayName: 'Team',
      members: [{ value: mailed.body.id }],
    });
    expect([empty.status, team.status]).toEqual([201, 201]);
    const ids = async (endpoint: string, filter: string) => {
      const answer = await scim('GET', `/${endpoint}?filter=${encodeURIComponent(filter)}`);
      expect(answer.status, `${filter}: ${JSON.stringify(answer.body)}`).toBe(200);
      return (answer.body.Resources as Array<{ id: string; userName?: string }>).map((r) => r.userName ?? r.id).sort();
    };
    expect(await ids('Users', 'emails[type eq "work"]')).toEqual(['mailed@absent.example']);
    expect(await ids('Users', 'emails[type eq "work"] or userName eq "plain@absent.example"')).toEqual([
      'mailed@absent.example',
      'plain@absent.example',
    ]);
    expect(await ids('Users', 'name.givenName eq "Mae"')).toEqual(['mailed@absent.example']);
    expect(await ids('Users', 'phoneNumbers[type eq "work"]')).toEqual([]);
    expect(await ids('Users', 'groups[value eq "nothing"]')).toEqual([]);
    expect(await ids('Groups', 'members[value eq "nobody"]')).toEqual([]);
    // A comparison or `pr` on a multi-valued attribute tests its values: Entra ID asks whether a user is in a group so.
    expect(await ids('Groups', `id eq "${team.body.id}" and members eq "${mailed.body.id}"`)).toEqual([team.body.id]);
    expect(await ids('Groups', `id eq "${empty.body.id}" and members eq "${mailed.body.id}"`)).toEqual([]);
    expect(await ids('Groups', 'members pr')).toEqual([team.body.id]);
    expect(await ids('Groups', 'not (members pr)')).toEqual([empty.body.id]);
    expect(await ids('Users', 'emails pr')).toEqual(['mailed@absent.example']);
    expect(await ids('Users', 'not (emails pr)')).toEqual(['plain@absent.example']);
    expect(await ids('Users', 'emails co "mailed@"')).toEqual(['mailed@absent.example']);
    // An attribute named with its schema's URN: the core schema's, and the enterprise extension's.
    expect(await ids('Users', 'urn:ietf:params:scim:schemas:core:2.0:User:userName eq "plain@absent.example"')).toEqual(
      ['plain@absent.example'],
    );
    // userName and displayName are not case-exact: compared ignoring case, inside a complex filter too.
    expect(await ids('Users', 'userName eq "PLAIN@absent.example" and not (emails pr)')).toEqual([
      'plain@absent.example',
    ]);
    expect(await ids('Groups', 'displayName eq "TEAM" or displayName sw "emp"')).toEqual(
      [empty.body.id, team.body.id].sort(),
    );
    // So are the string sub-attributes that are not case-exact (RFC 7643 §4.1): an address, its type, a name's parts;
    // the answer keeps the values as written.
    for (const filter of [
      'emails[value eq "MAILED@Absent.Example"]',
      'emails.value eq "Mailed@absent.example"',
      'emails co "ABSENT"',
      'emails[type eq "WORK" and value ew "EXAMPLE"]',
      'name.familyName eq "iled"',
      'name[givenName sw "MA"]',
    ])
      expect(await ids('Users', filter), filter).toEqual(['mailed@absent.example']);
    const found = await scim('GET', `/Users?filter=${encodeURIComponent('name.familyName eq "ILED"')}`);
    expect(found.body.Resources[0].name).toMatchObject({ givenName: 'Mae', familyName: 'Iled' });
    const enterprise = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
    const managed = await scim('POST', '/Users', {
      schemas: [USER_SCHEMA, enterprise],
      userName: 'managed@absent.example',
      [enterprise]: { department: 'Sales', manager: { value: mailed.body.id } },
    });
    expect(managed.status).toBe(201);
    expect(await ids('Users', `${enterprise}:department eq "Sales"`)).toEqual(['managed@absent.example']);
    expect(await ids('Users', `${enterprise}:manager.value eq "${mailed.body.id}"`)).toEqual([
      'managed@absent.example',
    ]);
    expect(await ids('Users', `${enterprise}:manager pr`)).toEqual(['managed@absent.example']);
    expect(await ids('Users', 'name pr')).toEqual(['mailed@absent.example']);
    // Several comparisons of one case-less attribute, and the one equality the database answers.
    expect(await ids('Users', 'userName sw "MAILED" and userName ew "EXAMPLE"')).toEqual(['mailed@absent.example']);
    expect(await ids('Groups', 'displayName eq "team"')).toEqual([team.body.id]);
    // A `not` of a multi-valued attribute's comparison would be applied to each value apart: refused, not misread.
    const negated = await scim('GET', `/Users?filter=${encodeURIComponent('not (emails co "mailed")')}`);
    expectScimError(negated, 400, 'invalidFilter');
    const inside = await scim('GET', `/Users?filter=${encodeURIComponent('emails[not (value co "mailed")]')}`);
    expectScimError(inside, 400, 'invalidFilter');
    expect(await ids('Groups', 'not (members pr)')).toEqual([empty.body.id]);
  });
});

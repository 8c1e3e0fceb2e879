// Okta's SCIM 2.0 provisioning, request for request as Okta sends them (its SCIM validator's sequence, then what
// Okta's provisioning does after): against a real server on SQLite and PostgreSQL, with what the API's members and
// the workspace.member.* events show after each step. Okta finds a user by userName before creating one, replaces a
// user with PUT, deactivates with a PATCH without path, pushes groups with PATCH on `members`.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectProblem } from '../support/expect.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import {
  createDirectoryToken,
  expectScimError,
  GROUP_SCHEMA,
  LIST_RESPONSE,
  memberEvents,
  members,
  PATCH_OP,
  type ScimAnswer,
  scimClient,
  USER_SCHEMA,
} from './support.ts';

describe.each(databaseKinds)('Okta provisions a workspace through SCIM on %s', (kind) => {
  let server: TestServer;
  let scim: (method: string, path: string, body?: unknown) => Promise<ScimAnswer>;
  let ownerUserId: string;
  const email = `isabel.${randomUUID().slice(0, 8)}@okta-test.example`;
  let userId: string;
  let groupId: string;

  beforeAll(async () => {
    server = await startTestServer({ database: kind });
    const token = await createDirectoryToken(server, 'okta');
    expect(token.scim_base_url).toBe(`${server.url}/scim/v2/${server.workspaceId}`);
    scim = scimClient(token.scim_base_url, token.secret);
    ownerUserId = (await members(server)).find((m) => m.email === 'owner@test.example')!.id;
  });
  afterAll(async () => {
    await server?.close();
  });

  test('the discovery endpoints describe what is supported', async () => {
    const config = await scim('GET', '/ServiceProviderConfig');
    expect(config.status).toBe(200);
    expect(config.body).toMatchObject({
      patch: { supported: true },
      filter: { supported: true, maxResults: 200 },
      bulk: { supported: false },
      authenticationSchemes: [expect.objectContaining({ type: 'oauthbearertoken' })],
      meta: { location: `${server.url}/scim/v2/${server.workspaceId}/ServiceProviderConfig` },
    });
    const types = await scim('GET', '/ResourceTypes');
    expect(types.body.schemas).toEqual([LIST_RESPONSE]);
    expect(types.body.Resources.map((r: { endpoint: string }) => r.endpoint)).toEqual(['/Users', '/Groups']);
    const schemas = await scim('GET', '/Schemas');
    expect(schemas.body.Resources.map((s: { id: string }) => s.id)).toContain(USER_SCHEMA);
    const user = await scim('GET', `/Schemas/${USER_SCHEMA}`);
    expect(user.status).toBe(200);
    expect(user.body.attributes.map((a: { name: string }) => a.name)).toContain('userName');
  });

  test('listing with paging, then looking the user up by userName before creating them (none yet)', async () => {
    const page = await scim('GET', '/Users?count=1&startIndex=1');
    expect(page.status).toBe(200);
    expect(page.body).toEqual({
      schemas: [LIST_RESPONSE],
      totalResults: 0,
      startIndex: 1,
      itemsPerPage: 0,
      Resources: [],
    });
    const lookup = await scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "${email}"`)}`);
    expect(lookup.body.totalResults).toBe(0);
  });

  test('creating the user makes them a viewer member, named by the directory in workspace.member.added', async () => {
    const created = await scim('POST', '/Users', {
      schemas: [USER_SCHEMA],
      userName: email,
      name: { givenName: 'Isabel', familyName: 'Okafor' },
      emails: [{ primary: true, value: email, type: 'work' }],
      displayName: 'Isabel Okafor',
      locale: 'en-US',
      externalId: '00u1abcd2EFGH3ijk4x7',
      groups: [],
      password: '1mz050nq',
      active: true,
    });
    expect(created.status).toBe(201);
    userId = created.body.id;
    expect(userId).toMatch(/^usr_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(created.headers.get('location')).toBe(`${server.url}/scim/v2/${server.workspaceId}/Users/${userId}`);
    expect(created.body).toMatchObject({
      schemas: [USER_SCHEMA],
      userName: email,
      name: { givenName: 'Isabel', familyName: 'Okafor' },
      active: true,
      externalId: '00u1abcd2EFGH3ijk4x7',
      meta: { resourceType: 'User', location: created.headers.get('location') },
    });
    expect(created.body.password).toBeUndefined();

    expect((await members(server)).find((m) => m.id === userId)).toMatchObject({
      email,
      name: 'Isabel Okafor',
      role: 'viewer',
      scim_source: 'okta',
    });
    expect((await memberEvents(server)).at(-1)).toEqual({
      type: 'workspace.member.added',
      data: { user_id: userId, email, role: 'viewer', scim_source: 'okta', name: 'Isabel Okafor' },
    });
  });

  test('the user is found by id and by userName in any case; the same userName again is 409 uniqueness', async () => {
    const read = await scim('GET', `/Users/${userId}`);
    expect(read.status).toBe(200);
    expect(read.body.userName).toBe(email);
    const found = await scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "${email.toUpperCase()}"`)}`);
    expect(found.body).toMatchObject({ totalResults: 1, itemsPerPage: 1, startIndex: 1 });
    expect(found.body.Resources[0].id).toBe(userId);
    expectScimError(
      await scim('POST', '/Users', { schemas: [USER_SCHEMA], userName: email, active: true }),
      409,
      'uniqueness',
    );
    expectScimError(await scim('GET', `/Users/${randomUUID()}`), 404);
  });

  test('a member the directory manages cannot be removed through the API (409 managed_by_directory)', async () => {
    expectProblem(await server.call('DELETE', `/v1/members/${userId}`), 409, 'managed_by_directory');
  });

  test('PUT replaces the profile; the member stays, renamed as the directory names them', async () => {
    const replaced = await scim('PUT', `/Users/${userId}`, {
      schemas: [USER_SCHEMA],
      id: userId,
      userName: email,
      name: { givenName: 'Isabel', familyName: 'Okafor-Lind' },
      emails: [{ primary: true, value: email, type: 'work' }],
      displayName: 'Isabel Okafor-Lind',
      active: true,
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.name).toEqual({ givenName: 'Isabel', familyName: 'Okafor-Lind' });
    expect(replaced.body.externalId).toBeUndefined();
    expect((await members(server)).find((m) => m.id === userId)).toMatchObject({
      role: 'viewer',
      name: 'Isabel Okafor-Lind',
    });
    expect((await server.call('GET', `/v1/members/${userId}`)).body.name).toBe('Isabel Okafor-Lind');
  });

  test('a pushed group named for a role gives its members that role; renaming and removing take it back', async () => {
    const group = await scim('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Editor', members: [] });
    expect(group.status).toBe(201);
    groupId = group.body.id;
    expect(group.body).toMatchObject({
      schemas: [GROUP_SCHEMA],
      displayName: 'Editor',
      meta: { resourceType: 'Group' },
    });

    const added = await scim('PATCH', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'add', path: 'members', value: [{ value: userId, display: email }] }],
    });
    expect(added.status).toBe(200);
    expect(added.body.members).toEqual([expect.objectContaining({ value: userId, display: email })]);
    expect((await members(server)).find((m) => m.id === userId)?.role).toBe('editor');
    const user = await scim('GET', `/Users/${userId}`);
    expect(user.body.groups).toEqual([expect.objectContaining({ value: groupId, display: 'Editor' })]);

    const renamed = await scim('PATCH', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { id: groupId, displayName: 'admin' } }],
    });
    expect(renamed.body.displayName).toBe('admin');
    expect((await members(server)).find((m) => m.id === userId)?.role).toBe('admin');

    const removed = await scim('PATCH', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'remove', path: `members[value eq "${userId}"]` }],
    });
    expect(removed.status).toBe(200);
    expect(removed.body.members).toBeUndefined();
    expect((await members(server)).find((m) => m.id === userId)?.role).toBe('viewer');

    // Member events name only additions and removals; a role change is in the audit log.
    const audit = await server.call('GET', '/v1/audit-logs?limit=100');
    const changes = (audit.body.data as Array<{ action: string; details: Record<string, unknown> }>).filter(
      (e) => e.action === 'member.role_changed',
    );
    expect(changes.map((c) => c.details.role)).toEqual(['viewer', 'admin', 'editor']);
  });

  test('deactivating (PATCH active false) removes the member, revokes their keys, and keeps the user', async () => {
    await scim('PATCH', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'add', path: 'members', value: [{ value: userId, display: email }] }],
    });
    const key = await server.call('POST', '/v1/api-keys', {
      body: { name: 'Isabel', role: 'viewer', user_id: userId },
    });
    expect(key.status).toBe(201);

    const deactivated = await scim('PATCH', `/Users/${userId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { active: false } }],
    });
    expect(deactivated.status).toBe(200);
    expect(deactivated.body.active).toBe(false);

    expect((await members(server)).some((m) => m.id === userId)).toBe(false);
    expect((await server.call('GET', `/v1/api-keys/${key.body.id}`)).body.status).toBe('revoked');
    expect((await memberEvents(server)).at(-1)).toEqual({
      type: 'workspace.member.removed',
      data: {
        user_id: userId,
        removed_at: expect.any(String),
        removed_by: ownerUserId,
        removed_by_api_key_id: server.ownerKeyId,
        email,
        role: 'admin',
      },
    });
    // The directory still knows the user, inactive, and may activate them again.
    expect((await scim('GET', `/Users/${userId}`)).body.active).toBe(false);
    const reactivated = await scim('PATCH', `/Users/${userId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { active: true } }],
    });
    expect(reactivated.body.active).toBe(true);
    expect((await members(server)).find((m) => m.id === userId)).toMatchObject({ role: 'admin', scim_source: 'okta' });
    expect((await memberEvents(server)).at(-1)).toMatchObject({
      type: 'workspace.member.added',
      data: { user_id: userId, role: 'admin', scim_source: 'okta' },
    });
  });

  test('deleting the group and then the user removes the member', async () => {
    const deletedGroup = await fetch(`${server.url}/scim/v2/${server.workspaceId}/Groups/${groupId}`, {
      method: 'DELETE',
    });
    expect(deletedGroup.status).toBe(401);
    expect((await scim('DELETE', `/Groups/${groupId}`)).status).toBe(204);
    expectScimError(await scim('GET', `/Groups/${groupId}`), 404);
    expect((await members(server)).find((m) => m.id === userId)?.role).toBe('viewer');

    expect((await scim('DELETE', `/Users/${userId}`)).status).toBe(204);
    expectScimError(await scim('GET', `/Users/${userId}`), 404);
    expect((await members(server)).some((m) => m.id === userId)).toBe(false);
    expect((await memberEvents(server)).at(-1)).toMatchObject({
      type: 'workspace.member.removed',
      data: { user_id: userId, email, role: 'viewer', removed_by: ownerUserId },
    });
  });

  test('a person who is a member through the API is refused, not taken over', async () => {
    const added = await server.call('POST', '/v1/members', {
      body: { email: 'api.member@okta-test.example', role: 'editor' },
    });
    expect(added.status).toBe(201);
    const answer = await scim('POST', '/Users', {
      schemas: [USER_SCHEMA],
      userName: 'api.member@okta-test.example',
      active: true,
    });
    expectScimError(answer, 409, 'uniqueness');
    expect(answer.body.detail).toContain('added through the API');
    expect((await members(server)).find((m) => m.id === added.body.id)).toMatchObject({
      role: 'editor',
      scim_source: null,
    });
  });

  test('the same user created twice at once is one user: one 201, one 409 uniqueness', async () => {
    const body = { schemas: [USER_SCHEMA], userName: 'twice@okta-test.example', active: true };
    const answers = await Promise.all([scim('POST', '/Users', body), scim('POST', '/Users', body)]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    expect((await members(server)).filter((m) => m.email === 'twice@okta-test.example')).toHaveLength(1);
  });
});

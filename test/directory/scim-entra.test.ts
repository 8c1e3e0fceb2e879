// Microsoft Entra ID's SCIM provisioning, request for request as Entra sends them (the sequence of its SCIM
// validator): capitalised ops ("Replace", "Add", "Remove"), `active` as the string "False" (Entra without its
// aadOptscim062020 fix), the enterprise extension, a filter on a group's displayName with excludedAttributes=members,
// members removed with a value list. Against a real server on SQLite and PostgreSQL, with what the API's members and
// the workspace.member.* events show after each step.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import {
  createDirectoryToken,
  ENTERPRISE_SCHEMA,
  expectScimError,
  GROUP_SCHEMA,
  memberEvents,
  members,
  PATCH_OP,
  type ScimAnswer,
  scimClient,
  USER_SCHEMA,
} from './support.ts';

describe.each(databaseKinds)('Entra ID provisions a workspace through SCIM on %s', (kind) => {
  let server: TestServer;
  let scim: (method: string, path: string, body?: unknown) => Promise<ScimAnswer>;
  const userName = `Test_User_${randomUUID()}@contoso.example`;
  const email = userName.toLowerCase();
  const externalId = randomUUID();
  let userId: string;
  let groupId: string;

  beforeAll(async () => {
    server = await startTestServer({ database: kind });
    const token = await createDirectoryToken(server, 'entra-id');
    scim = scimClient(token.scim_base_url, token.secret);
  });
  afterAll(async () => {
    await server?.close();
  });

  const filter = (expression: string) => encodeURIComponent(expression);

  test('Entra looks the user up, creates them with the enterprise extension, and finds them', async () => {
    const none = await scim('GET', `/Users?filter=${filter(`userName eq "${userName}"`)}`);
    expect(none.body.totalResults).toBe(0);

    const created = await scim('POST', '/Users', {
      schemas: [USER_SCHEMA, ENTERPRISE_SCHEMA],
      externalId,
      userName,
      active: true,
      emails: [{ primary: true, type: 'work', value: `Test_User_${randomUUID()}@contoso.example` }],
      meta: { resourceType: 'User' },
      name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
      roles: [],
      [ENTERPRISE_SCHEMA]: { employeeNumber: '701984', department: 'Marketing' },
    });
    expect(created.status).toBe(201);
    userId = created.body.id;
    expect(created.body).toMatchObject({
      userName,
      externalId,
      active: true,
      [ENTERPRISE_SCHEMA]: { employeeNumber: '701984', department: 'Marketing' },
    });
    expect(created.body.schemas).toEqual([USER_SCHEMA, ENTERPRISE_SCHEMA]);

    const found = await scim('GET', `/Users?filter=${filter(`userName eq "${userName}"`)}`);
    expect(found.body.totalResults).toBe(1);
    expect(found.body.Resources[0].id).toBe(userId);
    const byExternalId = await scim('GET', `/Users?filter=${filter(`externalId eq "${externalId}"`)}`);
    expect(byExternalId.body.Resources.map((r: { id: string }) => r.id)).toEqual([userId]);

    expect((await members(server)).find((m) => m.id === userId)).toMatchObject({
      email,
      name: 'givenName familyName',
      role: 'viewer',
      scim_source: 'entra-id',
    });
    expect((await memberEvents(server)).at(-1)).toEqual({
      type: 'workspace.member.added',
      data: { user_id: userId, email, role: 'viewer', scim_source: 'entra-id', name: 'givenName familyName' },
    });
  });

  test('Entra updates attributes with capitalised Replace operations and filtered paths', async () => {
    const updated = await scim('PATCH', `/Users/${userId}`, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'updatedEmail@contoso.example' },
        { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
        { op: 'Add', path: `${ENTERPRISE_SCHEMA}:department`, value: 'Brand' },
      ],
    });
    expect(updated.status).toBe(200);
    expect(updated.body.emails).toEqual([{ primary: true, type: 'work', value: 'updatedEmail@contoso.example' }]);
    expect(updated.body.name.familyName).toBe('updatedFamilyName');
    expect(updated.body[ENTERPRISE_SCHEMA].department).toBe('Brand');
    // The member is the person of userName: the mail attribute changing does not make them someone else.
    expect((await members(server)).find((m) => m.id === userId)?.email).toBe(email);
  });

  test('a renamed user renames the member: displayName, else name.formatted, else the given and family names', async () => {
    const nameOfMember = async () => (await members(server)).find((m) => m.id === userId)?.name;
    const eventsBefore = (await memberEvents(server)).length;
    const patch = (...operations: unknown[]) =>
      scim('PATCH', `/Users/${userId}`, { schemas: [PATCH_OP], Operations: operations });

    expect((await patch({ op: 'Replace', path: 'name.formatted', value: 'givenName updatedFamilyName' })).status).toBe(
      200,
    );
    expect(await nameOfMember()).toBe('givenName updatedFamilyName');
    const renamed = await patch({ op: 'Replace', path: 'displayName', value: 'Ada Okafor' });
    expect(renamed.body.displayName).toBe('Ada Okafor');
    expect(await nameOfMember()).toBe('Ada Okafor');
    expect(
      (
        await patch(
          { op: 'Remove', path: 'displayName' },
          { op: 'Remove', path: 'name.formatted' },
          {
            op: 'Replace',
            path: 'name.givenName',
            value: 'Ada',
          },
        )
      ).status,
    ).toBe(200);
    expect(await nameOfMember()).toBe('Ada updatedFamilyName');
    // The specification's catalogue has no event for a changed member.
    expect(await memberEvents(server)).toHaveLength(eventsBefore);
  });

  test('a group with members gives no role unless named for one; members are added and removed', async () => {
    const group = await scim('POST', '/Groups', {
      externalId: randomUUID(),
      id: randomUUID(),
      displayName: 'Group1DisplayName',
      schemas: [GROUP_SCHEMA],
      meta: { resourceType: 'Group' },
      members: [],
    });
    expect(group.status).toBe(201);
    groupId = group.body.id;
    expect(groupId).toMatch(/^grp_/);

    const found = await scim(
      'GET',
      `/Groups?excludedAttributes=members&filter=${filter('displayName eq "Group1DisplayName"')}`,
    );
    expect(found.body.totalResults).toBe(1);
    expect(found.body.Resources[0]).toMatchObject({ id: groupId, displayName: 'Group1DisplayName' });

    const added = await scim('PATCH', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Add', path: 'members', value: [{ value: userId }] }],
    });
    expect(added.status).toBe(200);
    expect(added.body.members.map((m: { value: string }) => m.value)).toEqual([userId]);
    expect((await members(server)).find((m) => m.id === userId)?.role).toBe('viewer');

    const renamed = await scim('PATCH', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Replace', path: 'displayName', value: 'Editor' }],
    });
    expect(renamed.body.displayName).toBe('Editor');
    expect((await members(server)).find((m) => m.id === userId)?.role).toBe('editor');

    const removed = await scim('PATCH', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Remove', path: 'members', value: [{ value: userId }] }],
    });
    expect(removed.status).toBe(200);
    expect(removed.body.members).toBeUndefined();
    expect((await members(server)).find((m) => m.id === userId)?.role).toBe('viewer');

    const unknownMember = await scim('PATCH', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Add', path: 'members', value: [{ value: 'usr_01JD0A1B2C3D4E5F6G7H8J9K0M' }] }],
    });
    expectScimError(unknownMember, 400, 'invalidValue');
  });

  test('Entra disables the user with active "False" (a string); the member is removed', async () => {
    const disabled = await scim('PATCH', `/Users/${userId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
    });
    expect(disabled.status).toBe(200);
    expect(disabled.body.active).toBe(false);
    expect((await members(server)).some((m) => m.id === userId)).toBe(false);
    expect((await memberEvents(server)).at(-1)).toMatchObject({
      type: 'workspace.member.removed',
      data: { user_id: userId, email, role: 'viewer' },
    });
    // Entra with its fix sends a boolean; either enables the user again.
    const enabled = await scim('PATCH', `/Users/${userId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: 'active', value: true }],
    });
    expect(enabled.body.active).toBe(true);
    expect((await members(server)).some((m) => m.id === userId)).toBe(true);
    expectScimError(
      await scim('PATCH', `/Users/${userId}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'Replace', path: 'active', value: 'Maybe' }],
      }),
      400,
      'invalidValue',
    );
  });

  test('Entra deletes the group and the user', async () => {
    expect((await scim('DELETE', `/Groups/${groupId}`)).status).toBe(204);
    expect((await scim('DELETE', `/Users/${userId}`)).status).toBe(204);
    expectScimError(await scim('GET', `/Users/${userId}`), 404);
    expect((await members(server)).some((m) => m.id === userId)).toBe(false);
    const events = await memberEvents(server);
    expect(events.map((e) => e.type)).toEqual([
      'workspace.member.added',
      'workspace.member.removed',
      'workspace.member.added',
      'workspace.member.removed',
    ]);
  });
});

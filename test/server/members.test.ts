// Members of a workspace, against the real server on SQLite and PostgreSQL: adding (lower-cased email, 201 and
// Location, 409 for an email already there whatever its case), reading, listing with the role filter, removing
// (204, then 404), the last owner that cannot be removed, a key that cannot remove its own member, and that only an
// owner removes an owner. Adding and removing writes a `workspace.member.*` row to the event table with the
// workspace's next sequence, in the transaction of the change: a refused removal writes none. Removing a member
// revokes the API keys that act on their behalf, in the same transaction, and names who removed them (`removed_by`:
// the acting member, or a service key).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWorkspace } from '../../src/features/workspace/workspace.ts';
import { ManualClock } from '../../src/platform/clock.ts';
import { expectProblem } from '../support/expect.ts';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';

type Role = 'owner' | 'admin' | 'editor' | 'viewer';

describe.each(databaseKinds)('members on %s', (kind) => {
  let server: TestServer;
  const clock = new ManualClock();
  let counter = 0;
  const email = (label: string) => `${label}-${++counter}@members.example`;

  beforeAll(async () => {
    server = await startTestServer({ database: kind, clock });
  });
  afterAll(async () => {
    await server?.close();
  });

  async function add(role: Role, address = email(role), key?: string) {
    const answer = await server.call('POST', '/v1/members', { key, body: { email: address, role } });
    expect(answer.status).toBe(201);
    return answer.body as { id: string; email: string; role: Role };
  }

  const events = (workspaceId = server.workspaceId) =>
    server.platform.db
      .selectFrom('events')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .orderBy('sequence')
      .execute();

  async function ownerMember() {
    const list = await server.call('GET', '/v1/members?role=owner&limit=100');
    return (list.body.data as Array<{ id: string; email: string }>).find((m) => m.email === 'owner@test.example')!;
  }

  test('adding a member lower-cases the email and answers 201 with a Location that reads it back', async () => {
    clock.advance(1000);
    const answer = await server.call('POST', '/v1/members', {
      body: { email: 'Lucas.Martin@Northwind.EXAMPLE', role: 'editor', name: 'Lucas Martin' },
    });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({
      id: expect.stringMatching(/^usr_[0-9A-HJKMNP-TV-Z]{26}$/),
      object: 'member',
      email: 'lucas.martin@northwind.example',
      name: 'Lucas Martin',
      role: 'editor',
      added_at: clock.now().toISOString(),
      added_by_api_key_id: server.ownerKeyId,
      scim_source: null,
    });
    expect(answer.headers.get('location')).toBe(`/v1/members/${answer.body.id}`);

    const read = await server.call('GET', answer.headers.get('location')!);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(answer.body);
  });

  test('an email that is already a member, in any case, is 409 member_already_exists and changes nothing', async () => {
    const first = await add('viewer', 'Priya.Raman@northwind.example');
    expect(first.email).toBe('priya.raman@northwind.example');
    const before = await events();
    for (const variant of ['priya.raman@northwind.example', 'PRIYA.RAMAN@NORTHWIND.EXAMPLE']) {
      expectProblem(
        await server.call('POST', '/v1/members', { body: { email: variant, role: 'admin' } }),
        409,
        'member_already_exists',
      );
    }
    expect((await server.call('GET', `/v1/members/${first.id}`)).body.role).toBe('viewer');
    expect(await events()).toEqual(before);
  });

  test('the workspace creator is listed as its owner, added by no key', async () => {
    const owner = await ownerMember();
    expect(owner).toMatchObject({ object: 'member', role: 'owner', added_by_api_key_id: null });
  });

  test('the role filter lists only members with that role', async () => {
    const admin = await add('admin');
    const viewer = await add('viewer');
    for (const role of ['owner', 'admin', 'editor', 'viewer'] as const) {
      const list = await server.call('GET', `/v1/members?role=${role}&limit=100`);
      expect(list.status).toBe(200);
      const members = list.body.data as Array<{ id: string; role: Role }>;
      expect(members.length).toBeGreaterThan(0);
      expect(members.every((m) => m.role === role)).toBe(true);
    }
    const admins = (await server.call('GET', '/v1/members?role=admin&limit=100')).body.data.map(
      (m: { id: string }) => m.id,
    );
    expect(admins).toContain(admin.id);
    expect(admins).not.toContain(viewer.id);
    expectProblem(await server.call('GET', '/v1/members?role=superuser'), 422, 'validation_failed');
  });

  test('removing a member answers 204, after which it is 404 not_found and no longer listed', async () => {
    const member = await add('editor');
    const removed = await server.call('DELETE', `/v1/members/${member.id}`);
    expect(removed.status).toBe(204);
    expect(removed.text).toBe('');
    expectProblem(await server.call('GET', `/v1/members/${member.id}`), 404, 'not_found');
    expectProblem(await server.call('DELETE', `/v1/members/${member.id}`), 404, 'not_found');
    const all = await server.call('GET', '/v1/members?limit=100');
    expect(all.body.data.map((m: { id: string }) => m.id)).not.toContain(member.id);
  });

  test('a removed person can be added again', async () => {
    const address = email('returning');
    const first = await add('viewer', address);
    expect((await server.call('DELETE', `/v1/members/${first.id}`)).status).toBe(204);
    const again = await add('editor', address);
    expect(again).toMatchObject({ id: first.id, role: 'editor' });
  });

  /** An owner key that belongs to no member (a service key): the one kind of key that can reach the last owner. */
  async function serviceOwnerKey() {
    const answer = await server.call('POST', '/v1/api-keys', {
      body: { name: 'owner service key', role: 'owner', user_id: null },
    });
    expect(answer.status).toBe(201);
    return answer.body.secret as string;
  }

  test('the last owner cannot be removed (409 last_owner), and the refusal writes no event or audit entry', async () => {
    const owner = await ownerMember();
    const service = await serviceOwnerKey();
    const eventsBefore = await events();
    const sequenceBefore = (
      await server.platform.db
        .selectFrom('workspaces')
        .select('event_sequence')
        .where('id', '=', server.workspaceId)
        .executeTakeFirstOrThrow()
    ).event_sequence;

    const refused = await server.call('DELETE', `/v1/members/${owner.id}`, { key: service });
    expectProblem(refused, 409, 'last_owner');

    expect(await events()).toEqual(eventsBefore);
    const sequenceAfter = (
      await server.platform.db
        .selectFrom('workspaces')
        .select('event_sequence')
        .where('id', '=', server.workspaceId)
        .executeTakeFirstOrThrow()
    ).event_sequence;
    expect(Number(sequenceAfter)).toBe(Number(sequenceBefore));
    const audit = await server.platform.db
      .selectFrom('audit_log_entries')
      .select('id')
      .where('request_id', '=', refused.headers.get('x-request-id')!)
      .execute();
    expect(audit).toEqual([]);
    expect((await server.call('GET', `/v1/members/${owner.id}`)).status).toBe(200);
  });

  test('only an owner key removes an owner; once another owner exists, the owner can be removed', async () => {
    const admin = await server.createKey('admin');
    const second = await add('owner');
    expectProblem(
      await server.call('DELETE', `/v1/members/${second.id}`, { key: admin.secret }),
      403,
      'insufficient_role',
    );
    expect((await server.call('GET', `/v1/members/${second.id}`)).status).toBe(200);

    // An admin may still remove members up to its own role.
    const editor = await add('editor');
    expect((await server.call('DELETE', `/v1/members/${editor.id}`, { key: admin.secret })).status).toBe(204);

    expect((await server.call('DELETE', `/v1/members/${second.id}`)).status).toBe(204);
    // Now owner@test.example is the only owner again.
    expectProblem(
      await server.call('DELETE', `/v1/members/${(await ownerMember()).id}`, { key: await serviceOwnerKey() }),
      409,
      'last_owner',
    );
  });

  test('a key cannot remove its own member (409 cannot_remove_self), whatever its role and however many owners remain', async () => {
    const owner = await ownerMember();
    const coOwner = await add('owner');
    const eventsBefore = await events();
    // The owner key of owner@test.example, with another owner in the workspace: refused all the same.
    const refused = await server.call('DELETE', `/v1/members/${owner.id}`);
    expectProblem(refused, 409, 'cannot_remove_self');
    expect(refused.body.detail).toContain('owner@test.example');
    expect(await events()).toEqual(eventsBefore);
    expect(
      await server.platform.db
        .selectFrom('audit_log_entries')
        .select('id')
        .where('request_id', '=', refused.headers.get('x-request-id')!)
        .execute(),
    ).toEqual([]);
    // The key still works: nothing was revoked.
    expect((await server.call('GET', `/v1/members/${owner.id}`)).status).toBe(200);

    // An admin's own key, acting for the admin: refused too.
    const admin = await add('admin');
    const adminKey = await server.call('POST', '/v1/api-keys', {
      body: { name: 'admin own key', role: 'admin', user_id: admin.id },
    });
    expectProblem(
      await server.call('DELETE', `/v1/members/${admin.id}`, { key: adminKey.body.secret }),
      409,
      'cannot_remove_self',
    );

    // Another owner removes them; a service key removes the co-owner.
    const coOwnerKey = await server.call('POST', '/v1/api-keys', {
      body: { name: 'co-owner key', role: 'owner', user_id: coOwner.id },
    });
    expect((await server.call('DELETE', `/v1/members/${admin.id}`, { key: coOwnerKey.body.secret })).status).toBe(204);
    expect((await server.call('DELETE', `/v1/members/${coOwner.id}`, { key: await serviceOwnerKey() })).status).toBe(
      204,
    );
    // Someone else's member that does not exist is still a 404, not a refusal.
    expectProblem(await server.call('DELETE', '/v1/members/usr_01KJPX9WP4M6BJXN7NS8X3H83C'), 404, 'not_found');
  });

  test('removing the last two owners at the same time leaves one: one 204, one 409 last_owner', async () => {
    // A workspace of its own whose owner key is a service key: removing an owner revokes none of the keys in use.
    const other = await createWorkspace(server.platform.db, { name: 'Two owners', region: 'eu', now: clock.now() });
    const first = await add('owner', email('first-owner'), other.secret);
    const second = await add('owner', email('second-owner'), other.secret);
    const remove = (id: string) => server.call('DELETE', `/v1/members/${id}`, { key: other.secret });
    const answers = await Promise.all([remove(first.id), remove(second.id)]);
    expect(answers.map((a) => a.status).sort()).toEqual([204, 409]);
    expect(answers.find((a) => a.status === 409)!.body.code).toBe('last_owner');
    const owners = (await server.call('GET', '/v1/members?role=owner&limit=100', { key: other.secret })).body.data;
    expect(owners.length).toBe(1);
  });

  test('adding the same email at the same time makes one member: one 201, one 409', async () => {
    const address = email('racer');
    const answers = await Promise.all(
      [address, address.toUpperCase(), address, address.toUpperCase()].map((variant) =>
        server.call('POST', '/v1/members', { body: { email: variant, role: 'viewer' } }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409]);
    const added = (await events()).filter((e) => JSON.parse(e.data).email === address);
    expect(added.map((e) => e.type)).toEqual(['workspace.member.added']);
  });

  test('members added at the same time get distinct consecutive event sequences', async () => {
    const before = await events();
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        server.call('POST', '/v1/members', { body: { email: email(`parallel${i}`), role: 'viewer' } }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(201));
    const after = await events();
    expect(after.length).toBe(before.length + 6);
    expect(after.map((e) => Number(e.sequence))).toEqual(after.map((_, i) => i + 1));
    expect(new Set(after.slice(before.length).map((e) => JSON.parse(e.data).user_id))).toEqual(
      new Set(answers.map((a) => a.body.id)),
    );
  });

  test('an admin key cannot add an owner; an owner key can', async () => {
    const admin = await server.createKey('admin');
    expectProblem(
      await server.call('POST', '/v1/members', {
        key: admin.secret,
        body: { email: email('would-be-owner'), role: 'owner' },
      }),
      403,
      'insufficient_role',
    );
    const owner = await add('owner');
    expect(owner.role).toBe('owner');
  });

  test('a name is kept for a person who already has one', async () => {
    const address = email('named');
    const first = await server.call('POST', '/v1/members', {
      body: { email: address, role: 'viewer', name: 'First Name' },
    });
    expect(first.body.name).toBe('First Name');
    expect((await server.call('DELETE', `/v1/members/${first.body.id}`)).status).toBe(204);
    const again = await server.call('POST', '/v1/members', {
      body: { email: address, role: 'viewer', name: 'Other Name' },
    });
    expect(again.body).toMatchObject({ id: first.body.id, name: 'First Name' });
  });

  test('a member id that is not a user id is 422 validation_failed at path/id', async () => {
    for (const method of ['GET', 'DELETE']) {
      const answer = await server.call(method, `/v1/members/${server.ownerKeyId}`);
      expectProblem(answer, 422, 'validation_failed');
      expect(answer.body.errors.map((e: { pointer: string }) => e.pointer)).toEqual(['path/id']);
    }
  });

  test('a malformed email is 422 validation_failed at /email', async () => {
    const answer = await server.call('POST', '/v1/members', { body: { email: 'not an email', role: 'viewer' } });
    expectProblem(answer, 422, 'validation_failed');
    expect(answer.body.errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/email']);
  });

  test("adding and removing record workspace.member.* events with increasing sequence and the specification's keys", async () => {
    const before = await events();
    const lastSequence = before.length ? Number(before[before.length - 1]!.sequence) : 0;

    const added = await server.call('POST', '/v1/members', {
      body: { email: 'Events.Person@Members.Example', role: 'editor', name: 'Events Person' },
    });
    expect(added.status).toBe(201);
    expect((await server.call('DELETE', `/v1/members/${added.body.id}`)).status).toBe(204);

    const after = await events();
    const fresh = after.slice(before.length);
    // The owner key of the test workspace acts on behalf of owner@test.example: the removal names that member.
    const owner = await ownerMember();
    expect(fresh.map((e) => ({ type: e.type, sequence: Number(e.sequence), data: JSON.parse(e.data) }))).toEqual([
      {
        type: 'workspace.member.added',
        sequence: lastSequence + 1,
        data: {
          user_id: added.body.id,
          email: 'events.person@members.example',
          role: 'editor',
          scim_source: null,
          name: 'Events Person',
        },
      },
      {
        type: 'workspace.member.removed',
        sequence: lastSequence + 2,
        data: {
          user_id: added.body.id,
          removed_at: clock.now().toISOString(),
          removed_by: owner.id,
          removed_by_api_key_id: server.ownerKeyId,
          email: 'events.person@members.example',
          role: 'editor',
        },
      },
    ]);
    for (const event of fresh) {
      expect(event.id).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(event.created_at).toBe(clock.now().toISOString());
    }
    // Every event of the workspace has its own sequence, 1, 2, 3, … in the order they were recorded.
    expect(after.map((e) => Number(e.sequence))).toEqual(after.map((_, i) => i + 1));
  });

  test('each workspace counts its own event sequence', async () => {
    const other = await createWorkspace(server.platform.db, { name: 'Other', region: 'eu', now: clock.now() });
    const member = await add('viewer', email('other'), other.secret);
    const otherEvents = await events(other.workspace.id);
    expect(otherEvents.map((e) => ({ type: e.type, sequence: Number(e.sequence) }))).toEqual([
      { type: 'workspace.member.added', sequence: 1 },
    ]);
    expect(JSON.parse(otherEvents[0]!.data)).toEqual({
      user_id: member.id,
      email: member.email,
      role: 'viewer',
      scim_source: null,
      name: null,
    });
    // The other workspace's member is not this workspace's.
    expectProblem(await server.call('GET', `/v1/members/${member.id}`), 404, 'not_found');
  });

  test('the same person in two workspaces has one user id and a membership in each', async () => {
    const other = await createWorkspace(server.platform.db, { name: 'Shared', region: 'eu', now: clock.now() });
    const address = email('shared');
    const here = await add('viewer', address);
    const there = await add('admin', address.toUpperCase(), other.secret);
    expect(there.id).toBe(here.id);
    expect((await server.call('GET', `/v1/members/${here.id}`)).body.role).toBe('viewer');
    expect((await server.call('GET', `/v1/members/${here.id}`, { key: other.secret })).body.role).toBe('admin');
    expect((await server.call('DELETE', `/v1/members/${here.id}`, { key: other.secret })).status).toBe(204);
    expect((await server.call('GET', `/v1/members/${here.id}`)).status).toBe(200);
  });

  test('a removal by a service key names the key in removed_by', async () => {
    const other = await createWorkspace(server.platform.db, { name: 'Service key', region: 'eu', now: clock.now() });
    const member = await add('viewer', email('by-service-key'), other.secret);
    expect((await server.call('DELETE', `/v1/members/${member.id}`, { key: other.secret })).status).toBe(204);
    const removed = (await events(other.workspace.id)).find((e) => e.type === 'workspace.member.removed')!;
    expect(JSON.parse(removed.data)).toMatchObject({
      user_id: member.id,
      removed_by: other.apiKey.id,
      removed_by_api_key_id: other.apiKey.id,
    });
  });

  test("removing a member revokes their keys in the same change, and leaves other members' and service keys alone", async () => {
    const other = await createWorkspace(server.platform.db, {
      name: 'Revocations',
      region: 'eu',
      ownerEmail: email('revoking-owner'),
      now: clock.now(),
    });
    const person = await add('admin', email('leaving'), other.secret);
    const stayer = await add('editor', email('staying'), other.secret);
    const createKey = async (body: Record<string, unknown>) => {
      const answer = await server.call('POST', '/v1/api-keys', {
        key: other.secret,
        body: { name: 'key', role: 'editor', ...body },
      });
      expect(answer.status, answer.text).toBe(201);
      return answer.body as { id: string; secret: string; user_id: string | null };
    };
    const personKeys = [
      await createKey({ user_id: person.id }),
      await createKey({ user_id: person.id, role: 'admin' }),
    ];
    const stayerKey = await createKey({ user_id: stayer.id });
    const serviceKey = await createKey({ user_id: null });
    // A key created by the person's own key belongs to the person too.
    const derived = await server.call('POST', '/v1/api-keys', {
      key: personKeys[1]!.secret,
      body: { name: 'derived', role: 'viewer' },
    });
    expect(derived.body.user_id).toBe(person.id);
    personKeys.push(derived.body);
    for (const key of personKeys)
      expect((await server.call('GET', '/v1/workspace', { key: key.secret })).body.caller.user_id).toBe(person.id);

    clock.advance(1000);
    const removal = await server.call('DELETE', `/v1/members/${person.id}`, { key: stayerKey.secret });
    expectProblem(removal, 403, 'insufficient_role');
    expect((await server.call('DELETE', `/v1/members/${person.id}`, { key: other.secret })).status).toBe(204);

    for (const key of personKeys) {
      expectProblem(await server.call('GET', '/v1/workspace', { key: key.secret }), 401, 'unauthenticated');
      const read = await server.call('GET', `/v1/api-keys/${key.id}`, { key: other.secret });
      expect(read.body).toMatchObject({ status: 'revoked', revoked_at: clock.now().toISOString(), user_id: person.id });
    }
    for (const key of [stayerKey, serviceKey])
      expect((await server.call('GET', '/v1/workspace', { key: key.secret })).status).toBe(200);
    // The owner key of the workspace belongs to its owner member, not to the person: still active.
    expect((await server.call('GET', '/v1/workspace', { key: other.secret })).body.caller.user_id).not.toBe(person.id);

    const audit = await server.platform.db
      .selectFrom('audit_log_entries')
      .select(['action', 'target_id', 'details'])
      .where('workspace_id', '=', other.workspace.id)
      .where('created_at', '=', clock.now().toISOString())
      .execute();
    expect(audit.filter((e) => e.action === 'member.removed').map((e) => e.target_id)).toEqual([person.id]);
    const revocations = audit.filter((e) => e.action === 'api_key.revoked');
    expect(new Set(revocations.map((e) => e.target_id))).toEqual(new Set(personKeys.map((k) => k.id)));
    for (const entry of revocations)
      expect(JSON.parse(entry.details)).toEqual({ reason: 'member_removed', user_id: person.id });
  });

  test('a key created for a member while they are being removed ends revoked, or is refused: never a live key of a non-member', async () => {
    const other = await createWorkspace(server.platform.db, { name: 'Racing removal', region: 'eu', now: clock.now() });
    for (let round = 0; round < 5; round++) {
      const person = await add('editor', email(`racing-${round}`), other.secret);
      const [created, removed] = await Promise.all([
        server.call('POST', '/v1/api-keys', {
          key: other.secret,
          body: { name: 'racing', role: 'editor', user_id: person.id },
        }),
        server.call('DELETE', `/v1/members/${person.id}`, { key: other.secret }),
      ]);
      expect(removed.status).toBe(204);
      if (created.status === 201) {
        expectProblem(await server.call('GET', '/v1/workspace', { key: created.body.secret }), 401, 'unauthenticated');
      } else {
        expectProblem(created, 422, 'user_not_member');
      }
    }
  });

  test("a member's own key cannot remove them; another member's removal of them ends their key and names the remover", async () => {
    const other = await createWorkspace(server.platform.db, { name: 'Self removal', region: 'eu', now: clock.now() });
    const person = await add('admin', email('self'), other.secret);
    const remover = await add('owner', email('remover'), other.secret);
    const own = await server.call('POST', '/v1/api-keys', {
      key: other.secret,
      body: { name: 'own', role: 'admin', user_id: person.id },
    });
    expectProblem(
      await server.call('DELETE', `/v1/members/${person.id}`, { key: own.body.secret }),
      409,
      'cannot_remove_self',
    );
    expect((await server.call('GET', '/v1/workspace', { key: own.body.secret })).status).toBe(200);

    const removerKey = await server.call('POST', '/v1/api-keys', {
      key: other.secret,
      body: { name: 'remover', role: 'owner', user_id: remover.id },
    });
    expect((await server.call('DELETE', `/v1/members/${person.id}`, { key: removerKey.body.secret })).status).toBe(204);
    const removed = (await events(other.workspace.id)).find((e) => e.type === 'workspace.member.removed')!;
    expect(JSON.parse(removed.data)).toMatchObject({
      user_id: person.id,
      removed_by: remover.id,
      removed_by_api_key_id: removerKey.body.id,
    });
    expectProblem(await server.call('GET', '/v1/workspace', { key: own.body.secret }), 401, 'unauthenticated');
  });
});

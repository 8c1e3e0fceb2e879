// Single sign-on through SAML 2.0 against a samlify identity provider that signs with a test key: the connection from
// the identity provider's metadata, our metadata, a person signed in (a member just in time, the session, the
// dashboard), a directory's member matched rather than made twice, and the responses refused: a changed assertion,
// another audience, one signed with another key, a response used twice, an unsigned assertion, an unknown
// InResponseTo. On SQLite and PostgreSQL.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { databaseKinds, startTestServer, type TestServer } from '../support/server.ts';
import { otherIdpKeys, samlIdp } from './identity-providers.ts';
import { createConnection, expectProblem, memberAddedEvents, members, start } from './support.ts';

const idp = samlIdp();

describe.each(databaseKinds)('SAML connections on %s', (database) => {
  let server: TestServer;
  let connection: Awaited<ReturnType<typeof createConnection>>;
  let sp: { entityId: string; acs: string };
  beforeAll(async () => {
    server = await startTestServer({ database, env: { WEBHOOKS_ALLOW_LOOPBACK: 'true' } });
    connection = await createConnection(server, {
      name: 'Test SAML identity provider',
      protocol: 'saml',
      default_role: 'viewer',
      domains: ['northwind.example'],
      saml: { idp_metadata_xml: idp.metadataXml },
    });
    sp = { entityId: connection.saml!.sp_entity_id, acs: connection.saml!.acs_url };
  });
  afterAll(async () => {
    await server?.close();
  });

  function post(samlResponse: string): Promise<Response> {
    return fetch(sp.acs, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ SAMLResponse: samlResponse, RelayState: '' }).toString(),
    });
  }

  test('the connection shows what it read from the metadata, and our metadata names the ACS URL', async () => {
    expect(connection).toMatchObject({
      protocol: 'saml',
      oidc: null,
      saml: {
        idp_entity_id: idp.entityId,
        idp_sso_url: 'https://idp.test.example/saml/sso',
        idp_metadata_url: null,
        sp_entity_id: `${server.url}/sso/${connection.id}/saml/metadata`,
        acs_url: `${server.url}/sso/${connection.id}/saml/acs`,
      },
    });
    const metadata = await fetch(connection.saml!.sp_metadata_url);
    expect(metadata.status).toBe(200);
    expect(metadata.headers.get('content-type')).toMatch(/^application\/samlmetadata\+xml/);
    const xml = await metadata.text();
    expect(xml).toContain(`entityID="${sp.entityId}"`);
    expect(xml).toContain(`Location="${sp.acs}"`);
    expect(xml).toContain('WantAssertionsSigned="true"');
  });

  test('metadata is read from a URL when given one, and again when given it again', async () => {
    let served = idp.metadataXml;
    const host = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'application/xml' }).end(served));
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(host.address() as AddressInfo).port}/metadata`;
    try {
      const created = await createConnection(server, {
        name: 'From a URL',
        protocol: 'saml',
        saml: { idp_metadata_url: url },
      });
      expect(created.saml).toMatchObject({ idp_entity_id: idp.entityId, idp_metadata_url: url });
      served = served.replaceAll(idp.entityId, 'https://idp.test.example/rolled');
      const updated = await server.call('PATCH', `/v1/sso-connections/${created.id}`, {
        body: { saml: { idp_metadata_url: url } },
      });
      expect(updated.status, updated.text).toBe(200);
      expect(updated.body.saml.idp_entity_id).toBe('https://idp.test.example/rolled');
      served = 'not XML';
      const broken = await server.call('PATCH', `/v1/sso-connections/${created.id}`, {
        body: { saml: { idp_metadata_url: url } },
      });
      await expectProblem(broken, 422, 'sso_metadata_invalid');
      const oidcSettings = await server.call('PATCH', `/v1/sso-connections/${created.id}`, {
        body: { oidc: { client_id: 'x' } },
      });
      await expectProblem(oidcSettings, 422, 'validation_failed');
    } finally {
      host.closeAllConnections();
      host.close();
    }
  });

  test('metadata without a signing certificate is refused', async () => {
    const answer = await server.call('POST', '/v1/sso-connections', {
      body: {
        name: 'No certificate',
        protocol: 'saml',
        saml: {
          idp_metadata_xml: idp.metadataXml.replace(/<(\w+:)?KeyDescriptor[\s\S]*?<\/(\w+:)?KeyDescriptor>/g, ''),
        },
      },
    });
    const problem = await expectProblem(answer, 422, 'sso_metadata_invalid');
    expect(problem.detail).toContain('signing certificate');
  });

  test('a person signs in: a new member with the default role, a session, the dashboard', async () => {
    const before = await memberAddedEvents(server);
    const { location } = await start(connection.start_url);
    expect(location.startsWith('https://idp.test.example/saml/sso?SAMLRequest=')).toBe(true);
    const answer = await post(await idp.respond(location, 'lin@northwind.example', sp));
    expect(answer.status, await answer.clone().text()).toBe(303);
    expect(answer.headers.get('location')).toBe('/dashboard');
    const cookie = answer.headers.get('set-cookie')!.split(';')[0]!;
    const session = await server.call('GET', '/v1/session', { key: null, headers: { Cookie: cookie } });
    expect(session.body).toMatchObject({ method: 'saml', role: 'viewer', user: { email: 'lin@northwind.example' } });
    expect((await members(server)).find((m) => m.email === 'lin@northwind.example')).toMatchObject({ role: 'viewer' });
    const events = await memberAddedEvents(server);
    expect(events.length).toBe(before.length + 1);
    expect(events[0]!.data).toMatchObject({ email: 'lin@northwind.example', role: 'viewer', scim_source: null });
  });

  test('return_to chooses where the person lands', async () => {
    const { location } = await start(`${connection.start_url}?return_to=%2Fdashboard%23%2Fmembers`);
    const answer = await post(await idp.respond(location, 'lin@northwind.example', sp));
    expect(answer.status).toBe(303);
    expect(answer.headers.get('location')).toBe('/dashboard#/members');
  });

  test('a member provisioned by a directory is matched, never made twice', async () => {
    const token = await server.call('POST', '/v1/directory-tokens', { body: { name: 'Okta', directory: 'okta' } });
    const scim = await fetch(`${token.body.scim_base_url}/Users`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token.body.secret}`, 'Content-Type': 'application/scim+json' },
      body: JSON.stringify({
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: 'noor@northwind.example',
        active: true,
      }),
    });
    expect(scim.status).toBe(201);
    const before = await memberAddedEvents(server);
    const { location } = await start(connection.start_url);
    const answer = await post(await idp.respond(location, 'Noor@Northwind.example', sp));
    expect(answer.status, await answer.clone().text()).toBe(303);
    const noor = (await members(server)).filter((m) => m.email === 'noor@northwind.example');
    expect(noor).toEqual([expect.objectContaining({ scim_source: 'okta' })]);
    expect((await memberAddedEvents(server)).length).toBe(before.length);

    // Deactivated by the directory, the person is not let back in by signing in.
    const user = (await scim.json()) as { id: string };
    const deactivated = await fetch(`${token.body.scim_base_url}/Users/${user.id}`, {
      method: 'PATCH',
      headers: { Authorization: `Bearer ${token.body.secret}`, 'Content-Type': 'application/scim+json' },
      body: JSON.stringify({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'replace', path: 'active', value: false }],
      }),
    });
    expect(deactivated.status).toBe(200);
    const again = await start(connection.start_url);
    const refused = await post(await idp.respond(again.location, 'noor@northwind.example', sp));
    await expectProblem(refused, 409, 'managed_by_directory');
    expect((await members(server)).some((m) => m.email === 'noor@northwind.example')).toBe(false);
  });

  test('a changed assertion is refused: its signature no longer verifies', async () => {
    const { location } = await start(connection.start_url);
    const signed = Buffer.from(await idp.respond(location, 'kim@northwind.example', sp), 'base64').toString('utf8');
    const tampered = signed.replaceAll('kim@northwind.example', 'boss@northwind.example');
    const problem = await expectProblem(
      await post(Buffer.from(tampered).toString('base64')),
      401,
      'sso_response_invalid',
    );
    expect(problem.detail).toContain('signature');
    expect((await members(server)).some((m) => m.email === 'boss@northwind.example')).toBe(false);
  });

  test('an assertion signed with a key that is not in the metadata is refused', async () => {
    const { location } = await start(connection.start_url);
    const forged = await samlIdp(otherIdpKeys()).respond(location, 'kim@northwind.example', sp);
    const problem = await expectProblem(await post(forged), 401, 'sso_response_invalid');
    expect(problem.detail).toContain('signature');
  });

  test('an assertion for another audience is refused', async () => {
    const { location } = await start(connection.start_url);
    const response = await idp.respond(location, 'kim@northwind.example', {
      ...sp,
      entityId: 'https://other-app.example/saml',
    });
    const problem = await expectProblem(await post(response), 401, 'sso_response_invalid');
    expect(problem.detail).toContain('audience');
  });

  test('a response used once is refused the second time', async () => {
    const { location } = await start(connection.start_url);
    const response = await idp.respond(location, 'kim@northwind.example', sp);
    expect((await post(response)).status).toBe(303);
    const problem = await expectProblem(await post(response), 401, 'sso_response_replayed');
    expect(problem.detail).toContain('used already');
  });

  test('an unsigned assertion is refused, even in a signed response', async () => {
    const { location } = await start(connection.start_url);
    const response = await idp.respond(location, 'kim@northwind.example', { ...sp, signAssertion: false });
    const problem = await expectProblem(await post(response), 401, 'sso_assertion_unsigned');
    expect(problem.detail).toContain('not signed');
  });

  test("a response to no sign-in of ours, or to another connection's, is refused", async () => {
    const other = await createConnection(server, {
      name: 'Second SAML connection',
      protocol: 'saml',
      saml: { idp_metadata_xml: idp.metadataXml },
    });
    const { location } = await start(other.start_url);
    const forOther = await idp.respond(location, 'kim@northwind.example', sp);
    await expectProblem(await post(forOther), 400, 'sso_state_invalid');

    // A domain that requires its own connection: the other connection (which takes any email) sends its people there.
    const required = await createConnection(server, {
      name: 'Required for required.example',
      protocol: 'saml',
      domains: ['required.example'],
      required: true,
      saml: { idp_metadata_xml: idp.metadataXml },
    });
    const second = await start(other.start_url);
    const otherSp = { entityId: other.saml!.sp_entity_id, acs: other.saml!.acs_url };
    const refused = await fetch(otherSp.acs, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        SAMLResponse: await idp.respond(second.location, 'sam@required.example', otherSp),
      }).toString(),
    });
    const problem = await expectProblem(refused, 403, 'sso_required');
    expect((problem as unknown as { sso_start_url: string }).sso_start_url).toBe(required.start_url);

    const empty = await fetch(sp.acs, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'SAMLResponse=',
    });
    await expectProblem(empty, 401, 'sso_response_invalid');
  });
});

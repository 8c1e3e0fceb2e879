// A directory's userName is read in time linear in it: as a pattern that tells whether a userName is an address would
// try every dot of the domain against the rest, quadratic in a userName as long as a SCIM request may be (1 MiB). A
// super-linear pattern takes minutes on such a userName, so a case that hangs is one come back. `npm run lint:redos`
// finds the patterns (scripts/lint-redos.ts).
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import { createDirectoryToken, members, scimClient, USER_SCHEMA } from './support.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ database: 'sqlite' });
});
afterAll(async () => {
  await server?.close();
});

test('a userName of dots after an @ that is no address: the member is the primary email', async () => {
  const token = await createDirectoryToken(server, 'okta');
  const scim = scimClient(token.scim_base_url, token.secret);
  const userName = `a@a${'.a'.repeat(500_000)}.@..a`;
  const created = await scim('POST', '/Users', {
    schemas: [USER_SCHEMA],
    userName,
    emails: [{ primary: true, value: 'long.name@okta-test.example', type: 'work' }],
    active: true,
  });
  expect(created.status).toBe(201);
  expect((await members(server)).map((m) => m.email)).toContain('long.name@okta-test.example');
});

// An OpenID provider for trying single sign-on on one's own machine, with no account anywhere: oidc-provider (a
// certified implementation) with its development login pages, which take any login and password. A login that is an
// email address signs in as that person, with that email verified.
//
//   npm run sso:test-provider     (http://localhost:4000, client `content-service`, secret `test-provider-secret`)
//
// It accepts any redirect URI of the content-service it is started for (SSO_TEST_PROVIDER_SERVICE, default
// http://localhost:8080): the callback of each connection made with it. The single sign-on tests start it too.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import Provider from 'oidc-provider';

export const TEST_PROVIDER_CLIENT_ID = 'content-service';
export const TEST_PROVIDER_CLIENT_SECRET = 'test-provider-secret';

export interface OidcTestProvider {
  issuer: string;
  close(): Promise<void>;
}

export async function startOidcTestProvider(options: {
  /** The content-service whose connections' callbacks the client may redirect to (its base URL). */
  service: string;
  host?: string;
  port?: number;
  /** How the issuer names the host (localhost for a person's browser, 127.0.0.1 in tests). */
  publicHost?: string;
}): Promise<OidcTestProvider> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const issuer = `http://${options.publicHost ?? '127.0.0.1'}:${(server.address() as AddressInfo).port}`;
  const callbacks = `${options.service.replace(/\/$/, '')}/sso/`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: TEST_PROVIDER_CLIENT_ID,
        client_secret: TEST_PROVIDER_CLIENT_SECRET,
        redirect_uris: [`${callbacks}callback`],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    cookies: { keys: ['content-service test provider, not a secret'] },
    features: { devInteractions: { enabled: true } },
    async findAccount(_ctx, sub) {
      return {
        accountId: sub,
        async claims() {
          const email = sub.includes('@') ? { email: sub.toLowerCase(), email_verified: true } : {};
          return { sub, ...email, name: sub.split('@')[0]! };
        },
      };
    },
  });
  // Each connection has a callback of its own (`/sso/<connection>/callback`): the test client takes all of them.
  const allowed = (uri: string) =>
    uri.startsWith(callbacks) && /^[A-Za-z0-9_]+\/callback$/.test(uri.slice(callbacks.length));
  provider.Client.prototype.redirectUriAllowed = allowed;
  server.on('request', provider.callback());
  return {
    issuer,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const service = process.env.SSO_TEST_PROVIDER_SERVICE ?? 'http://localhost:8080';
  const port = Number(process.env.SSO_TEST_PROVIDER_PORT ?? 4000);
  const { issuer } = await startOidcTestProvider({ service, host: 'localhost', port, publicHost: 'localhost' });
  console.log(`Test OpenID provider at ${issuer} for ${service}
  issuer:        ${issuer}
  client_id:     ${TEST_PROVIDER_CLIENT_ID}
  client_secret: ${TEST_PROVIDER_CLIENT_SECRET}
Any login and password sign in; a login that is an email address is that person. Ctrl-C stops it.`);
}

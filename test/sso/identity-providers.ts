// The identity providers of the single sign-on tests, real ones on loopback: oidc-provider (a certified OpenID
// Provider) with its development login pages, and a SAML identity provider made with samlify, which signs responses
// with a test key (fixtures/) as Okta or Entra ID would.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inflateRawSync } from 'node:zlib';
import Provider from 'oidc-provider';
import * as samlify from 'samlify';

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

// The store of one provider: its clients, sessions, codes and tokens, by model and id.
type Payload = Record<string, unknown> & { grantId?: string; uid?: string; userCode?: string };

function adapterFactory(store: Map<string, Payload>) {
  return (model: string) => ({
    async upsert(id: string, payload: Payload) {
      store.set(`${model}:${id}`, payload);
    },
    async find(id: string) {
      return store.get(`${model}:${id}`);
    },
    async findByUid(uid: string) {
      for (const [key, payload] of store) if (key.startsWith(`${model}:`) && payload.uid === uid) return payload;
      return undefined;
    },
    async findByUserCode(userCode: string) {
      for (const [key, payload] of store)
        if (key.startsWith(`${model}:`) && payload.userCode === userCode) return payload;
      return undefined;
    },
    async consume(id: string) {
      const payload = store.get(`${model}:${id}`);
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    },
    async destroy(id: string) {
      store.delete(`${model}:${id}`);
    },
    async revokeByGrantId(grantId: string) {
      for (const [key, payload] of store) if (payload.grantId === grantId) store.delete(key);
    },
  });
}

export interface OidcTestProvider {
  issuer: string;
  /** Registers a client that redirects to `redirectUri` (a connection's, known once it is created). */
  registerClient(clientId: string, clientSecret: string, redirectUri: string): void;
  close(): Promise<void>;
}

/**
 * oidc-provider on 127.0.0.1. Its development login page takes any login and password: the login is the account,
 * and an account whose login is an email address has that email, verified.
 */
export async function startOidcProvider(): Promise<OidcTestProvider> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const store = new Map<string, Payload>();
  const provider = new Provider(issuer, {
    adapter: adapterFactory(store) as never,
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    cookies: { keys: ['content-service test provider cookie key'] },
    features: { devInteractions: { enabled: true } },
    async findAccount(_ctx, sub) {
      return {
        accountId: sub,
        async claims() {
          return {
            sub,
            ...(sub.includes('@') ? { email: sub, email_verified: true } : {}),
            name: `Person ${sub.split('@')[0]}`,
          };
        },
      };
    },
  });
  // Its warnings about development keys and interactions are what a test provider is.
  provider.on('server_error', () => {});
  server.on('request', provider.callback());
  return {
    issuer,
    registerClient(clientId, clientSecret, redirectUri) {
      store.set(`Client:${clientId}`, {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

samlify.setSchemaValidator({ validate: async () => 'skipped: the tests make the XML themselves' });

const REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const POST = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';

export interface SamlTestIdp {
  entityId: string;
  /** The metadata to give the connection (`saml.idp_metadata_xml`). */
  metadataXml: string;
  /**
   * The identity provider's answer to the AuthnRequest at `authorizeUrl` (the connection's start redirected there):
   * a base64 SAMLResponse for `email`, signed as the service provider asked, for the service provider described.
   */
  respond(
    authorizeUrl: string,
    email: string,
    sp: { entityId: string; acs: string; signAssertion?: boolean },
  ): Promise<string>;
}

export function samlIdp(
  keys: { key: string; cert: string } = { key: fixture('idp-key.pem'), cert: fixture('idp-cert.pem') },
): SamlTestIdp {
  const entityId = 'https://idp.test.example/saml/metadata';
  const idp = samlify.IdentityProvider({
    entityID: entityId,
    privateKey: keys.key,
    signingCert: keys.cert,
    wantAuthnRequestsSigned: false,
    nameIDFormat: ['urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress'],
    singleSignOnService: [{ Binding: REDIRECT, Location: 'https://idp.test.example/saml/sso' }],
    singleLogoutService: [{ Binding: REDIRECT, Location: 'https://idp.test.example/saml/logout' }],
  });
  return {
    entityId,
    metadataXml: idp.getMetadata(),
    async respond(authorizeUrl, email, sp) {
      const url = new URL(authorizeUrl);
      const request = inflateRawSync(Buffer.from(url.searchParams.get('SAMLRequest')!, 'base64')).toString('utf8');
      const requestId = /ID="([^"]+)"/.exec(request)![1]!;
      const serviceProvider = samlify.ServiceProvider({
        entityID: sp.entityId,
        wantAssertionsSigned: sp.signAssertion !== false,
        assertionConsumerService: [{ Binding: POST, Location: sp.acs }],
      });
      const { context } = await idp.createLoginResponse(
        serviceProvider,
        { extract: { request: { id: requestId } } } as never,
        'post',
        { email },
      );
      return context;
    },
  };
}

export const otherIdpKeys = () => ({ key: fixture('other-key.pem'), cert: fixture('other-cert.pem') });

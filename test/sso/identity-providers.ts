// The identity providers of the single sign-on tests, real ones on loopback: oidc-provider (a certified OpenID
// Provider) with its development login pages (scripts/sso-test-provider.ts), and a SAML identity provider made with samlify, which signs responses
// with a test key (fixtures/) as Okta or Entra ID would.
import { readFileSync } from 'node:fs';
import { inflateRawSync } from 'node:zlib';
import * as samlify from 'samlify';
import {
  startOidcTestProvider,
  TEST_PROVIDER_CLIENT_ID,
  TEST_PROVIDER_CLIENT_SECRET,
} from '../../scripts/sso-test-provider.ts';

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

export interface OidcTestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

/**
 * The test OpenID provider of `npm run sso:test-provider` on 127.0.0.1, for the service at `service`. Its development
 * login page takes any login and password: a login that is an email address is that person, email verified.
 */
export async function startOidcProvider(service: string): Promise<OidcTestProvider> {
  const provider = await startOidcTestProvider({ service });
  return { ...provider, clientId: TEST_PROVIDER_CLIENT_ID, clientSecret: TEST_PROVIDER_CLIENT_SECRET };
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

// SAML 2.0 through node-saml, as a service provider: the AuthnRequest (HTTP-Redirect binding), the check of the
// identity provider's answer (HTTP-POST binding: the signed assertion, its issuer, audience, time conditions and
// InResponseTo), and our metadata. What node-saml does not check, the recipient and the destination, is checked
// here on the signed assertion it returns.
import { type CacheProvider, SAML, SamlStatusError, ValidateInResponseTo } from '@node-saml/node-saml';
import { DOMParser } from '@xmldom/xmldom';
import xpath from 'xpath';
import type { SsoConnectionRow } from './presenters.ts';

const selectAny = xpath.useNamespaces({
  samlp: 'urn:oasis:names:tc:SAML:2.0:protocol',
  saml: 'urn:oasis:names:tc:SAML:2.0:assertion',
  ds: 'http://www.w3.org/2000/09/xmldsig#',
});
/** The nodes an expression selects (none when it selects a value). */
const select = (expression: string, node: Node): Node[] => {
  const result = selectAny(expression, node);
  return Array.isArray(result) ? result : [];
};

export interface SamlEndpoints {
  spEntityId: string;
  acs: string;
}

/** node-saml for one connection; `requests` keeps the AuthnRequests' ids (the sign-ins under way). */
export function samlOf(
  connection: SsoConnectionRow,
  endpoints: SamlEndpoints,
  requests: CacheProvider,
  flowTtlMs: number,
): SAML {
  return new SAML({
    entryPoint: connection.saml_idp_sso_url!,
    issuer: endpoints.spEntityId,
    callbackUrl: endpoints.acs,
    idpCert: JSON.parse(connection.saml_idp_certificates!) as string[],
    idpIssuer: connection.saml_idp_entity_id!,
    audience: endpoints.spEntityId,
    wantAssertionsSigned: true,
    wantAuthnResponseSigned: false,
    validateInResponseTo: ValidateInResponseTo.always,
    requestIdExpirationPeriodMs: flowTtlMs,
    cacheProvider: requests,
    identifierFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
    // Identity providers choose how a person authenticates (a password, a passkey, MFA); asking for one context
    // makes Entra ID refuse people who signed in another way.
    disableRequestedAuthnContext: true,
    // Clocks of two servers differ by a little; a minute either way is what the identity providers' guides allow.
    acceptedClockSkewMs: 60_000,
  });
}

/** What the response says before its signature is checked: enough to find its sign-in and to name what is wrong. */
export interface SamlResponseOutline {
  inResponseTo: string | null;
  destination: string | null;
  assertions: number;
  encrypted: boolean;
  assertionSigned: boolean;
}

export class SamlResponseError extends Error {}

export function outlineResponse(samlResponse: string): SamlResponseOutline {
  const xml = Buffer.from(samlResponse, 'base64').toString('utf8');
  const errors: string[] = [];
  let document: Document;
  try {
    document = new DOMParser({
      errorHandler: {
        warning: () => {},
        error: (message: string) => errors.push(message),
        fatalError: (message: string) => errors.push(message),
      },
    }).parseFromString(xml, 'text/xml');
  } catch {
    // xmldom throws on some malformed input instead of reporting it.
    throw new SamlResponseError('The SAMLResponse is not a SAML Response.');
  }
  const response = select('/samlp:Response', document)[0] as Element | undefined;
  if (errors.length > 0 || !response) throw new SamlResponseError('The SAMLResponse is not a SAML Response.');
  const assertions = select('saml:Assertion', response) as Element[];
  return {
    inResponseTo: response.getAttribute('InResponseTo') || null,
    destination: response.getAttribute('Destination') || null,
    assertions: assertions.length,
    encrypted: select('saml:EncryptedAssertion', response).length > 0,
    assertionSigned: assertions.length === 1 && select('ds:Signature', assertions[0]!).length > 0,
  };
}

/** The recipients the signed assertion's bearer confirmations name. */
export function assertionRecipients(assertionXml: string): string[] {
  const document = new DOMParser().parseFromString(assertionXml, 'text/xml');
  return (select('//saml:SubjectConfirmation/saml:SubjectConfirmationData/@Recipient', document) as Attr[]).map(
    (attribute) => attribute.value,
  );
}

/** node-saml's refusal in the words of the check that failed. */
export function describeSamlError(error: unknown): { identityProvider: boolean; detail: string } {
  if (error instanceof SamlStatusError)
    return { identityProvider: true, detail: `The identity provider refused the sign-in: ${error.message}.` };
  const message = (error as Error)?.message ?? String(error);
  if (/audience/i.test(message))
    return {
      identityProvider: false,
      detail: `The assertion is not for this connection (its audience is wrong): ${message}. Set the audience (entity id) at the identity provider to the connection's sp_entity_id.`,
    };
  if (/signature/i.test(message))
    return {
      identityProvider: false,
      detail:
        "The assertion's signature does not verify against the identity provider's certificates: it was changed, or signed with a key that is not in the connection's metadata.",
    };
  if (/issuer/i.test(message))
    return { identityProvider: false, detail: `The assertion comes from another identity provider: ${message}.` };
  if (/not yet valid|expired|too old/i.test(message))
    return { identityProvider: false, detail: `The assertion's time conditions do not hold now: ${message}.` };
  if (/subject confirmation|InResponseTo/i.test(message))
    return {
      identityProvider: false,
      detail: `The assertion does not answer this sign-in, or its confirmation has expired: ${message}.`,
    };
  return { identityProvider: false, detail: `The SAML response is not valid: ${message.slice(0, 300)}.` };
}

const EMAIL_ATTRIBUTES = [
  'email',
  'mail',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress',
  'urn:oid:0.9.2342.19200300.100.1.3',
];
const NAME_ATTRIBUTES = ['name', 'displayName', 'http://schemas.microsoft.com/identity/claims/displayname'];
const GIVEN_NAME = ['firstName', 'givenName', 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname'];
const SURNAME = ['lastName', 'surname', 'sn', 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname'];

function first(profile: Record<string, unknown>, names: string[]): string | null {
  for (const name of names) {
    const value = profile[name];
    const text = Array.isArray(value) ? value[0] : value;
    if (typeof text === 'string' && text.trim() !== '') return text.trim();
  }
  return null;
}

/**
 * The person the assertion names: an email attribute (Okta's `email`, Entra ID's `emailaddress` claim), else the
 * NameID when it is an email address.
 */
export function personOf(profile: Record<string, unknown>): { email: string | null; name: string | null } {
  const nameId = typeof profile.nameID === 'string' ? profile.nameID : '';
  const email = first(profile, EMAIL_ATTRIBUTES) ?? (nameId.includes('@') ? nameId : null);
  const given = first(profile, GIVEN_NAME);
  const surname = first(profile, SURNAME);
  const name = first(profile, NAME_ATTRIBUTES) ?? ([given, surname].filter(Boolean).join(' ') || null);
  return { email, name };
}

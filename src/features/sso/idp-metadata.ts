// A SAML identity provider's metadata, read for what a service provider needs of it: the entity id, the single
// sign-on URL of the HTTP-Redirect binding (node-saml sends its AuthnRequest that way), and the signing certificates.
import { DOMParser } from '@xmldom/xmldom';
import xpath from 'xpath';

export interface IdpMetadata {
  entityId: string;
  ssoUrl: string;
  /** Base64 DER of each signing certificate, as node-saml's `idpCert` takes them. */
  certificates: string[];
}

const SAML_MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const selectAny = xpath.useNamespaces({ md: SAML_MD, ds: 'http://www.w3.org/2000/09/xmldsig#' });
/** The nodes an expression selects (none when it selects a value). */
const select = (expression: string, node: Node): Node[] => {
  const result = selectAny(expression, node);
  return Array.isArray(result) ? result : [];
};

/** What is wrong with metadata, in words for the owner who gave it. */
export class IdpMetadataError extends Error {}

function attribute(node: xpath.SelectedValue | undefined, name: string): string | null {
  return node && typeof node === 'object' && 'getAttribute' in node ? (node as Element).getAttribute(name) : null;
}

export function parseIdpMetadata(xml: string): IdpMetadata {
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
    throw new IdpMetadataError('is not well-formed XML');
  }
  if (errors.length > 0 || !document.documentElement) throw new IdpMetadataError('is not well-formed XML');
  // An EntitiesDescriptor may hold several entities; the first with an IdP role is the one meant.
  const entity = select('//md:EntityDescriptor[md:IDPSSODescriptor]', document)[0] as Element | undefined;
  if (!entity) throw new IdpMetadataError('has no EntityDescriptor with an IDPSSODescriptor');
  const entityId = attribute(entity, 'entityID');
  if (!entityId) throw new IdpMetadataError('has no entityID');
  const services = select('md:IDPSSODescriptor/md:SingleSignOnService', entity) as Element[];
  const redirect = services.find((service) => service.getAttribute('Binding') === REDIRECT_BINDING);
  const ssoUrl = redirect?.getAttribute('Location');
  if (!ssoUrl) throw new IdpMetadataError('has no SingleSignOnService with the HTTP-Redirect binding');
  let parsedUrl: URL;
  try {
    parsedUrl = new URL(ssoUrl);
  } catch {
    throw new IdpMetadataError(`names a single sign-on URL that is not a URL (${ssoUrl.slice(0, 100)})`);
  }
  if (parsedUrl.protocol !== 'https:' && parsedUrl.protocol !== 'http:')
    throw new IdpMetadataError('names a single sign-on URL that is not http or https');
  // A KeyDescriptor without `use` serves both signing and encryption.
  const certificates = (
    select(
      'md:IDPSSODescriptor/md:KeyDescriptor[not(@use) or @use="signing"]/ds:KeyInfo/ds:X509Data/ds:X509Certificate',
      entity,
    ) as Element[]
  )
    .map((node) => (node.textContent ?? '').replace(/\s+/g, ''))
    .filter((text) => text.length > 0);
  if (certificates.length === 0) throw new IdpMetadataError('names no signing certificate of the identity provider');
  return { entityId, ssoUrl, certificates: [...new Set(certificates)] };
}

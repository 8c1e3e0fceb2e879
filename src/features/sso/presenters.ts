// Connections as the API shows them (the shapes are the spec's, through the generated types), and the addresses of
// a connection's browser side, which the API shows and the pages serve.
import type { Selectable } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { SsoConnectionsTable } from './schema.ts';

export type SsoConnectionRow = Selectable<SsoConnectionsTable>;
export type SsoConnection = components['schemas']['SsoConnection'];

/** The addresses of a connection on the server of its workspace's region. */
export function connectionUrls(regionBaseUrl: string, connectionId: string) {
  const base = `${regionBaseUrl.replace(/\/$/, '')}/sso/${connectionId}`;
  return {
    start: `${base}/start`,
    oidcCallback: `${base}/callback`,
    // The metadata's own URL is the entity id: an identity provider that reads it finds the entity id there.
    spEntityId: `${base}/saml/metadata`,
    acs: `${base}/saml/acs`,
    spMetadata: `${base}/saml/metadata`,
  };
}

export function presentSsoConnection(row: SsoConnectionRow, domains: string[], regionBaseUrl: string): SsoConnection {
  const urls = connectionUrls(regionBaseUrl, row.id);
  return {
    id: row.id,
    object: 'sso_connection',
    name: row.name,
    protocol: row.protocol,
    default_role: row.default_role,
    domains,
    required: row.required === 1,
    start_url: urls.start,
    oidc:
      row.protocol === 'oidc'
        ? { issuer: row.oidc_issuer!, client_id: row.oidc_client_id!, redirect_uri: urls.oidcCallback }
        : null,
    saml:
      row.protocol === 'saml'
        ? {
            idp_entity_id: row.saml_idp_entity_id!,
            idp_sso_url: row.saml_idp_sso_url!,
            idp_metadata_url: row.saml_idp_metadata_url,
            sp_entity_id: urls.spEntityId,
            acs_url: urls.acs,
            sp_metadata_url: urls.spMetadata,
          }
        : null,
    created_at: row.created_at,
    updated_at: row.updated_at,
    created_by_api_key_id: row.created_by_api_key_id,
  };
}

// The single sign-on feature's tables, declared beside the feature and merged into the platform's Database interface.
declare module '../../storage/schema.ts' {
  interface Database {
    sso_connections: SsoConnectionsTable;
    sso_domains: SsoDomainsTable;
    sso_flows: SsoFlowsTable;
  }
}

/** A workspace's connection to an identity provider, OpenID Connect or SAML 2.0. */
export interface SsoConnectionsTable {
  id: string;
  workspace_id: string;
  name: string;
  protocol: 'oidc' | 'saml';
  default_role: 'admin' | 'editor' | 'viewer';
  /** 0 or 1: people of the connection's domains sign in through it only. */
  required: number;
  oidc_issuer: string | null;
  oidc_client_id: string | null;
  /** Kept as given, like a webhook endpoint's signing secret: the token request sends it. Never returned. */
  oidc_client_secret: string | null;
  saml_idp_entity_id: string | null;
  saml_idp_sso_url: string | null;
  saml_idp_metadata_url: string | null;
  /** The identity provider's signing certificates from its metadata, a JSON array of base64 DER. */
  saml_idp_certificates: string | null;
  created_by_api_key_id: string;
  created_at: string;
  updated_at: string;
}

/** An email domain of a connection: unique in the workspace, so that an email names at most one connection. */
export interface SsoDomainsTable {
  workspace_id: string;
  domain: string;
  connection_id: string;
}

/**
 * A sign-in under way: the OpenID Connect `state` (with its PKCE verifier and nonce) or the SAML AuthnRequest's ID,
 * kept until the identity provider's answer comes back. Used once (`used_at`), then kept until it expires, so that a
 * second use is told apart from an unknown one.
 */
export interface SsoFlowsTable {
  id: string;
  workspace_id: string;
  connection_id: string;
  code_verifier: string | null;
  nonce: string | null;
  /** The page of this service to land on (a path), or null for the default. */
  return_to: string | null;
  /** SAML: the instant node-saml recorded for the request, which it compares with its own clock. */
  saml_request_instant: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

// The sessions feature's tables, declared beside the feature and merged into the platform's Database interface.
declare module '../../storage/schema.ts' {
  interface Database {
    sessions: SessionsTable;
    sign_in_links: SignInLinksTable;
  }
}

/** How a person proved who they are. */
export type SignInMethod = 'link' | 'oidc' | 'saml';

/** A person's session: the cookie's secret, hashed; the API key that carries its requests; its lifetimes. */
export interface SessionsTable {
  id: string;
  workspace_id: string;
  user_id: string;
  /** The session's own key (api_keys.session_id is this session): what the request log, audit and usage name. */
  api_key_id: string;
  secret_hash: string;
  /** Sent back in the X-CSRF-Token header of every state-changing request the session makes. */
  csrf_token: string;
  method: SignInMethod;
  ip: string | null;
  user_agent: string | null;
  created_at: string;
  /** Kept to the minute: the idle lifetime counts from it. */
  last_seen_at: string;
  /** The absolute end, whatever the activity. */
  expires_at: string;
  /** Signed out (or its member removed); null while it may be used. */
  ended_at: string | null;
}

/** A one-time sign-in link: the token, hashed; used once, within minutes. */
export interface SignInLinksTable {
  id: string;
  workspace_id: string;
  user_id: string;
  token_hash: string;
  /** A path of this server to land on after signing in; null: the dashboard. */
  return_to: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

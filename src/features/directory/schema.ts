// The directory feature's tables, declared beside the feature and merged into the platform's Database interface.
declare module '../../storage/schema.ts' {
  interface Database {
    directory_tokens: DirectoryTokensTable;
    scim_users: ScimUsersTable;
    scim_groups: ScimGroupsTable;
    scim_group_members: ScimGroupMembersTable;
  }
}

/** A directory's credential for the workspace's SCIM endpoints; hashed like an API key's secret. */
export interface DirectoryTokensTable {
  id: string;
  workspace_id: string;
  name: string;
  /** The directory it serves (`okta`): the `scim_source` of the members it provisions. */
  directory: string;
  secret_hash: string;
  last4: string;
  previous_secret_hash: string | null;
  previous_secret_expires_at: string | null;
  created_by_api_key_id: string;
  /** The member whose owner key created the token (null for a service key): the directory acts on their authority. */
  created_by_user_id: string | null;
  created_at: string;
  updated_at: string;
  last_used_at: string | null;
  rotated_at: string | null;
  revoked_at: string | null;
}

/**
 * A SCIM User of a directory: the person (`id` is their `usr_…` id, the member's id while they are active) and the
 * attributes the directory sent, kept to give back as it sent them.
 */
export interface ScimUsersTable {
  workspace_id: string;
  directory: string;
  id: string;
  user_name: string;
  /** userName in lower case: SCIM compares it ignoring case, and it is unique in the directory. */
  user_name_key: string;
  external_id: string | null;
  /** 0 or 1 (SQLite has no boolean); an active user is a member of the workspace. */
  active: number;
  /** The SCIM resource's other attributes (name, emails, the enterprise extension, …) as JSON. */
  attributes: string;
  created_at: string;
  updated_at: string;
}

export interface ScimGroupsTable {
  workspace_id: string;
  directory: string;
  id: string;
  display_name: string;
  external_id: string | null;
  created_at: string;
  updated_at: string;
}

export interface ScimGroupMembersTable {
  workspace_id: string;
  group_id: string;
  user_id: string;
}

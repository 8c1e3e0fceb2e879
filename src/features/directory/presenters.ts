// Directory tokens as the API shows them (the shapes are the spec's, through the generated types).
import type { Selectable } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import { iso } from '../../platform/clock.ts';
import type { DirectoryTokensTable } from './schema.ts';

export type DirectoryTokenRow = Selectable<DirectoryTokensTable>;

/** The workspace's SCIM base URL on the server that answers for its region. */
export function scimBaseUrl(regionBaseUrl: string, workspaceId: string): string {
  return `${regionBaseUrl.replace(/\/$/, '')}/scim/v2/${workspaceId}`;
}

export function presentDirectoryToken(
  token: DirectoryTokenRow,
  regionBaseUrl: string,
  now: Date,
): components['schemas']['DirectoryToken'] {
  const graceOpen =
    token.revoked_at === null &&
    token.previous_secret_expires_at !== null &&
    token.previous_secret_expires_at > iso(now);
  return {
    id: token.id,
    object: 'directory_token',
    name: token.name,
    directory: token.directory,
    status: token.revoked_at ? 'revoked' : 'active',
    scim_base_url: scimBaseUrl(regionBaseUrl, token.workspace_id),
    redacted_value: `cs_scim_…${token.last4}`,
    last4: token.last4,
    created_at: token.created_at,
    updated_at: token.updated_at,
    created_by_api_key_id: token.created_by_api_key_id,
    last_used_at: token.last_used_at,
    rotated_at: token.rotated_at,
    previous_secret_expires_at: graceOpen ? token.previous_secret_expires_at : null,
    revoked_at: token.revoked_at,
  };
}

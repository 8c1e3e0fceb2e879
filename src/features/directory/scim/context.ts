// What a SCIM request's handlers work with: the workspace and directory its token serves, the base URL of its
// resources' locations, and the audit origin of the changes it makes.
import type { Kysely } from 'kysely';
import type { AuditOrigin } from '../../../platform/audit.ts';
import type { Database } from '../../../storage/schema.ts';
import type { DirectoryTokenRow } from '../presenters.ts';

export interface ScimContext {
  db: Kysely<Database>;
  workspaceId: string;
  /** The directory the token serves: its Users and Groups are this directory's, its members carry it as scim_source. */
  directory: string;
  token: DirectoryTokenRow;
  /** The workspace's SCIM base URL (…/scim/v2/ws_…). */
  base: string;
  now: Date;
  /** Changes audit as `system` with `via: scim`, with the request's IP, user agent and id. */
  origin: AuditOrigin;
}

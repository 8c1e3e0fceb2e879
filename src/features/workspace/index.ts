// The workspace feature: the workspace, its API keys and members, and the request and audit logs.
import type { Feature } from '../../platform/feature.ts';
import { keyUsers } from '../../storage/migrations/003_key_users.ts';
import { membersScimSource } from '../../storage/migrations/024_members_scim_source.ts';
import { apiKeyHandlers } from './api-keys.ts';
import { logHandlers } from './logs.ts';
import { memberHandlers } from './members.ts';
import { workspaceHandlers } from './workspace.ts';

export const workspaceFeature = {
  name: 'workspace',
  handlers: { ...workspaceHandlers, ...apiKeyHandlers, ...memberHandlers, ...logHandlers },
  // Its first tables are in the platform's 001_platform.
  migrations: { '003_key_users': keyUsers, '024_members_scim_source': membersScimSource },
} satisfies Feature;

export { insertApiKey, keyOwner } from './api-keys.ts'; // the CLI and the benchmarks make keys without a request
// Members as a directory provisions them (the directory feature's SCIM endpoints): the same records, events and
// audit entries as the API's, in the directory's transaction.
export {
  addMemberRecord,
  changeMemberRole,
  type MemberRow,
  membersOf,
  removeMemberRecord,
  userByEmail,
} from './members.ts';
export { presentApiKey } from './presenters.ts';
// The public API: what other features and the entry points use (docs/server.md, "Dependency rules").
export { createFirstWorkspace, createWorkspace, presentWorkspace } from './workspace.ts'; // the first workspace: npm start on an empty database, the CLI, benchmarks

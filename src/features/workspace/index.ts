// The workspace feature: the workspace, its API keys and members, and the request and audit logs.
import type { Feature } from '../../platform/feature.ts';
import { keyUsers } from '../../storage/migrations/003_key_users.ts';
import { apiKeyHandlers } from './api-keys.ts';
import { logHandlers } from './logs.ts';
import { memberHandlers } from './members.ts';
import { workspaceHandlers } from './workspace.ts';

export const workspaceFeature = {
  name: 'workspace',
  handlers: { ...workspaceHandlers, ...apiKeyHandlers, ...memberHandlers, ...logHandlers },
  // Its first tables are in the platform's 001_platform.
  migrations: { '003_key_users': keyUsers },
} satisfies Feature;

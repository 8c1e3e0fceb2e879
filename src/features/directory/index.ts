// The directory feature: directory tokens (tokens.ts) and the SCIM 2.0 endpoints through which a company's directory
// provisions the workspace's members (scim/), with the same member records, events and audit entries as the API's.
import type { Feature } from '../../platform/feature.ts';
import { directories } from './migrations/025_directories.ts';
import { scimRouter } from './scim/router.ts';
import { directoryTokenHandlers } from './tokens.ts';

export const directoryFeature = {
  name: 'directory',
  handlers: directoryTokenHandlers,
  migrations: { '025_directories': directories },
  pages: scimRouter,
} satisfies Feature;

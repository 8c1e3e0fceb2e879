import type { ContentServiceClient } from '../../../../generated/client.ts';
import type { Role, Schemas } from './api.ts';

/** Who is signed in: the client with their key, the workspace and the key's role. */
export interface Session {
  client: ContentServiceClient;
  workspace: Schemas['Workspace'];
  role: Role;
}

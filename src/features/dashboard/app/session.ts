import type { ContentServiceClient } from '../../../../generated/client.ts';
import type { Role, Schemas } from './api.ts';

/** Who is signed in: the client with their key or session, the workspace and the role. */
export interface Session {
  client: ContentServiceClient;
  workspace: Schemas['Workspace'];
  role: Role;
  /** The person, when they signed in as themselves (a session cookie); null for a key. */
  person: Schemas['CurrentSession'] | null;
}

// The hand-over to a session once a person is proven and is a member: the sessions feature's startSession sets the
// cookie and redirects to where the person was going.
import type { Response } from 'express';
import type { Platform } from '../../platform/context.ts';
import { startSession } from '../sessions/index.ts';

export interface SignedIn {
  workspaceId: string;
  userId: string;
  method: 'oidc' | 'saml';
  returnTo?: string;
}

export async function startSignedInSession(platform: Platform, res: Response, signedIn: SignedIn): Promise<void> {
  await startSession(platform, res, signedIn);
}

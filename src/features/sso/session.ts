// The hand-over to a session once a person is proven and is a member. Until the sessions feature is merged, this
// answers with who signed in: the sessions feature's startSession replaces it.
import type { Response } from 'express';
import type { Platform } from '../../platform/context.ts';

export interface SignedIn {
  workspaceId: string;
  userId: string;
  method: 'oidc' | 'saml';
  returnTo?: string;
}

export async function startSignedInSession(_platform: Platform, res: Response, signedIn: SignedIn): Promise<void> {
  res.status(200).json({ signed_in: signedIn });
}

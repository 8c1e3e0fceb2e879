// The approval link of `workflow.run.approval_required`: `/approvals/{run_id}/{step_id}?expires=…&signature=…` on the
// workspace's base URL, signed with a key kept in the database (so every server of one database agrees) and valid
// until the step's `expires_at`. It opens the approval page (approval-page.ts), which shows what the step asks to
// review; deciding there takes an API key with the step's approver role: the link alone decides nothing.
import { createHmac } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Platform, WorkspaceRow } from '../../platform/context.ts';
import { isSignature, parseLinkExpires } from '../../platform/signed-links.ts';
import type { Database } from '../../storage/schema.ts';
import { regionBaseUrl } from '../chatbots/index.ts';
import { storedSigningKey } from '../documents/index.ts';

async function signature(
  db: Kysely<Database>,
  runId: string,
  stepId: string,
  expires: number,
  now: Date,
): Promise<Buffer> {
  const key = await storedSigningKey(db, 'approval-link', now);
  return createHmac('sha256', key).update(`${runId}.${stepId}.${expires}`).digest();
}

export async function approvalUrl(
  platform: Platform,
  workspace: Pick<WorkspaceRow, 'region'>,
  runId: string,
  stepId: string,
  expiresAt: Date,
): Promise<string> {
  const expires = Math.floor(expiresAt.getTime() / 1000);
  const signed = (await signature(platform.db, runId, stepId, expires, new Date())).toString('base64url');
  return `${regionBaseUrl(platform, workspace)}/approvals/${runId}/${stepId}?expires=${expires}&signature=${signed}`;
}

/** Whether a link is ours, as written (src/platform/signed-links.ts), and has not expired. */
export async function verifyApprovalLink(
  db: Kysely<Database>,
  runId: string,
  stepId: string,
  expires: string | undefined,
  given: string | undefined,
  now: Date,
): Promise<boolean> {
  const expiresAt = parseLinkExpires(expires);
  if (expiresAt === undefined || expiresAt * 1000 <= now.getTime()) return false;
  return isSignature(given, await signature(db, runId, stepId, expiresAt, now));
}

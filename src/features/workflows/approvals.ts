// The approval link of `workflow.run.approval_required`: `/approvals/{run_id}/{step_id}?expires=…&signature=…` on the
// workspace's base URL, signed with a key kept in the database (so every server of one database agrees) and valid
// until the step's `expires_at`. It opens the approval page (approval-page.ts), which shows what the step asks to
// review; deciding there takes an API key with the step's approver role: the link alone decides nothing.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Platform, WorkspaceRow } from '../../platform/context.ts';
import type { Database } from '../../storage/schema.ts';
import { regionBaseUrl } from '../chatbots/chatbots.ts';
import { storedSigningKey } from '../documents/edit-tokens.ts';

async function signature(db: Kysely<Database>, runId: string, stepId: string, expires: number, now: Date): Promise<Buffer> {
  const key = await storedSigningKey(db, 'approval-link', now);
  return createHmac('sha256', key).update(`${runId}.${stepId}.${expires}`).digest();
}

export async function approvalUrl(platform: Platform, workspace: Pick<WorkspaceRow, 'region'>, runId: string, stepId: string, expiresAt: Date): Promise<string> {
  const expires = Math.floor(expiresAt.getTime() / 1000);
  const signed = (await signature(platform.db, runId, stepId, expires, new Date())).toString('base64url');
  return `${regionBaseUrl(platform, workspace)}/approvals/${runId}/${stepId}?expires=${expires}&signature=${signed}`;
}

/** Whether a link's signature is ours and it has not expired. */
export async function verifyApprovalLink(db: Kysely<Database>, runId: string, stepId: string, expires: string | undefined, given: string | undefined, now: Date): Promise<boolean> {
  if (!expires || !/^\d{1,12}$/.test(expires) || !given || Number(expires) * 1000 <= now.getTime()) return false;
  const expected = await signature(db, runId, stepId, Number(expires), now);
  const actual = Buffer.from(given, 'base64url');
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

// The approval page (GET /approvals/{run_id}/{step_id}?expires=…&signature=…), the `approval_url` of
// `workflow.run.approval_required`. Placeholder until the page is built: it checks the link and answers what it knows.
import { Router } from 'express';
import type { Platform } from '../../platform/context.ts';
import { verifyApprovalLink } from './approvals.ts';

export function approvalPages(platform: Platform): Router {
  const router = Router();
  router.get('/approvals/:runId/:stepId', async (req, res) => {
    const { runId, stepId } = req.params;
    const ok = await verifyApprovalLink(platform.db, runId, stepId, req.query.expires as string | undefined, req.query.signature as string | undefined, platform.clock.now());
    if (!ok) {
      res.status(403).type('text/plain').send('This approval link is not valid or has expired.');
      return;
    }
    res.status(200).type('text/plain').send(`Approval of step ${stepId} of run ${runId}.`);
  });
  return router;
}

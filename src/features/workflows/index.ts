// The workflows feature: definitions in YAML or JSON (workflows.ts, checked by definition.ts, templates and
// expressions in expressions.ts), runs on the durable engine (runs.ts, runtime.ts, the step kinds in steps.ts),
// and the approval page that the `workflow.run.approval_required` event links to (approval-page.ts).
import type { Feature } from '../../platform/feature.ts';
import { approvalPages } from './approval-page.ts';
import { workflows } from './migrations/015_workflows.ts';
import { runHandlers } from './runs.ts';
import './schema.ts';
import { workflowHandlers } from './workflows.ts';

export const workflowsFeature = {
  name: 'workflows',
  handlers: { ...workflowHandlers, ...runHandlers },
  migrations: { '015_workflows': workflows },
  pages: approvalPages,
} satisfies Feature;

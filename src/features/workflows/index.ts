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
  gauges: ({ db }) => [
    {
      name: 'workflow_runs',
      help: 'Workflow runs not yet ended, by status (queued, running, awaiting_approval), over every server sharing the database.',
      labelNames: ['status'],
      // On the index (status, created_at): the runs counted are the ones not ended, however long the history.
      async collect() {
        const rows = await db
          .selectFrom('workflow_runs')
          .select((eb) => ['status', eb.fn.countAll<number | string>().as('count')])
          .where('status', 'in', ACTIVE_RUN_STATUSES)
          .groupBy('status')
          .execute();
        const counts = new Map(rows.map((row) => [row.status, Number(row.count)]));
        return ACTIVE_RUN_STATUSES.map((status) => ({ labels: { status }, value: counts.get(status) ?? 0 }));
      },
    },
  ],
} satisfies Feature;

const ACTIVE_RUN_STATUSES = ['queued', 'running', 'awaiting_approval'];

// The public API: what other features and the entry points use (docs/server.md, "Dependency rules").
export { WorkflowRuntime } from './runtime.ts'; // the durable runtime, a process-wide service built by src/services.ts

// The workspace: its name, region, base URL and limits (GET /v1/workspace, open to every role).
import type { Session } from './session.ts';

export function WorkspacePage({ session }: { session: Session }) {
  const { workspace } = session;
  const limits = workspace.limits;
  return (
    <section aria-labelledby="workspace-title">
      <h1 id="workspace-title">Workspace</h1>
      <dl class="facts" data-part="workspace">
        <dt>Name</dt>
        <dd>{workspace.name}</dd>
        <dt>Identifier</dt>
        <dd>
          <code>{workspace.id}</code>
        </dd>
        <dt>Region</dt>
        <dd>{workspace.region.toUpperCase()}</dd>
        <dt>Base URL</dt>
        <dd>
          <code>{workspace.base_url}</code>
        </dd>
        <dt>Rate limit</dt>
        <dd>
          {limits.rate_limit_requests} requests per key every {limits.rate_limit_window_seconds} s
        </dd>
        <dt>Kept</dt>
        <dd>
          events {limits.event_retention_days} days · request log {limits.request_log_retention_days} days · audit log{' '}
          {limits.audit_log_retention_days} days · idempotency keys {limits.idempotency_key_retention_hours} h
        </dd>
      </dl>
    </section>
  );
}

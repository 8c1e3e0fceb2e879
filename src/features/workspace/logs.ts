// The audit log and the request log of a workspace, newest first, with their filters.
import { sql } from 'kysely';
import type { Handlers } from '../../../generated/operations.ts';
import { iso } from '../../platform/clock.ts';
import type { RequestContext } from '../../platform/context.ts';
import { parseInstant } from '../../platform/instant.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { presentAuditLogEntry, presentRequestLogEntry } from './presenters.ts';

/** Inputs accept any RFC 3339 offset; the database holds UTC with milliseconds. */
const utc = (value: string) => iso(parseInstant(value));

export const logHandlers = {
  async listAuditLogs(request, context) {
    const { action, actor_api_key_id, target_id, created_after, created_before } = request.query;
    const page = pageRequest(request.query);
    let query = context.platform.db
      .selectFrom('audit_log_entries')
      .selectAll()
      .where('workspace_id', '=', context.caller.workspace.id);
    if (action?.endsWith('.*')) {
      const prefix = action.slice(0, -1); // keeps the dot: `api_key.*` matches `api_key.created`
      query = query.where((eb) => eb(eb.fn('substr', ['action', eb.val(1), eb.val(prefix.length)]), '=', prefix));
    } else if (action) {
      query = query.where('action', '=', action);
    }
    if (actor_api_key_id) query = query.where('actor_api_key_id', '=', actor_api_key_id);
    if (target_id) query = query.where('target_id', '=', target_id);
    if (created_after) query = query.where('created_at', '>=', utc(created_after));
    if (created_before) query = query.where('created_at', '<', utc(created_before));
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const { body, headers } = toPage(rows, page, (row) => ({ id: row.id }), presentAuditLogEntry, context.url);
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async listRequestLogs(request, context) {
    const { api_key_id, status, method, path_prefix, created_after, created_before } = request.query;
    const page = pageRequest(request.query);
    // Entries are written in batches just after each response; this request's own entry is not among them yet.
    await context.platform.requestLog.flush();
    let query = context.platform.db
      .selectFrom('request_log_entries')
      .selectAll()
      .where('workspace_id', '=', context.caller.workspace.id);
    if (api_key_id) query = query.where('api_key_id', '=', api_key_id);
    if (status?.endsWith('xx')) {
      // A class is written as `status / 100`, which no index answers: the walk back in id order finds a page of a
      // common class at once and of a rare one soon, where reading the range from the status index would sort every
      // 2xx row of the log. An exact status reads its index (migration 020), in order.
      // (The divisor is in the SQL text: node:sqlite binds a number as a real, and `status / 100.0` is no class.)
      query = query.where(sql<number>`status / 100`, '=', Number(status[0]));
    } else if (status) {
      query = query.where('status', '=', Number(status));
    }
    if (method) query = query.where('method', '=', method);
    // A prefix may match most rows (`/v1/chat`) or few: the walk in id order, not an index of paths (migration 020).
    if (path_prefix)
      query = query.where((eb) =>
        eb(eb.fn('substr', ['path', eb.val(1), eb.val(path_prefix.length)]), '=', path_prefix),
      );
    if (created_after) query = query.where('created_at', '>=', utc(created_after));
    if (created_before) query = query.where('created_at', '<', utc(created_before));
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const { body, headers } = toPage(rows, page, (row) => ({ id: row.id }), presentRequestLogEntry, context.url);
    return { status: 200, contentType: 'application/json', body, headers };
  },
} satisfies Pick<Handlers<RequestContext>, 'listAuditLogs' | 'listRequestLogs'>;

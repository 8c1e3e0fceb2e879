// A document's versions: listed newest first, read one by one, and restored (a restore is a new version whose
// content is an earlier one's; the versions in between stay).
import type { Handlers } from '../../../generated/operations.ts';
import type { RequestContext } from '../../platform/context.ts';
import { pageRequest, toPage } from '../../platform/pagination.ts';
import { notFound } from '../../platform/problems.ts';
import { loadDocument, lockDocument } from './documents.ts';
import { presentVersion, presentVersionSummary, saveVersion, versionsOf } from './store.ts';

export const versionHandlers = {
  async listDocumentVersions(request, context) {
    const { row } = await loadDocument(context, request.path.id);
    const page = pageRequest(request.query);
    let query = versionsOf(context.platform.db, context.caller.workspace.id, row.id);
    if (request.query.source_kind !== undefined) query = query.where('source_kind', '=', request.query.source_kind);
    // By number, which is the order they were made in (ids are in the order their requests began, and a command's
    // request begins before the versions made while it ran).
    query = query.orderBy('number', 'desc').limit(page.limit + 1);
    const after = page.after;
    if (after)
      query = query.where('number', '<', (eb) =>
        eb
          .selectFrom('document_versions')
          .select('number')
          .where('id', '=', after.id)
          .where('document_id', '=', row.id),
      );
    const rows = await query.execute();
    const { body, headers } = toPage(rows, page, (version) => ({ id: version.id }), presentVersionSummary, context.url);
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async getDocumentVersion(request, context) {
    const { row } = await loadDocument(context, request.path.id);
    const version = await versionsOf(context.platform.db, context.caller.workspace.id, row.id)
      .where('id', '=', request.path.version_id)
      .executeTakeFirst();
    if (!version) throw notFound('version', request.path.version_id);
    return { status: 200, contentType: 'application/json', body: presentVersion(version) };
  },

  async restoreDocumentVersion(request, context) {
    const { row } = await loadDocument(context, request.path.id);
    const restored = await versionsOf(context.platform.db, context.caller.workspace.id, row.id)
      .where('id', '=', request.path.version_id)
      .executeTakeFirst();
    if (!restored) throw notFound('version', request.path.version_id);
    const realtime = context.platform.services.realtime;
    const version = await realtime.withLiveDocument(
      row.id,
      (live) =>
        context.platform.db.transaction().execute(async (trx) => {
          // Typing of the last second becomes a version before the restore replaces it.
          const locked = await realtime.keepLiveEdits(trx, await lockDocument(trx, context, row.id), live, context.now);
          const source = {
            kind: 'restore' as const,
            apiKeyId: context.caller.apiKey.id,
            userId: context.caller.userId,
            restoredFrom: { id: restored.id, number: restored.number },
          };
          return (
            await saveVersion(
              trx,
              locked,
              restored.content,
              source,
              context.now,
              await live.apply(locked, restored.content),
            )
          ).version;
        }),
      restored.content,
    );
    return {
      status: 201,
      contentType: 'application/json',
      headers: { Location: `/v1/documents/${row.id}/versions/${version.id}` },
      body: presentVersion(version),
    };
  },
} satisfies Pick<Handlers<RequestContext>, 'listDocumentVersions' | 'getDocumentVersion' | 'restoreDocumentVersion'>;

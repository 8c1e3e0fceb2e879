// Documents: create (version 1 and an edit token), list, get, update (a changed content is a new version, with
// optimistic concurrency), delete, publish and unpublish, the public page, and edit tokens. Every read and change
// first settles the real-time session (realtime.ts), so the API sees every edit made over the socket, and every
// change of content goes through the live Yjs document, so editors see it at once.
import { type Kysely, sql, type Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import type { Handlers } from '../../../generated/operations.ts';
import { iso } from '../../platform/clock.ts';
import { callerName, callerRole, type Platform, type RequestContext } from '../../platform/context.ts';
import { newId } from '../../platform/ids.ts';
import { parseInstant } from '../../platform/instant.ts';
import { audited, lockOwned } from '../../platform/owned.ts';
import { pageRequest, paginate, toPage } from '../../platform/pagination.ts';
import { notFound, Problem } from '../../platform/problems.ts';
import { consumePublicBudget } from '../../platform/rate-limit.ts';
import type { Database } from '../../storage/schema.ts';
import { projectsOf } from '../projects/index.ts';
import { voicesOf } from '../voices/index.ts';
import { recordEvent } from '../webhooks/index.ts';
import { htmlOf } from './conversions.ts';
import { type EditPermission, signEditToken } from './edit-tokens.ts';
import { type LiveDocument, Realtime } from './realtime.ts';
import {
  type DocumentRow,
  documentsOf,
  presentDocument,
  presentSummary,
  saveVersion,
  type VersionRow,
} from './store.ts';

type Schemas = components['schemas'];
type Db = Kysely<Database> | Transaction<Database>;

/** A document of the caller's workspace with its current version, after its session's edits are settled; 404 otherwise. */
/** Where a document is looked up: a request's context, or the same parts from a workflow step. */
export interface DocumentScope {
  platform: Platform;
  caller: { workspace: { id: string } };
}

export async function loadDocument(
  context: DocumentScope,
  id: string,
): Promise<{ row: DocumentRow; current: VersionRow }> {
  const db = context.platform.db;
  const realtime = context.platform.services.realtime;
  let row = await documentsOf(db, context.caller.workspace.id).where('id', '=', id).executeTakeFirst();
  if (row && realtime.unsettled(row)) {
    await realtime.settle(id);
    row = await documentsOf(db, context.caller.workspace.id).where('id', '=', id).executeTakeFirst();
  }
  if (!row) throw notFound('document', id);
  const current = await db
    .selectFrom('document_versions')
    .selectAll()
    .where('id', '=', row.current_version_id)
    .executeTakeFirst();
  // Deleted between the two reads.
  if (!current) throw notFound('document', id);
  return { row, current };
}

/** The document of a change, its row locked for the caller's transaction; 404 when there is none. */
export async function lockDocument(
  trx: Transaction<Database>,
  context: DocumentScope,
  id: string,
): Promise<DocumentRow> {
  const row = await lockOwned(trx, documentsOf(trx, context.caller.workspace.id).where('id', '=', id), 'document', id);
  return row;
}

/** `409 version_conflict` for a change based on text that editors have changed since (not saved as a version yet). */
export function changedMeanwhile(row: DocumentRow): Problem {
  return new Problem(
    'version_conflict',
    `Editors changed the document meanwhile (their changes become the version after ${row.current_version_id}); get the document and try again.`,
  );
}

/** `409 version_conflict` when the change is based on a version that is no longer the current one. */
export function checkBaseVersion(row: DocumentRow, baseVersionId: string | undefined): void {
  if (baseVersionId !== undefined && baseVersionId !== row.current_version_id) {
    throw new Problem(
      'version_conflict',
      `The document's current version is ${row.current_version_id}, not ${baseVersionId}: someone changed it meanwhile. Get the document, merge, and send its current_version.id.`,
      {
        errors: [{ pointer: '/base_version_id', detail: `is not the current version (${row.current_version_id})` }],
      },
    );
  }
}

async function checkProject(db: Db, workspaceId: string, projectId: string) {
  const project = await projectsOf(db, workspaceId).where('id', '=', projectId).executeTakeFirst();
  if (!project)
    throw new Problem('not_found', `No project ${projectId} in this workspace.`, {
      errors: [{ pointer: '/project_id', detail: 'is not a project of this workspace' }],
    });
  return project;
}

/** The voice's id if it is a voice of the workspace, else null. */
async function ownVoiceId(db: Kysely<Database>, workspaceId: string, voiceId: string): Promise<string | null> {
  return (
    (
      await db
        .selectFrom('voices')
        .select('id')
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', voiceId)
        .executeTakeFirst()
    )?.id ?? null
  );
}

async function checkVoice(db: Db, workspaceId: string, voiceId: string): Promise<void> {
  const voice = await voicesOf(db, workspaceId).where('id', '=', voiceId).executeTakeFirst();
  if (!voice)
    throw new Problem('not_found', `No voice ${voiceId} in this workspace.`, {
      errors: [{ pointer: '/voice_id', detail: 'is not a voice of this workspace' }],
    });
}

/** `%`, `_` and `\` match themselves in a LIKE pattern written with `escape '\'`. */
function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

function websocketUrl(baseUrl: string, documentId: string): string {
  return `${baseUrl.replace(/^http/, 'ws')}/v1/documents/${documentId}/realtime`;
}

async function issueEditToken(
  context: RequestContext,
  documentId: string,
  options: { permission: EditPermission; ttlSeconds: number; userId: string | null },
): Promise<Schemas['DocumentEditToken']> {
  const expiresAt = new Date(context.now.getTime() + options.ttlSeconds * 1000);
  const token = await signEditToken(
    context.platform.db,
    {
      documentId,
      workspaceId: context.caller.workspace.id,
      permission: options.permission,
      apiKeyId: context.caller.apiKey.id,
      userId: options.userId,
    },
    context.now,
    expiresAt,
  );
  return {
    object: 'document.edit_token',
    document_id: documentId,
    permission: options.permission,
    token,
    websocket_url: websocketUrl(context.platform.config.publicBaseUrl, documentId),
    user_id: options.userId,
    expires_at: iso(new Date(Math.floor(expiresAt.getTime() / 1000) * 1000)),
    created_at: iso(context.now),
  };
}

const PAGE_STYLE =
  'body{max-width:46rem;margin:2rem auto;padding:0 1rem;font:16px/1.6 system-ui,sans-serif;color:#1d1d1f}pre{overflow:auto;background:#f5f5f7;padding:.75rem}code{font-family:ui-monospace,monospace}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25rem .5rem}img{max-width:100%}';

/** Whether rendered content shows its title itself: it opens with a level-1 heading, or one of its level-1 headings
 *  reads as the title (markup, case and spacing aside). */
function hasOwnTitle(html: string, title: string): boolean {
  if (/^\s*<h1[\s>]/.test(html)) return true;
  const plain = (text: string) => text.replace(/\s+/g, ' ').trim().toLowerCase();
  const entities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
  const text = (inner: string) =>
    withoutTags(inner).replace(/&(#\d+|[a-z]+);/g, (entity, name: string) =>
      name.startsWith('#') ? String.fromCodePoint(Number(name.slice(1))) : (entities[name] ?? entity),
    );
  const wanted = plain(title);
  return headingsOf(html).some((inner) => plain(text(inner)) === wanted);
}

/**
 * The HTML without its tags: what `.replace(/<[^>]*>/g, '')` gives, in linear time (the pattern would search to the end
 * from every `<` when no `>` follows). A `<` up to the next `>` goes; with no `>` after one, none after a later.
 */
export function withoutTags(html: string): string {
  let out = '';
  let kept = 0;
  for (let at = html.indexOf('<'); at >= 0; at = html.indexOf('<', kept)) {
    const close = html.indexOf('>', at + 1);
    if (close < 0) break;
    out += html.slice(kept, at);
    kept = close + 1;
  }
  return out + html.slice(kept);
}

/**
 * What the level-1 headings of the HTML hold: the captures of `/<h1[^>]*>([\s\S]*?)<\/h1>/g`, found in linear time
 * (the pattern would search to the end from every `<h1` when no `>` or `</h1>` follows). With none after one `<h1`,
 * there is none after a later one either.
 */
export function headingsOf(html: string): string[] {
  const found: string[] = [];
  for (let at = html.indexOf('<h1'); at >= 0; ) {
    const open = html.indexOf('>', at + 3);
    if (open < 0) break;
    const close = html.indexOf('</h1>', open + 1);
    if (close < 0) break;
    found.push(html.slice(open + 1, close));
    at = html.indexOf('<h1', close + 5);
  }
  return found;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export const documentHandlers = {
  async listDocuments(request, context) {
    const page = pageRequest(request.query);
    const { title, voice_id, project_id, status, visibility, created_after, created_before } = request.query;
    let query = documentsOf(context.platform.db, context.caller.workspace.id);
    if (title !== undefined)
      query = query.where(sql<boolean>`lower(title) like ${`%${likeLiteral(title.toLowerCase())}%`} escape '\\'`);
    if (voice_id !== undefined) query = query.where('voice_id', '=', voice_id);
    if (project_id !== undefined) query = query.where('project_id', '=', project_id);
    if (status !== undefined) query = query.where('status', '=', status);
    if (visibility !== undefined) query = query.where('visibility', '=', visibility);
    if (created_after !== undefined) query = query.where('created_at', '>=', iso(parseInstant(created_after)));
    if (created_before !== undefined) query = query.where('created_at', '<', iso(parseInstant(created_before)));
    const rows = await paginate(query, { id: 'id' }, page).execute();
    const versionIds = rows.map((row) => row.current_version_id);
    const versions =
      versionIds.length === 0
        ? []
        : await context.platform.db.selectFrom('document_versions').selectAll().where('id', 'in', versionIds).execute();
    const byId = new Map(versions.map((version) => [version.id, version]));
    const baseUrl = context.platform.config.publicBaseUrl;
    const { body, headers } = toPage(
      rows,
      page,
      (row) => ({ id: row.id }),
      (row) => presentSummary(row, byId.get(row.current_version_id)!, baseUrl),
      context.url,
    );
    return { status: 200, contentType: 'application/json', body, headers };
  },

  async createDocument(request, context) {
    const { title, content = '', metadata = {} } = request.body;
    const workspaceId = context.caller.workspace.id;
    const db = context.platform.db;
    const project = request.body.project_id ? await checkProject(db, workspaceId, request.body.project_id) : null;
    if (request.body.voice_id) await checkVoice(db, workspaceId, request.body.voice_id);
    // A project's default is checked when the project is saved; one saved before that check was made (or whose voice
    // is gone) is not copied.
    const defaultVoice =
      request.body.voice_id === undefined && project?.default_voice_id
        ? await ownVoiceId(db, workspaceId, project.default_voice_id)
        : null;
    const voiceId = request.body.voice_id !== undefined ? request.body.voice_id : defaultVoice;
    const { row, version } = await db.transaction().execute(async (trx) => {
      const draft: DocumentRow = {
        id: newId('doc', context.now),
        workspace_id: workspaceId,
        project_id: project?.id ?? null,
        title,
        voice_id: voiceId,
        status: 'draft',
        visibility: 'private',
        author: context.caller.userId,
        published_at: null,
        metadata: JSON.stringify(metadata),
        content,
        current_version_id: '',
        version_count: 0,
        yjs_state: null,
        yjs_markdown: null,
        yjs_version_markdown: null,
        live_api_key_id: null,
        live_user_id: null,
        created_at: iso(context.now),
        updated_at: iso(context.now),
      };
      await trx.insertInto('documents').values(draft).execute();
      const saved = await saveVersion(
        trx,
        draft,
        content,
        { kind: 'create', apiKeyId: context.caller.apiKey.id, userId: context.caller.userId },
        context.now,
      );
      return { row: saved.document, version: saved.version };
    });
    const editToken = await issueEditToken(context, row.id, {
      permission: 'edit',
      ttlSeconds: 900,
      userId: context.caller.userId,
    });
    const body = { ...presentDocument(row, version, context.platform.config.publicBaseUrl), edit_token: editToken };
    return { status: 201, contentType: 'application/json', headers: { Location: `/v1/documents/${row.id}` }, body };
  },

  async getDocument(request, context) {
    const { row, current } = await loadDocument(context, request.path.id);
    return {
      status: 200,
      contentType: 'application/json',
      body: presentDocument(row, current, context.platform.config.publicBaseUrl),
    };
  },

  async updateDocument(request, context) {
    const changes = request.body;
    const workspaceId = context.caller.workspace.id;
    const db = context.platform.db;
    const { row: before } = await loadDocument(context, request.path.id);
    checkBaseVersion(before, changes.base_version_id);
    if (changes.project_id) await checkProject(db, workspaceId, changes.project_id);
    if (changes.voice_id) await checkVoice(db, workspaceId, changes.voice_id);
    const contentChanged = changes.content !== undefined && changes.content !== before.content;
    const fields = {
      ...(changes.title !== undefined ? { title: changes.title } : {}),
      ...(changes.voice_id !== undefined ? { voice_id: changes.voice_id } : {}),
      ...(changes.project_id !== undefined ? { project_id: changes.project_id } : {}),
      ...(changes.metadata !== undefined ? { metadata: JSON.stringify(changes.metadata) } : {}),
    };
    const update = async (trx: Transaction<Database>, live?: LiveDocument) => {
      let row = await lockDocument(trx, context, before.id);
      checkBaseVersion(row, changes.base_version_id);
      if (Object.keys(fields).length > 0) {
        await trx
          .updateTable('documents')
          .set({ ...fields, updated_at: iso(context.now) })
          .where('id', '=', row.id)
          .execute();
        row = { ...row, ...fields, updated_at: iso(context.now) };
      }
      if (live && changes.content !== row.content) {
        // An editor's typing of the last second is not a version yet: with base_version_id it is a conflict, without
        // it the typing becomes a version first, so the last write wins without losing it.
        if (changes.base_version_id !== undefined && (await Realtime.hasLiveEdits(row, live)))
          throw changedMeanwhile(row);
        row = await context.platform.services.realtime.keepLiveEdits(trx, row, live, context.now);
        row = (
          await saveVersion(
            trx,
            row,
            changes.content!,
            { kind: 'edit', apiKeyId: context.caller.apiKey.id, userId: context.caller.userId },
            context.now,
            await live.apply(row, changes.content!),
          )
        ).document;
      }
      return row;
    };
    const row = contentChanged
      ? await context.platform.services.realtime.withLiveDocument(
          before.id,
          (live) => db.transaction().execute((trx) => update(trx, live)),
          changes.content,
        )
      : await db.transaction().execute((trx) => update(trx));
    const current = await db
      .selectFrom('document_versions')
      .selectAll()
      .where('id', '=', row.current_version_id)
      .executeTakeFirstOrThrow();
    return {
      status: 200,
      contentType: 'application/json',
      body: presentDocument(row, current, context.platform.config.publicBaseUrl),
    };
  },

  async deleteDocument(request, context) {
    await audited(context, async (trx) => {
      const row = await lockDocument(trx, context, request.path.id);
      await trx.deleteFrom('document_versions').where('document_id', '=', row.id).execute();
      await trx.deleteFrom('documents').where('id', '=', row.id).execute();
      return [
        undefined,
        {
          action: 'document.deleted',
          target: { type: 'document', id: row.id, display_name: row.title },
          details: { title: row.title, versions: row.version_count },
        },
      ];
    });
    await context.platform.services.realtime.documentDeleted(request.path.id);
    return { status: 204 };
  },

  async createDocumentEditToken(request, context) {
    const { permission = 'edit', ttl_seconds = 900, user_id = null } = request.body ?? {};
    if (permission === 'edit' && context.caller.role === 'viewer') {
      throw new Problem(
        'insufficient_role',
        `An edit token needs the editor role or higher; ${callerRole(context.caller)}, which can create read tokens (permission: read).`,
      );
    }
    // Naming a member attributes the session's edits to them: as with API keys (createApiKey), a key acts for its own
    // member, and only an owner may act in another's name.
    if (user_id !== null && user_id !== context.caller.userId && context.caller.role !== 'owner') {
      throw new Problem(
        'insufficient_role',
        `Only an owner can name another member on an edit token; ${callerName(context.caller).toLowerCase()} can name ${context.caller.userId ?? 'no member (it is a service key)'}${context.caller.userId ? ' or no one' : ''}.`,
      );
    }
    const { row } = await loadDocument(context, request.path.id);
    if (user_id !== null) {
      const member = await context.platform.db
        .selectFrom('members')
        .select('user_id')
        .where('workspace_id', '=', context.caller.workspace.id)
        .where('user_id', '=', user_id)
        .executeTakeFirst();
      if (!member)
        throw new Problem('not_found', `No member ${user_id} in this workspace.`, {
          errors: [{ pointer: '/user_id', detail: 'is not a member of this workspace' }],
        });
    }
    const body = await issueEditToken(context, row.id, { permission, ttlSeconds: ttl_seconds, userId: user_id });
    return { status: 201, contentType: 'application/json', headers: { Location: `/v1/documents/${row.id}` }, body };
  },

  async publishDocument(request, context) {
    const visibility = request.body?.visibility;
    const db = context.platform.db;
    const row = await db.transaction().execute(async (trx) => {
      const row = await lockDocument(trx, context, request.path.id);
      const next = {
        status: 'published' as const,
        visibility: visibility ?? (row.status === 'draft' ? 'public' : row.visibility),
        published_at: row.status === 'draft' ? iso(context.now) : row.published_at,
      };
      if (next.status === row.status && next.visibility === row.visibility) return row;
      const updated = { ...row, ...next, updated_at: iso(context.now) };
      await trx
        .updateTable('documents')
        .set({ ...next, updated_at: updated.updated_at })
        .where('id', '=', row.id)
        .execute();
      // Sent when the document becomes published, or a published one becomes public; never on becoming private.
      if (row.status === 'draft' || next.visibility === 'public') {
        await recordEvent(
          trx,
          row.workspace_id,
          'document.published',
          {
            document_id: row.id,
            published_at: updated.published_at!,
            author: row.author,
            project_id: row.project_id,
            title: row.title,
          },
          context.now,
        );
      }
      return updated;
    });
    const { current } = await loadDocument(context, row.id);
    return {
      status: 200,
      contentType: 'application/json',
      body: presentDocument(row, current, context.platform.config.publicBaseUrl),
    };
  },

  async unpublishDocument(request, context) {
    const row = await context.platform.db.transaction().execute(async (trx) => {
      const row = await lockDocument(trx, context, request.path.id);
      if (row.status === 'draft' && row.visibility === 'private') return row;
      const next = {
        status: 'draft' as const,
        visibility: 'private' as const,
        published_at: null,
        updated_at: iso(context.now),
      };
      await trx.updateTable('documents').set(next).where('id', '=', row.id).execute();
      return { ...row, ...next };
    });
    const { current } = await loadDocument(context, row.id);
    return {
      status: 200,
      contentType: 'application/json',
      body: presentDocument(row, current, context.platform.config.publicBaseUrl),
    };
  },

  async getPublicDocument(request, context) {
    const limit = await consumePublicBudget(context.platform.rateLimitStore, context.ip);
    const notPublic = () => new Problem('not_found', `No public document ${request.path.id}.`, { headers: limit });
    const row = await context.platform.db
      .selectFrom('documents')
      .selectAll()
      .where('id', '=', request.path.id)
      .executeTakeFirst();
    if (row?.status !== 'published' || row.visibility !== 'public') throw notPublic();
    // What editors saved and is not a version yet is shown too, without making it one: readers do not cut versions.
    const content =
      row.yjs_markdown !== null && row.yjs_markdown !== row.yjs_version_markdown ? row.yjs_markdown : row.content;
    const html = await htmlOf(content);
    const body: Schemas['PublicDocument'] = {
      id: row.id,
      object: 'public_document',
      title: row.title,
      content,
      html,
      published_at: row.published_at!,
      updated_at: row.updated_at,
    };
    if (context.accepts('application/json', 'text/html') === 'text/html') {
      // A document that opens with its own level-1 heading, or has one that says its title, has its title on the
      // page already; another would repeat it.
      const heading = hasOwnTitle(html, row.title) ? '' : `<h1>${escapeHtml(row.title)}</h1>\n`;
      const page = `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(row.title)}</title><style>${PAGE_STYLE}</style></head>\n<body><article>${heading}${html}</article></body></html>\n`;
      return {
        status: 200,
        contentType: 'text/html',
        // The page runs no script and loads nothing but its own inline style and images the author linked.
        headers: {
          ...limit,
          'Content-Security-Policy':
            "default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; frame-ancestors *",
          'X-Content-Type-Options': 'nosniff',
          'Referrer-Policy': 'no-referrer',
        },
        body: page,
      };
    }
    return { status: 200, contentType: 'application/json', headers: limit, body };
  },
} satisfies Pick<
  Handlers<RequestContext>,
  | 'listDocuments'
  | 'createDocument'
  | 'getDocument'
  | 'updateDocument'
  | 'deleteDocument'
  | 'createDocumentEditToken'
  | 'publishDocument'
  | 'unpublishDocument'
  | 'getPublicDocument'
>;

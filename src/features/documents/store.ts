// Documents and their versions in the database: the workspace-scoped queries, the one way a version is written
// (saveVersion), and the presenters typed by the contract.
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { components } from '../../../generated/openapi.ts';
import { characterCount } from '../../platform/characters.ts';
import { iso } from '../../platform/clock.ts';
import { newId } from '../../platform/ids.ts';
import type { Database } from '../../storage/schema.ts';
import { countWords } from './markdown.ts';
import type { DocumentsTable, DocumentVersionsTable, VersionSourceKind } from './schema.ts';

type Schemas = components['schemas'];
type Db = Kysely<Database> | Transaction<Database>;
export type DocumentRow = Selectable<DocumentsTable>;
export type VersionRow = Selectable<DocumentVersionsTable>;

/** The documents of one workspace: every query of this feature starts here (or at versionsOf). */
export function documentsOf(db: Db, workspaceId: string) {
  return db.selectFrom('documents').selectAll().where('workspace_id', '=', workspaceId);
}

export function versionsOf(db: Db, workspaceId: string, documentId: string) {
  return db
    .selectFrom('document_versions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('document_id', '=', documentId);
}

export interface VersionSource {
  kind: VersionSourceKind;
  apiKeyId: string;
  userId: string | null;
  command?: string | null;
  restoredFrom?: { id: string; number: number } | null;
}

/**
 * Writes the next version of a document whose row the caller has locked, and makes it the current one. `yjs`, when
 * given, is the real-time state that now matches the content (written with it, so the session and the API agree).
 */
export async function saveVersion(
  trx: Transaction<Database>,
  document: DocumentRow,
  content: string,
  source: VersionSource,
  now: Date,
  yjs?: { state: string | null; markdown: string | null },
): Promise<{ document: DocumentRow; version: VersionRow }> {
  const version: VersionRow = {
    id: newId('ver', now),
    document_id: document.id,
    workspace_id: document.workspace_id,
    number: document.version_count + 1,
    source_kind: source.kind,
    api_key_id: source.apiKeyId,
    user_id: source.userId,
    command: source.command ?? null,
    restored_from_version_id: source.restoredFrom?.id ?? null,
    restored_from_version_number: source.restoredFrom?.number ?? null,
    content,
    word_count: countWords(content),
    character_count: characterCount(content),
    created_at: iso(now),
  };
  await trx.insertInto('document_versions').values(version).execute();
  const changes: Partial<DocumentRow> = {
    content,
    current_version_id: version.id,
    version_count: version.number,
    updated_at: iso(now),
    live_api_key_id: null,
    live_user_id: null,
    ...(yjs ? { yjs_state: yjs.state, yjs_markdown: yjs.markdown, yjs_version_markdown: yjs.markdown } : {}),
  };
  await trx.updateTable('documents').set(changes).where('id', '=', document.id).execute();
  return { document: { ...document, ...changes }, version };
}

export function publicUrl(baseUrl: string, row: Pick<DocumentRow, 'id' | 'status' | 'visibility'>): string | null {
  return row.status === 'published' && row.visibility === 'public' ? `${baseUrl}/v1/public/documents/${row.id}` : null;
}

export function presentVersionSummary(row: VersionRow): Schemas['DocumentVersionSummary'] {
  return {
    id: row.id,
    object: 'document.version',
    document_id: row.document_id,
    number: row.number,
    source: {
      kind: row.source_kind,
      api_key_id: row.api_key_id,
      user_id: row.user_id,
      command: row.command as Schemas['DocumentCommandName'] | null,
      restored_from_version_id: row.restored_from_version_id,
      restored_from_version_number: row.restored_from_version_number,
    },
    word_count: row.word_count,
    character_count: row.character_count,
    created_at: row.created_at,
  };
}

export function presentVersion(row: VersionRow): Schemas['DocumentVersion'] {
  return { ...presentVersionSummary(row), content: row.content };
}

export function presentSummary(row: DocumentRow, current: VersionRow, baseUrl: string): Schemas['DocumentSummary'] {
  return {
    id: row.id,
    object: 'document',
    title: row.title,
    voice_id: row.voice_id,
    project_id: row.project_id,
    status: row.status,
    visibility: row.visibility,
    author: row.author,
    published_at: row.published_at,
    public_url: publicUrl(baseUrl, row),
    metadata: JSON.parse(row.metadata),
    current_version: presentVersionSummary(current),
    version_count: row.version_count,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function presentDocument(row: DocumentRow, current: VersionRow, baseUrl: string): Schemas['Document'] {
  const { id, object, title, ...rest } = presentSummary(row, current, baseUrl);
  return { id, object, title, content: row.content, ...rest };
}

// The documents feature's tables, merged into the platform's Database interface (see src/features/projects/schema.ts).
declare module '../../storage/schema.ts' {
  interface Database {
    documents: DocumentsTable;
    document_versions: DocumentVersionsTable;
    document_token_keys: DocumentTokenKeysTable;
  }
}

export type DocumentStatus = 'draft' | 'published';
export type DocumentVisibility = 'private' | 'public';
export type VersionSourceKind = 'create' | 'edit' | 'realtime' | 'command' | 'restore';

export interface DocumentsTable {
  id: string;
  workspace_id: string;
  project_id: string | null;
  title: string;
  voice_id: string | null;
  status: DocumentStatus;
  visibility: DocumentVisibility;
  author: string | null;
  published_at: string | null;
  /** JSON object. */
  metadata: string;
  /** The current version's content (Markdown), kept here so that a read needs no join. */
  content: string;
  current_version_id: string;
  version_count: number;
  /** Base64 of the Yjs document's state (Y.encodeStateAsUpdate); null until a session opens it (then seeded from `content`). */
  yjs_state: string | null;
  /** The Markdown `yjs_state` renders to, written with it. */
  yjs_markdown: string | null;
  /** The Markdown the Yjs document rendered to when the current version was made: a session's changes make a
   *  version when `yjs_markdown` differs from it (a Markdown round trip may differ from the version's text). */
  yjs_version_markdown: string | null;
  /** Who changed the document in a session since the last version (the edit token's key and member). */
  live_api_key_id: string | null;
  live_user_id: string | null;
  created_at: string;
  updated_at: string;
}

export interface DocumentVersionsTable {
  id: string;
  document_id: string;
  workspace_id: string;
  number: number;
  source_kind: VersionSourceKind;
  api_key_id: string;
  user_id: string | null;
  command: string | null;
  restored_from_version_id: string | null;
  restored_from_version_number: number | null;
  content: string;
  word_count: number;
  character_count: number;
  created_at: string;
}

export interface DocumentTokenKeysTable {
  id: string;
  /** Base64url of 32 random bytes. */
  secret: string;
  created_at: string;
}

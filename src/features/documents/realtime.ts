// Real-time editing: Hocuspocus 4 on the API's own HTTP port, at /v1/documents/{id}/realtime. A session is
// authorised by an edit token (edit-tokens.ts); a read-only token's changes are ignored by Hocuspocus.
//
// How the socket and the API agree (docs/guides/documents.md says it for users):
//   - The Yjs state is saved to the document's row within a second of a change (Hocuspocus's debounce), with the
//     Markdown it renders to (`yjs_markdown`) and who changed it.
//   - A version (source `realtime`) is made when that Markdown differs from the one of the current version
//     (`yjs_version_markdown`): after REALTIME_VERSION_IDLE_MS without changes (30 s), when the last editor leaves,
//     and whenever the API reads or changes the document (`settle`), so a typing burst is one version and a
//     socket edit is visible to GET /v1/documents/{id} at once.
//   - An API change (update, command, restore) is applied to the live Yjs document (`applyContent`), so editors see
//     it at once, and its rendering becomes `yjs_version_markdown`: the session does not make it a version twice.
//   - With REDIS_URL, Hocuspocus's Redis extension shares live documents between the server processes of one
//     database (each change reaches every process's editors; one process saves at a time).
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { Redis as RedisExtension } from '@hocuspocus/extension-redis';
import { type Document, Hocuspocus } from '@hocuspocus/server';
import { Redis as IORedis } from 'ioredis';
import type { Kysely } from 'kysely';
import { WebSocketServer } from 'ws';
import * as Y from 'yjs';
import type { Platform } from '../../platform/context.ts';
import type { UpgradeEndpoint } from '../../platform/feature.ts';
import type { Database } from '../../storage/schema.ts';
import { forUpdate } from '../../storage/locks.ts';
import { TokenRefused, verifyEditToken, type EditClaims } from './edit-tokens.ts';
import { renderMarkdown, replaceContent, yDocFromMarkdown } from './markdown.ts';
import { saveVersion } from './store.ts';

const PATH = /^\/v1\/documents\/(doc_[0-9A-HJKMNP-TV-Z]{26})\/realtime$/;
/** The origin of the transactions the API makes on a live document (not an editor's). */
const API_ORIGIN = 'content-service:api';

interface SessionContext {
  pathDocumentId: string;
  /** Closes the WebSocket (after a refusal: one socket serves one document, so a refused one is done). */
  closeSocket?: (reason: string) => void;
  claims?: EditClaims;
}

/** Refuses a connection: Hocuspocus sends `reason` in the Auth message (no message: Hocuspocus logs those that have one). */
class Refusal extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super('');
    this.reason = reason;
  }
}

export class Realtime {
  readonly hocuspocus: Hocuspocus<SessionContext>;
  readonly #db: Kysely<Database>;
  readonly #platform: Platform;
  readonly #sockets = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 * 1024 });
  readonly #idle = new Map<string, NodeJS.Timeout>();
  /** Per document, the editor whose change the next save records (the last one to change it). */
  readonly #editors = new Map<string, EditClaims>();
  /** The documents changed by an editor since this process last saved them. */
  readonly #dirty = new Set<string>();
  #closed = false;

  constructor(platform: Platform) {
    this.#platform = platform;
    this.#db = platform.db;
    const extensions = platform.config.redisUrl ? [new RedisExtension({ redis: new IORedis(platform.config.redisUrl, { lazyConnect: false }), prefix: 'content-service:documents' } as never)] : [];
    this.hocuspocus = new Hocuspocus<SessionContext>({
      quiet: true,
      // The Yjs state is saved a second after a change (at most every 5 s while typing); versions wait for idleness.
      debounce: 1000,
      maxDebounce: 5000,
      extensions,
      onAuthenticate: (payload) => this.#authenticate(payload),
      onLoadDocument: async ({ documentName, document }) => {
        const state = await this.#loadState(documentName);
        if (state) Y.applyUpdate(document, state);
      },
      onChange: async ({ documentName, context, transactionOrigin }) => {
        if (transactionOrigin === API_ORIGIN) return;
        this.#dirty.add(documentName);
        if (context?.claims) this.#editors.set(documentName, context.claims);
      },
      onStoreDocument: async ({ documentName, document }) => this.#store(documentName, document),
    });
  }

  endpoint(): UpgradeEndpoint {
    return {
      matches: (pathname) => PATH.test(pathname),
      handle: (req, socket, head) => this.#upgrade(req, socket, head),
      close: () => this.close(),
    };
  }

  #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const pathDocumentId = PATH.exec(url.pathname)![1]!;
    this.#sockets.handleUpgrade(req, socket, head, (ws) => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
      // The Auth message with the refusal is sent first; the close frame follows it.
      const closeSocket = (reason: string) => setImmediate(() => ws.close(4403, reason));
      const connection = this.hocuspocus.handleConnection(ws, new Request(new URL(url.pathname + url.search, this.#platform.config.publicBaseUrl), { headers }), { pathDocumentId, closeSocket });
      ws.on('message', (data: Buffer) => connection.handleMessage(new Uint8Array(data)));
      ws.on('close', (code, reason) => connection.handleClose({ code, reason: reason.toString() }));
      ws.on('error', () => ws.terminate());
    });
  }

  async #authenticate(payload: { token: string; documentName: string; requestParameters: URLSearchParams; connectionConfig: { readOnly: boolean }; context: SessionContext }) {
    try {
      return await this.#authorise(payload);
    } catch (error) {
      if (error instanceof Refusal) payload.context.closeSocket?.(error.reason);
      throw error;
    }
  }

  async #authorise({ token, documentName, requestParameters, connectionConfig, context }: { token: string; documentName: string; requestParameters: URLSearchParams; connectionConfig: { readOnly: boolean }; context: SessionContext }) {
    // The URL names the document; the Hocuspocus messages name it too, and must name the same one.
    if (documentName !== context.pathDocumentId) throw new Refusal('token_wrong_document');
    let claims: EditClaims;
    try {
      claims = await verifyEditToken(this.#db, requestParameters.get('token') || token, documentName, this.#platform.clock.now());
    } catch (error) {
      if (error instanceof TokenRefused) throw new Refusal(error.reason);
      throw error;
    }
    const row = await this.#db.selectFrom('documents').select('id').where('id', '=', documentName).where('workspace_id', '=', claims.workspaceId).executeTakeFirst();
    if (!row) throw new Refusal('document_not_found');
    connectionConfig.readOnly = claims.permission === 'read';
    return { claims };
  }

  /** The saved Yjs state; a document never opened in a session is seeded from its content, once (the first
   *  process to seed wins, so two processes never start from two different Yjs histories of the same text). */
  async #loadState(documentId: string): Promise<Uint8Array | null> {
    const row = await this.#db.selectFrom('documents').select(['yjs_state', 'content']).where('id', '=', documentId).executeTakeFirst();
    if (!row) return null;
    if (row.yjs_state !== null) return Buffer.from(row.yjs_state, 'base64');
    const seeded = yDocFromMarkdown(row.content);
    const markdown = renderMarkdown(seeded);
    await this.#db
      .updateTable('documents')
      .set({ yjs_state: Buffer.from(Y.encodeStateAsUpdate(seeded)).toString('base64'), yjs_markdown: markdown, yjs_version_markdown: markdown })
      .where('id', '=', documentId)
      .where('yjs_state', 'is', null)
      .execute();
    const saved = await this.#db.selectFrom('documents').select('yjs_state').where('id', '=', documentId).executeTakeFirst();
    return saved?.yjs_state ? Buffer.from(saved.yjs_state, 'base64') : null;
  }

  /** Saves the live state and its Markdown; the version waits for idleness or the last editor leaving. */
  async #store(documentId: string, document: Document): Promise<void> {
    const editor = this.#editors.get(documentId);
    this.#editors.delete(documentId);
    this.#dirty.delete(documentId);
    const result = await this.#db
      .updateTable('documents')
      .set({
        yjs_state: Buffer.from(Y.encodeStateAsUpdate(document)).toString('base64'),
        yjs_markdown: renderMarkdown(document),
        ...(editor ? { live_api_key_id: editor.apiKeyId, live_user_id: editor.userId } : {}),
      })
      .where('id', '=', documentId)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) {
      // Deleted meanwhile (by another process): its sessions end here too.
      this.hocuspocus.closeConnections(documentId);
      return;
    }
    clearTimeout(this.#idle.get(documentId));
    if (document.getConnectionsCount() === 0) {
      this.#idle.delete(documentId);
      await this.checkpoint(documentId);
    } else {
      const timer = setTimeout(() => {
        this.#idle.delete(documentId);
        this.checkpoint(documentId).catch((error) => this.#platform.logger.error({ err: error, document_id: documentId }, 'saving a real-time version failed'));
      }, this.#platform.config.realtimeVersionIdleMs);
      timer.unref();
      this.#idle.set(documentId, timer);
    }
  }

  /** Makes a `realtime` version of the saved session state when its Markdown differs from the current version's. */
  async checkpoint(documentId: string): Promise<void> {
    const saved = await this.#db.selectFrom('documents').select(['yjs_markdown', 'yjs_version_markdown']).where('id', '=', documentId).executeTakeFirst();
    if (!saved || saved.yjs_markdown === null || saved.yjs_markdown === saved.yjs_version_markdown) return;
    await this.#db.transaction().execute(async (trx) => {
      const row = await forUpdate(trx.selectFrom('documents').selectAll().where('id', '=', documentId), trx).executeTakeFirst();
      if (!row || row.yjs_markdown === null || row.yjs_markdown === row.yjs_version_markdown) return;
      await saveVersion(
        trx,
        row,
        row.yjs_markdown,
        { kind: 'realtime', apiKeyId: row.live_api_key_id ?? (await creatorKey(trx, documentId)), userId: row.live_user_id },
        this.#platform.clock.now(),
        { state: row.yjs_state, markdown: row.yjs_markdown },
      );
    });
  }

  /**
   * Before the API reads or changes a document: saves what a session of this process has not saved yet, and makes
   * it a version, so that the API sees every edit made so far.
   */
  async settle(documentId: string): Promise<void> {
    const live = this.hocuspocus.documents.get(documentId);
    if (live && !live.isLoading && this.#dirty.has(documentId)) await this.#store(documentId, live);
    await this.checkpoint(documentId);
  }

  /** Whether the API must settle the document before reading it: a session of this process holds unsaved edits,
   *  or a session (of any process) saved edits that are not a version yet. */
  unsettled(row: { id: string; yjs_markdown: string | null; yjs_version_markdown: string | null }): boolean {
    return this.#dirty.has(row.id) || (row.yjs_markdown !== null && row.yjs_markdown !== row.yjs_version_markdown);
  }

  /**
   * Runs `change` with the document's live Yjs document (loaded for the purpose when no session holds it): the
   * API's way to change content so that connected editors see it. `change` returns what it wrote, and may throw to
   * change nothing; the Yjs change must be made with `apply` inside it, after its checks.
   */
  async withLiveDocument<T>(documentId: string, change: (apply: (markdown: string) => { state: string; markdown: string }) => Promise<T>): Promise<T> {
    const connection = await this.hocuspocus.openDirectConnection(documentId, { pathDocumentId: documentId });
    try {
      const document = connection.document!;
      return await change((markdown) => {
        replaceContent(document, markdown, API_ORIGIN);
        return { state: Buffer.from(Y.encodeStateAsUpdate(document)).toString('base64'), markdown: renderMarkdown(document) };
      });
    } finally {
      await connection.disconnect();
    }
  }

  /** Ends the document's sessions on this process (it was deleted). */
  closeDocument(documentId: string): void {
    clearTimeout(this.#idle.get(documentId));
    this.#idle.delete(documentId);
    this.hocuspocus.closeConnections(documentId);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of this.#idle.values()) clearTimeout(timer);
    const names = [...this.hocuspocus.documents.keys()];
    // Saves each open document and makes its version before the database closes.
    for (const name of names) {
      const document = this.hocuspocus.documents.get(name);
      if (document && !document.isLoading) await this.#store(name, document).catch(() => {});
      await this.checkpoint(name).catch(() => {});
    }
    this.hocuspocus.closeConnections();
    for (const ws of this.#sockets.clients) ws.terminate();
    this.#sockets.close();
    for (const extension of this.hocuspocus.configuration.extensions) await (extension as { onDestroy?: (payload: unknown) => Promise<void> }).onDestroy?.({ instance: this.hocuspocus });
  }
}

/** The key that created the document: the attribution of session changes whose editor is unknown (a restart). */
async function creatorKey(trx: Kysely<Database>, documentId: string): Promise<string> {
  const first = await trx.selectFrom('document_versions').select('api_key_id').where('document_id', '=', documentId).where('number', '=', 1).executeTakeFirstOrThrow();
  return first.api_key_id;
}

const instances = new WeakMap<Platform, Realtime>();

/** The real-time service of a server (one per Platform). */
export function realtimeOf(platform: Platform): Realtime {
  let realtime = instances.get(platform);
  if (!realtime) {
    realtime = new Realtime(platform);
    instances.set(platform, realtime);
  }
  return realtime;
}

// Real-time editing: Hocuspocus 4 on the API's own HTTP port, at /v1/documents/{id}/realtime. A session is
// authorised by an edit token (edit-tokens.ts); a read-only token's changes are ignored by Hocuspocus.
//
// How the socket and the API agree (docs/guides/documents.md says it for users):
//   - Every process that holds a live document saves its Yjs state to the document's row at most SAVE_WITHIN_MS after
//     a change reached it, from an editor of its own or relayed by another process through Redis, with the Markdown
//     it renders to (`yjs_markdown`) and who changed it: a process killed after an editor's last word loses nothing
//     that reached another process a second earlier. A save merges the row's state into the live document first, so
//     processes saving one after the other never write back an older state.
//   - A version (source `realtime`) is made when that Markdown differs from the one of the current version
//     (`yjs_version_markdown`): after REALTIME_VERSION_IDLE_MS without changes (30 s), when the last editor leaves,
//     and whenever the API reads or changes the document (`settle`), so a typing burst is one version and a
//     socket edit is visible to GET /v1/documents/{id} at once.
//   - An API change (update, command, restore) is applied to the live Yjs document (withLiveDocument), so editors
//     see it at once, and its rendering becomes `yjs_version_markdown`: the session does not make it a version twice.
//     A document that no session of this process holds, without Redis, is changed in its saved state instead, in a
//     thread for a long one: loading it into Hocuspocus would be Yjs's work on the event loop, for no editor.
//   - With REDIS_URL, Hocuspocus's Redis extension shares live documents between the server processes of one
//     database (each change reaches every process's editors; one process saves at a time).
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { type Document, Hocuspocus } from '@hocuspocus/server';
import type { Redis as IORedis } from 'ioredis';
import type { Kysely, Transaction } from 'kysely';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { WebSocketServer } from 'ws';
import * as Y from 'yjs';
import { characterCount } from '../../platform/characters.ts';
import type { Platform } from '../../platform/context.ts';
import type { UpgradeEndpoint } from '../../platform/feature.ts';
import { forUpdate } from '../../storage/locks.ts';
import type { Database } from '../../storage/schema.ts';
import { renderedState, replacedState, replaceLive, replacement, seeded, snapshot } from './conversions.ts';
import { type EditClaims, TokenRefused, verifyEditToken } from './edit-tokens.ts';
import { type DocumentRow, saveVersion } from './store.ts';

const PATH = /^\/v1\/documents\/(doc_[0-9A-HJKMNP-TV-Z]{26})\/realtime$/;
/** The most a document may hold (the contract's `content` maxLength, in code points). */
const MAX_CHARACTERS = 1_000_000;
/** The Redis channel on which a process says it deleted a document, so that every process ends its sessions. */
const DELETIONS_CHANNEL = 'content-service:documents:deleted';
/** The origin of the transactions the API makes on a live document (not an editor's). */
const API_ORIGIN = 'content-service:api';
/** The longest a change that reached this process stays unsaved (a failed save is tried again as long). */
const SAVE_WITHIN_MS = 1000;
/**
 * The origin of what a save merges into the live document from the saved state: a change of this process's own
 * making that Hocuspocus does not save again (it is being saved), and that the Redis extension relays.
 */
const MERGE_ORIGIN = { source: 'local' as const, skipStoreHooks: true, context: {} };

/** What a document's row, as the caller locked it, says of its Yjs state. */
type SavedRow = Pick<DocumentRow, 'content' | 'yjs_state' | 'yjs_markdown'>;

/**
 * The live document as the API sees it inside withLiveDocument. Each method is given the document's row as the caller
 * has locked it: where no session holds the document, its saved state is what it holds.
 */
export interface LiveDocument {
  /** The Markdown the live document renders to now. */
  markdown(row: SavedRow): Promise<string>;
  /** Makes the live document hold this content; returns the state and Markdown to save with the version. */
  apply(row: SavedRow, markdown: string): Promise<{ state: string; markdown: string }>;
}

/** How many changes a live document has had since it was counted: whether what was worked out from it still holds. */
interface ChangeCounter {
  readonly count: number;
  stop(): void;
}

function changeCounter(document: Y.Doc): ChangeCounter {
  const counter = {
    count: 0,
    stop: () => document.off('update', onUpdate),
  };
  // Yjs emits `update` for every transaction that changed the document (deletions included), and for no other.
  const onUpdate = () => {
    counter.count++;
  };
  document.on('update', onUpdate);
  return counter;
}

interface SessionContext {
  pathDocumentId: string;
  /** Closes the WebSocket (one socket serves one document: a refused, deleted or oversized one is done). */
  closeSocket?: (code: number, reason: string) => void;
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
  // A message carries at most an edit's update or the whole state of a 1 MB document.
  readonly #sockets = new WebSocketServer({ noServer: true, maxPayload: 4 * 1024 * 1024 });
  readonly #idle = new Map<string, NodeJS.Timeout>();
  /** Per document, the editor whose change the next save records (the last one to change it). */
  readonly #editors = new Map<string, EditClaims>();
  /** The documents changed by an editor (of this process or another) since this process last saved them. */
  readonly #dirty = new Set<string>();
  /** Per document with unsaved changes, the save due at most SAVE_WITHIN_MS after the first of them. */
  readonly #saves = new Map<string, NodeJS.Timeout>();
  /** The documents whose last save failed (their failure was logged). */
  readonly #failing = new Set<string>();
  /**
   * A saved state (base64) each live document is known to hold, loaded into it or saved from it: merging that state
   * into it again changes nothing, yet costs a decode of the whole state (a few hundred milliseconds for a long one).
   */
  readonly #holds = new WeakMap<Y.Doc, string>();
  readonly #redis: { publisher: IORedis; subscriber: IORedis } | undefined;
  #closed = false;

  constructor(platform: Platform) {
    this.#platform = platform;
    this.#db = platform.db;
    const redisUrl = platform.config.redisUrl;
    // The Redis client and extension are loaded by a process that uses Redis only. The extension's ES module, as an
    // import would load it: its CommonJS build would bring a second copy of @hocuspocus/server.
    const require = createRequire(import.meta.url);
    const redisModules = () => ({
      IORedis: (require('ioredis') as typeof import('ioredis')).Redis,
      RedisExtension: (
        require(
          fileURLToPath(import.meta.resolve('@hocuspocus/extension-redis')),
        ) as typeof import('@hocuspocus/extension-redis')
      ).Redis,
    });
    // ioredis reconnects by itself; while Redis is down each connection says so once, not at every retry.
    const connect = () => {
      const { IORedis } = redisModules();
      // A command fails after one reconnection attempt instead of twenty: while Redis is away, a save waits on the
      // extension's lock for a moment, not for half a minute.
      const client = new IORedis(redisUrl!, { maxRetriesPerRequest: 1 });
      let warned = false;
      client.on('error', (error) => {
        if (!warned)
          platform.logger.warn({ err: error }, 'a Redis connection of the real-time sessions failed; it reconnects');
        warned = true;
      });
      client.on('ready', () => (warned = false));
      return client;
    };
    const extensions = redisUrl
      ? [new (redisModules().RedisExtension)({ createClient: connect, prefix: 'content-service:documents' })]
      : [];
    if (redisUrl) {
      this.#redis = { publisher: connect(), subscriber: connect() };
      this.#redis.subscriber
        .subscribe(DELETIONS_CHANNEL)
        .catch((error) => platform.logger.warn({ err: error }, 'cannot hear document deletions from other processes'));
      this.#redis.subscriber.on('message', (_channel, documentId: string) => this.closeDocument(documentId));
    }
    this.hocuspocus = new Hocuspocus<SessionContext>({
      quiet: true,
      // What a socket may send before its token is checked.
      maxUnauthenticatedQueueSize: 64 * 1024,
      // The Yjs state is saved a second after a change (at most every 5 s while typing); versions wait for idleness.
      debounce: 1000,
      maxDebounce: 5000,
      extensions,
      onAuthenticate: (payload) => this.#authenticate(payload),
      onLoadDocument: async ({ documentName, document }) => {
        const state = await this.#loadState(documentName);
        if (state === null) return;
        Y.applyUpdate(document, Buffer.from(state, 'base64'));
        this.#holds.set(document, state);
      },
      onChange: async ({ documentName, document, context, transactionOrigin }) => {
        // The API's own changes are saved in the transaction that made them. An editor's change is saved by every
        // process it reaches (Hocuspocus saves only those of its own sockets, after up to 5 s of typing).
        if (transactionOrigin === API_ORIGIN || transactionOrigin === MERGE_ORIGIN) return;
        this.#dirty.add(documentName);
        if (context?.claims) this.#editors.set(documentName, context.claims);
        this.#scheduleSave(documentName, document);
      },
      onStoreDocument: async ({ documentName, document }) =>
        this.#store(documentName, document).catch((error: unknown) => {
          // Hocuspocus keeps the document in memory; its changes are saved again later.
          this.#dirty.add(documentName);
          this.#scheduleSave(documentName, document);
          throw error;
        }),
    });
  }

  endpoint(): UpgradeEndpoint {
    return {
      matches: (pathname) => PATH.test(pathname),
      handle: (req, socket, head) => this.#upgrade(req, socket, head),
    };
  }

  #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    // Opening sessions counts against the client address's budget of the rate-limit store (600 a minute).
    this.#platform.rateLimitStore.limiter.consume(`realtime-ip:${req.socket.remoteAddress ?? 'unknown'}`).then(
      () => this.#accept(req, socket, head),
      (rejection: unknown) => {
        if (!(rejection instanceof RateLimiterRes)) {
          this.#platform.logger.error(
            { err: rejection },
            'the rate-limit store failed; a real-time session was refused',
          );
          socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
          return;
        }
        const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
        socket.end(
          `HTTP/1.1 429 Too Many Requests\r\nRetry-After: ${seconds}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
        );
      },
    );
  }

  #accept(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (this.#closed) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const pathDocumentId = PATH.exec(url.pathname)![1]!;
    this.#sockets.handleUpgrade(req, socket, head, (ws) => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
      // The Auth message with the refusal is sent first; the close frame follows it.
      const closeSocket = (code: number, reason: string) => setImmediate(() => ws.close(code, reason));
      const connection = this.hocuspocus.handleConnection(
        ws,
        new Request(new URL(url.pathname + url.search, this.#platform.config.publicBaseUrl), { headers }),
        { pathDocumentId, closeSocket },
      );
      ws.on('message', (data: Buffer) => connection.handleMessage(new Uint8Array(data)));
      ws.on('close', (code, reason) => connection.handleClose({ code, reason: reason.toString() }));
      ws.on('error', () => ws.terminate());
    });
  }

  async #authenticate(payload: {
    token: string;
    documentName: string;
    requestParameters: URLSearchParams;
    connectionConfig: { readOnly: boolean };
    context: SessionContext;
  }) {
    try {
      return await this.#authorise(payload);
    } catch (error) {
      if (error instanceof Refusal) payload.context.closeSocket?.(4403, error.reason);
      throw error;
    }
  }

  async #authorise({
    token,
    documentName,
    requestParameters,
    connectionConfig,
    context,
  }: {
    token: string;
    documentName: string;
    requestParameters: URLSearchParams;
    connectionConfig: { readOnly: boolean };
    context: SessionContext;
  }) {
    // The URL names the document; the Hocuspocus messages name it too, and must name the same one.
    if (documentName !== context.pathDocumentId) throw new Refusal('token_wrong_document');
    let claims: EditClaims;
    try {
      claims = await verifyEditToken(
        this.#db,
        requestParameters.get('token') || token,
        documentName,
        this.#platform.clock.now(),
      );
    } catch (error) {
      if (error instanceof TokenRefused) throw new Refusal(error.reason);
      throw error;
    }
    const row = await this.#db
      .selectFrom('documents')
      .select('id')
      .where('id', '=', documentName)
      .where('workspace_id', '=', claims.workspaceId)
      .executeTakeFirst();
    if (!row) throw new Refusal('document_not_found');
    // A token is only as good as the key that asked for it: revoked or expired, the key's tokens open nothing; a key
    // that has become a viewer's opens read-only sessions.
    const key = await this.#db
      .selectFrom('api_keys')
      .select(['role', 'revoked_at', 'expires_at'])
      .where('id', '=', claims.apiKeyId)
      .where('workspace_id', '=', claims.workspaceId)
      .executeTakeFirst();
    const now = this.#platform.clock.now().toISOString();
    if (!key || key.revoked_at !== null || (key.expires_at !== null && key.expires_at <= now))
      throw new Refusal('token_revoked');
    connectionConfig.readOnly = claims.permission === 'read' || key.role === 'viewer';
    return { claims };
  }

  /** The saved Yjs state; a document never opened in a session is seeded from its content, once (the first
   *  process to seed wins, so two processes never start from two different Yjs histories of the same text). */
  async #loadState(documentId: string): Promise<string | null> {
    const row = await this.#db
      .selectFrom('documents')
      .select(['yjs_state', 'content'])
      .where('id', '=', documentId)
      .executeTakeFirst();
    if (!row) return null;
    if (row.yjs_state !== null) return row.yjs_state;
    const { state, markdown } = await seeded(row.content);
    await this.#db
      .updateTable('documents')
      .set({
        yjs_state: Buffer.from(state).toString('base64'),
        yjs_markdown: markdown,
        yjs_version_markdown: markdown,
      })
      .where('id', '=', documentId)
      .where('yjs_state', 'is', null)
      .execute();
    const saved = await this.#db
      .selectFrom('documents')
      .select('yjs_state')
      .where('id', '=', documentId)
      .executeTakeFirst();
    return saved?.yjs_state ?? null;
  }

  /**
   * Merges a saved state into a live document (changes another process saved that have not reached this one), unless
   * the document is known to hold it already.
   */
  #merge(document: Y.Doc, state: string): void {
    if (this.#holds.get(document) === state) return;
    Y.applyUpdate(document, Buffer.from(state, 'base64'), MERGE_ORIGIN);
    this.#holds.set(document, state);
  }

  /** Saves the document's unsaved changes at most SAVE_WITHIN_MS from now (once, however many changes come). */
  #scheduleSave(documentId: string, document: Document): void {
    if (this.#saves.has(documentId) || this.#closed) return;
    const timer = setTimeout(() => {
      this.#saves.delete(documentId);
      // Unloaded meanwhile (Hocuspocus saved it then), or saved by a settle or Hocuspocus's own save.
      if (!this.#dirty.has(documentId) || this.hocuspocus.documents.get(documentId) !== document) return;
      document.saveMutex
        .runExclusive(() => this.#store(documentId, document))
        .then(
          () => this.#failing.delete(documentId),
          (error: unknown) => {
            // Once per outage, not at every retry.
            if (!this.#failing.has(documentId))
              this.#platform.logger.warn(
                { err: error, document_id: documentId },
                'saving real-time edits failed; trying again every second',
              );
            this.#failing.add(documentId);
            this.#dirty.add(documentId);
            this.#scheduleSave(documentId, document);
          },
        );
    }, SAVE_WITHIN_MS);
    timer.unref();
    this.#saves.set(documentId, timer);
  }

  /**
   * Saves the live state and its Markdown; the version waits for idleness or the last editor leaving. The state is
   * taken under the row's lock, so a save that waited for an API change never writes the state from before it; and
   * the row's state is merged into the live document first, so that what another process saved (changes that have
   * not reached this one yet) is kept.
   */
  async #store(documentId: string, document: Document): Promise<void> {
    const editor = this.#editors.get(documentId);
    this.#editors.delete(documentId);
    this.#dirty.delete(documentId);
    const changes = changeCounter(document);
    let outcome: 'deleted' | 'too_large' | 'saved';
    try {
      outcome = await this.#write(documentId, document, editor, changes);
    } finally {
      changes.stop();
    }
    if (outcome === 'deleted') {
      // Deleted meanwhile (by another process): its sessions end here too.
      this.closeDocument(documentId);
      return;
    }
    if (outcome === 'too_large') {
      // Not saved: the sessions end, saying why (their last changes are lost, not the document).
      this.#platform.logger.warn(
        { document_id: documentId },
        'a real-time session made the document larger than 1,000,000 characters; its sessions are closed unsaved',
      );
      this.#closeSockets(documentId, 4413, 'document_too_large');
      return;
    }
    clearTimeout(this.#idle.get(documentId));
    if (document.getConnectionsCount() === 0) {
      this.#idle.delete(documentId);
      await this.checkpoint(documentId);
    } else {
      const timer = setTimeout(() => {
        this.#idle.delete(documentId);
        this.checkpoint(documentId).catch((error) =>
          this.#platform.logger.error({ err: error, document_id: documentId }, 'saving a real-time version failed'),
        );
      }, this.#platform.config.realtimeVersionIdleMs);
      timer.unref();
      this.#idle.set(documentId, timer);
    }
  }

  /**
   * Writes the live state and its Markdown under the row's lock, the row's state merged into the live document
   * first; `changes` counts what editors changed meanwhile.
   */
  async #write(
    documentId: string,
    document: Document,
    editor: EditClaims | undefined,
    changes: ChangeCounter,
  ): Promise<'deleted' | 'too_large' | 'saved'> {
    // Rendered before the row's lock is taken (a long document's Markdown is worked out in a thread, and on SQLite the
    // lock holds the one connection every request waits for); rendered again under it if the document changed since.
    const saved = await this.#db
      .selectFrom('documents')
      .select('yjs_state')
      .where('id', '=', documentId)
      .executeTakeFirst();
    if (saved?.yjs_state) this.#merge(document, saved.yjs_state);
    const renderedAt = changes.count;
    const rendered = await snapshot(document);
    return this.#db.transaction().execute(async (trx) => {
      const row = await forUpdate(
        trx.selectFrom('documents').select(['id', 'yjs_state']).where('id', '=', documentId),
        trx,
      ).executeTakeFirst();
      if (!row) return 'deleted' as const;
      // A no-op when the live document holds it all already (Yjs emits no update then); otherwise the editors get
      // what they lacked, as they would from the process that saved it.
      if (row.yjs_state !== null) this.#merge(document, row.yjs_state);
      // An editor's change that comes while a long document renders is not in this state: it marks the document
      // unsaved again, and the next save has it.
      const { state, markdown } = changes.count === renderedAt ? rendered : await snapshot(document);
      if (markdown.length > MAX_CHARACTERS && characterCount(markdown) > MAX_CHARACTERS) return 'too_large' as const;
      const written = Buffer.from(state).toString('base64');
      this.#holds.set(document, written);
      await trx
        .updateTable('documents')
        .set({
          yjs_state: written,
          yjs_markdown: markdown,
          ...(editor ? { live_api_key_id: editor.apiKeyId, live_user_id: editor.userId } : {}),
        })
        .where('id', '=', documentId)
        .execute();
      return 'saved' as const;
    });
  }

  /** Makes a `realtime` version of the saved session state when its Markdown differs from the current version's. */
  async checkpoint(documentId: string): Promise<void> {
    const saved = await this.#db
      .selectFrom('documents')
      .select(['yjs_markdown', 'yjs_version_markdown'])
      .where('id', '=', documentId)
      .executeTakeFirst();
    if (!saved || saved.yjs_markdown === null || saved.yjs_markdown === saved.yjs_version_markdown) return;
    await this.#db.transaction().execute(async (trx) => {
      const row = await forUpdate(
        trx.selectFrom('documents').selectAll().where('id', '=', documentId),
        trx,
      ).executeTakeFirst();
      if (!row || row.yjs_markdown === null || row.yjs_markdown === row.yjs_version_markdown) return;
      await saveVersion(
        trx,
        row,
        row.yjs_markdown,
        {
          kind: 'realtime',
          apiKeyId: row.live_api_key_id ?? (await creatorKey(trx, documentId)),
          userId: row.live_user_id,
        },
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
    // Under the document's save lock, which Hocuspocus's own saves take too: saves never overlap.
    if (live && !live.isLoading && this.#dirty.has(documentId))
      await live.saveMutex.runExclusive(() => this.#store(documentId, live));
    await this.checkpoint(documentId);
  }

  /** Whether the API must settle the document before reading it: a session of this process holds unsaved edits,
   *  or a session (of any process) saved edits that are not a version yet. */
  unsettled(row: { id: string; yjs_markdown: string | null; yjs_version_markdown: string | null }): boolean {
    return this.#dirty.has(row.id) || (row.yjs_markdown !== null && row.yjs_markdown !== row.yjs_version_markdown);
  }

  /**
   * Runs `change` with the document's live Yjs document (loaded for the purpose when no session holds it): the
   * API's way to change content so that connected editors see it. `change` gets what the live document holds now
   * (`markdown`: editors' changes not yet saved included) and `apply`, which makes the live document hold a new
   * content and returns the state to save with its version; it must be called after the change's checks, inside
   * its transaction. `change` may throw to change nothing.
   */
  async withLiveDocument<T>(
    documentId: string,
    change: (live: LiveDocument) => Promise<T>,
    content?: string,
  ): Promise<T> {
    if (!this.#redis && !this.#held(documentId)) return this.#withSavedDocument(documentId, change, content);
    const connection = await this.hocuspocus.openDirectConnection(documentId, { pathDocumentId: documentId });
    const document = connection.document!;
    const changes = changeCounter(document);
    try {
      // Worked out before `change` takes the row's lock (a long document's conversions run in a thread, and on SQLite
      // the lock holds the one connection every request waits for): the live document's Markdown, and what makes it
      // hold `content`. Each is used under the lock if the document has not changed since, and worked out there again
      // if it has (an editor typed meanwhile).
      const currentAt = changes.count;
      const current = await snapshot(document);
      const replacedAt = changes.count;
      const replaced = content === undefined ? undefined : await replacement(document, content);
      return await change({
        markdown: async () => (changes.count === currentAt ? current : await snapshot(document)).markdown,
        apply: async (_row, markdown) => {
          // The thread's document after the change is the live one's (the same state, the same change): its state is
          // the one to save.
          if (replaced && markdown === content && changes.count === replacedAt) {
            Y.applyUpdate(document, replaced.update, API_ORIGIN);
            const state = Buffer.from(replaced.state).toString('base64');
            this.#holds.set(document, state);
            return { state, markdown: replaced.markdown };
          }
          return this.#replaceLive(document, markdown);
        },
      });
    } finally {
      changes.stop();
      await connection.disconnect();
    }
  }

  /** Makes a live document hold this Markdown (an API change); the state to save with its version, and its Markdown. */
  async #replaceLive(document: Y.Doc, markdown: string): Promise<{ state: string; markdown: string }> {
    await replaceLive(document, markdown, API_ORIGIN);
    const after = await snapshot(document);
    const state = Buffer.from(after.state).toString('base64');
    this.#holds.set(document, state);
    return { state, markdown: after.markdown };
  }

  /** Whether a session of this process holds the document, or is loading it. */
  #held(documentId: string): boolean {
    return this.hocuspocus.documents.has(documentId) || this.hocuspocus.loadingDocuments.has(documentId);
  }

  /**
   * withLiveDocument for a document that no session of this process holds, where no other process shares live
   * documents with this one (no Redis): the change is made to its saved state, without loading it into Hocuspocus.
   * Loading a long document's state and applying a rewrite to it would hold the event loop for hundreds of
   * milliseconds; here both run in a thread. What can be is worked out before `change` takes the row's lock, from the
   * state saved then, and again under the lock from the row's state if that changed meanwhile.
   */
  async #withSavedDocument<T>(
    documentId: string,
    change: (live: LiveDocument) => Promise<T>,
    content?: string,
  ): Promise<T> {
    const saved = await this.#db
      .selectFrom('documents')
      .select('yjs_state')
      .where('id', '=', documentId)
      .executeTakeFirst();
    // What makes a saved state hold this Markdown; for a document never opened in a session, its first state. A
    // session that began to load such a document meanwhile waits for the row's lock to save the state it seeded,
    // then finds this one saved and starts from it.
    const work = async (state: string | null, markdown: string) =>
      state === null
        ? { ...(await seeded(markdown)), update: undefined }
        : await replacedState(Buffer.from(state, 'base64'), markdown);
    const early =
      saved && content !== undefined
        ? { state: saved.yjs_state, worked: await work(saved.yjs_state, content) }
        : undefined;
    // A session of this process that opened the document meanwhile and has loaded it (an editor may have typed in
    // it) is changed under the row's lock as withLiveDocument changes one, the saved state merged into it first. One
    // still loading holds no typing yet, and its load must not be awaited here: on SQLite it waits for the
    // connection this transaction holds.
    const opened = (row: SavedRow) => {
      const live = this.hocuspocus.documents.get(documentId);
      if (live && row.yjs_state !== null) this.#merge(live, row.yjs_state);
      return live;
    };
    let update: Uint8Array | undefined;
    const result = await change({
      // The Markdown the saved state renders to is saved with it; a document never opened in a session has its
      // content only.
      markdown: async (row) => {
        const live = opened(row);
        if (live) return (await snapshot(live)).markdown;
        return row.yjs_state === null
          ? row.content
          : (row.yjs_markdown ?? (await renderedState(Buffer.from(row.yjs_state, 'base64'))));
      },
      apply: async (row, markdown) => {
        const live = opened(row);
        if (live) return this.#replaceLive(live, markdown);
        const worked =
          early && early.state === row.yjs_state && markdown === content
            ? early.worked
            : await work(row.yjs_state, markdown);
        update = worked.update;
        return { state: Buffer.from(worked.state).toString('base64'), markdown: worked.markdown };
      },
    });
    // Once the change is committed: a session that began to load the document meanwhile gets it (on PostgreSQL its
    // load may have read the state from before, as reads do not wait for the row's lock); applying it to one that
    // loaded the state after changes nothing.
    if (update) this.#applyToSessionOpenedMeanwhile(documentId, update);
    return result;
  }

  /**
   * An API change made to the saved state reaches a session that opened the document meanwhile: its live document
   * gets the change's update at once, or once loaded.
   */
  #applyToSessionOpenedMeanwhile(documentId: string, update: Uint8Array): void {
    const live = this.hocuspocus.documents.get(documentId);
    if (live) {
      Y.applyUpdate(live, update, API_ORIGIN);
      return;
    }
    this.hocuspocus.loadingDocuments.get(documentId)?.then(
      (loaded) => Y.applyUpdate(loaded, update, API_ORIGIN),
      () => {},
    );
  }

  /**
   * Before an API change replaces the content: the live document's text that is not a version yet (an editor typed
   * in the last second) becomes a `realtime` version, so that the change overwrites nothing unrecorded. Returns the
   * row as it is after.
   */
  async keepLiveEdits(
    trx: Transaction<Database>,
    row: DocumentRow,
    live: LiveDocument,
    now: Date,
  ): Promise<DocumentRow> {
    const markdown = await live.markdown(row);
    if (markdown === row.yjs_version_markdown || markdown === row.content) return row;
    const editor = this.#editors.get(row.id);
    const source = {
      kind: 'realtime' as const,
      apiKeyId: editor?.apiKeyId ?? row.live_api_key_id ?? (await creatorKey(trx, row.id)),
      userId: editor ? editor.userId : row.live_user_id,
    };
    return (await saveVersion(trx, row, markdown, source, now)).document;
  }

  /** Whether the live document holds text that is not in the current version (an editor's unsaved typing). */
  static async hasLiveEdits(row: DocumentRow, live: LiveDocument): Promise<boolean> {
    const markdown = await live.markdown(row);
    return markdown !== row.yjs_version_markdown && markdown !== row.content;
  }

  /** Ends the document's sessions on this process (it was deleted). */
  closeDocument(documentId: string): void {
    clearTimeout(this.#idle.get(documentId));
    this.#idle.delete(documentId);
    this.#closeSockets(documentId, 4404, 'document_deleted');
  }

  /** Closes the WebSockets of the document's sessions on this process with a close code and reason. */
  #closeSockets(documentId: string, code: number, reason: string): void {
    this.hocuspocus.documents.get(documentId)?.connections.forEach((_clients, connection) => {
      (connection.context as SessionContext).closeSocket?.(code, reason);
    });
  }

  /** Ends the sessions of a deleted document on every process (through Redis when there are several). */
  async documentDeleted(documentId: string): Promise<void> {
    this.closeDocument(documentId);
    await this.#redis?.publisher
      .publish(DELETIONS_CHANNEL, documentId)
      .catch((error) =>
        this.#platform.logger.warn(
          { err: error, document_id: documentId },
          'could not tell the other processes of a deleted document',
        ),
      );
  }

  /**
   * At shutdown, before the HTTP server drains: no new session, no more input from editors (their sockets are
   * closed first), then every open document is saved and its version made. Requests still running may still use
   * live documents (withLiveDocument) until dispose().
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of this.#idle.values()) clearTimeout(timer);
    for (const timer of this.#saves.values()) clearTimeout(timer);
    const open = [...this.hocuspocus.documents.entries()];
    for (const ws of this.#sockets.clients) ws.terminate();
    for (const [name, document] of open) {
      // Under the save lock: a save that Hocuspocus started when the sockets closed finishes first.
      if (!document.isLoading)
        await document.saveMutex
          .runExclusive(() => this.#store(name, document))
          .catch((error) =>
            this.#platform.logger.error({ err: error, document_id: name }, 'saving a document at shutdown failed'),
          );
      await this.checkpoint(name).catch((error) =>
        this.#platform.logger.error({ err: error, document_id: name }, 'saving a real-time version at shutdown failed'),
      );
    }
    this.#sockets.close();
  }

  /** After the HTTP server drained, before the database closes: the Redis connections. */
  async dispose(): Promise<void> {
    for (const extension of this.hocuspocus.configuration.extensions)
      await extension.onDestroy?.({ instance: this.hocuspocus });
    if (this.#redis) await Promise.all([this.#redis.publisher.quit(), this.#redis.subscriber.quit()]).catch(() => {});
  }
}

/** The key that created the document: the attribution of session changes whose editor is unknown (a restart). */
async function creatorKey(trx: Kysely<Database>, documentId: string): Promise<string> {
  const first = await trx
    .selectFrom('document_versions')
    .select('api_key_id')
    .where('document_id', '=', documentId)
    .where('number', '=', 1)
    .executeTakeFirstOrThrow();
  return first.api_key_id;
}

declare module '../../platform/context.ts' {
  interface Services {
    /** The documents' real-time editing sessions. */
    realtime: Realtime;
  }
}

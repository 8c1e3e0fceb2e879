// The keys that authenticated lately, remembered for a few seconds so that a busy key's requests do not each read the
// database (auth.ts). A remembered key never outlives a change of it:
//   - in this process, the database driver sees every statement that writes api_keys or workspaces (wrapDialect:
//     revocation, rotation, a member's removal, a test's direct update): the cache is unused from that statement
//     until its connection is released (its transaction committed or rolled back), and is dropped at both ends; a
//     lookup that started before a drop does not store what it read (the generation);
//   - other processes on PostgreSQL: a trigger (migration 016_key_changes) notifies `api_keys_changed` when such a
//     write commits; every server listens and drops its cache, and does not use it while it is not listening. A
//     request that reaches another server before the notification does (about a millisecond after the commit) is
//     answered as one that read the key just before the commit would be;
//   - other processes on SQLite: `PRAGMA data_version` changes when another connection commits; it is read again for
//     every request that began after the last reading, and the cache is dropped when it changed;
//   - a rotation's grace period and a key's expiry are decided on every request from the remembered row, at the
//     request's own time.
// Writes that change nothing a caller is made of are not changes: a key's `last_used_at` (a minute's touch) and a
// workspace's `event_sequence` (every event), which nothing reads from the caller.
import type { CompiledQuery, DatabaseConnection, Dialect, Driver, OperationNode, TransactionSettings } from 'kysely';
import type { Logger } from 'pino';
import type { Storage } from '../storage/database.ts';
import { listenForWork } from './jobs/notify.ts';

/** The notification channel of migration 016_key_changes' trigger. */
export const KEY_CHANGES_CHANNEL = 'api_keys_changed';

/** The tables whose rows a caller is made of, and the columns whose writes are not changes of it. */
const WATCHED: Record<string, ReadonlySet<string>> = {
  api_keys: new Set(['last_used_at']),
  workspaces: new Set(['event_sequence']),
};

/** The table or column a node names, also through an alias (`api_keys as k`). */
function name(node: OperationNode | undefined): string | undefined {
  // TableNode { table: SchemableIdentifierNode { identifier: IdentifierNode } }, ColumnNode { column: IdentifierNode },
  // AliasNode { node }
  const anyNode = node as
    | { kind?: string; node?: OperationNode; table?: { identifier?: { name?: string } }; column?: { name?: string } }
    | undefined;
  if (anyNode?.kind === 'AliasNode') return name(anyNode.node);
  if (anyNode?.kind === 'TableNode') return anyNode.table?.identifier?.name;
  if (anyNode?.kind === 'ColumnNode') return anyNode.column?.name;
  return undefined;
}

const watched = (node: OperationNode | undefined) => WATCHED[name(node) ?? ''] !== undefined;
const MENTIONS_WATCHED = new RegExp(`\\b(${Object.keys(WATCHED).join('|')})\\b`);
const WRITES = /\b(update|delete|insert|merge|replace)\b/i;

/**
 * Whether a statement may change a caller: an update of a watched table that sets more than its ignored columns, a
 * delete from one, an insert into one that updates on conflict; and, judged by its text, a statement Kysely did not
 * build (raw SQL) or one with a `with` clause, when it names a watched table and writes.
 */
export function changesCallers(query: Pick<CompiledQuery, 'query' | 'sql'>): boolean {
  const node = query.query as OperationNode & { with?: unknown };
  const byText = () => MENTIONS_WATCHED.test(query.sql) && WRITES.test(query.sql);
  if (node.with && byText()) return true;
  switch (node.kind) {
    case 'SelectQueryNode':
      return false;
    case 'UpdateQueryNode': {
      const update = node as unknown as { table?: OperationNode; updates?: ReadonlyArray<{ column: OperationNode }> };
      const ignored = WATCHED[name(update.table) ?? ''];
      return ignored !== undefined && (update.updates ?? []).some((column) => !ignored.has(name(column.column) ?? ''));
    }
    case 'DeleteQueryNode':
      return (node as unknown as { from: { froms: OperationNode[] } }).from.froms.some(watched);
    case 'InsertQueryNode': {
      const insert = node as unknown as {
        into?: OperationNode;
        onConflict?: { updates?: unknown[] };
        onDuplicateKey?: unknown;
        replace?: boolean;
      };
      return (
        watched(insert.into) &&
        (Boolean(insert.onConflict?.updates?.length) || Boolean(insert.onDuplicateKey) || Boolean(insert.replace))
      );
    }
    default:
      return byText();
  }
}

export class KeyCache<Entry> {
  readonly #ttlMs: number;
  readonly #entries = new Map<string, { entry: Entry; until: number }>();
  #generation = 0;
  /** Statements that changed callers, on connections not released yet: the cache is unused meanwhile. */
  #writesInFlight = 0;
  /** False while changes made by other processes could go unseen (PostgreSQL: not listening). */
  #watching = true;
  #dataVersion: (() => number) | undefined;
  #seenVersion = 0;
  /** When data_version was last read (process.hrtime.bigint()). */
  #versionReadAt = -1n;

  /** `ttlMs` 0 turns the cache off. */
  constructor(ttlMs: number) {
    this.#ttlMs = ttlMs;
  }

  /** Drops every remembered key; a lookup that started before does not store what it read. */
  forget(): void {
    this.#entries.clear();
    this.#generation++;
  }

  /** Take before reading the database; `set` stores the row only if nothing changed meanwhile. */
  token(): number {
    return this.#generation;
  }

  /** `since`: when the request began (process.hrtime.bigint()); a change another process committed before, it sees. */
  get(hash: string, since: bigint): Entry | undefined {
    if (!this.#usable(since)) return undefined;
    const remembered = this.#entries.get(hash);
    if (!remembered) return undefined;
    if (remembered.until > performance.now()) return remembered.entry;
    this.#entries.delete(hash);
    return undefined;
  }

  set(hash: string, entry: Entry, token: number): void {
    // #usable first: a change by another process seen now drops the cache, and with it this lookup's token.
    if (!this.#usable(process.hrtime.bigint()) || token !== this.#generation) return;
    // Expired entries of keys not used again go when the map is large; a key used again replaces its own.
    if (this.#entries.size >= 10_000) this.#entries.clear();
    this.#entries.set(hash, { entry, until: performance.now() + this.#ttlMs });
  }

  #usable(since: bigint): boolean {
    if (this.#ttlMs === 0 || !this.#watching || this.#writesInFlight > 0) return false;
    // Read again only for a request that began after the last reading (a reading is a query; under load most requests
    // of a turn of the event loop began before it).
    if (this.#dataVersion && this.#versionReadAt <= since) {
      this.#versionReadAt = process.hrtime.bigint();
      const version = this.#dataVersion();
      if (version !== this.#seenVersion) {
        this.#seenVersion = version;
        this.forget();
      }
    }
    return true;
  }

  /**
   * The platform's database dialect with its driver watching the statements: one that changes callers makes the
   * cache unused until its connection is released (see the top of this file).
   */
  wrapDialect(dialect: Dialect): Dialect {
    const writes = {
      began: () => {
        this.#writesInFlight++;
        this.forget();
      },
      ended: () => {
        this.#writesInFlight--;
        this.forget();
      },
    };
    return {
      createAdapter: () => dialect.createAdapter(),
      createIntrospector: (db) => dialect.createIntrospector(db),
      createQueryCompiler: () => dialect.createQueryCompiler(),
      createDriver: () => new WatchingDriver(dialect.createDriver(), writes),
    };
  }

  /**
   * Watches the changes other processes make: SQLite's data_version, or PostgreSQL's notifications (the cache is
   * unused until the listening connection is up and whenever it is lost). Returns the function that stops watching.
   */
  async watch(storage: Storage, databaseUrl: string, logger: Logger): Promise<() => Promise<void>> {
    if (this.#ttlMs === 0) return async () => {};
    if (storage.dataVersion) {
      this.#dataVersion = storage.dataVersion;
      this.#seenVersion = storage.dataVersion();
      return async () => {};
    }
    this.#watching = false;
    return listenForWork(
      storage.kind,
      databaseUrl,
      KEY_CHANGES_CHANNEL,
      logger,
      () => {
        this.forget();
        this.#watching = true;
      },
      () => {
        this.#watching = false;
        this.forget();
      },
    );
  }
}

/** A driver that tells when a statement changing callers runs on a connection, and when that connection is released. */
class WatchingDriver implements Driver {
  readonly #driver: Driver;
  readonly #writes: { began(): void; ended(): void };
  /** The driver's own connection behind each one handed to Kysely. */
  readonly #real = new WeakMap<DatabaseConnection, DatabaseConnection>();
  readonly #wrote = new WeakSet<DatabaseConnection>();
  savepoint?: Driver['savepoint'];
  rollbackToSavepoint?: Driver['rollbackToSavepoint'];
  releaseSavepoint?: Driver['releaseSavepoint'];

  constructor(driver: Driver, writes: { began(): void; ended(): void }) {
    this.#driver = driver;
    this.#writes = writes;
    // Only what the driver has: Kysely tells whether savepoints are supported by their presence.
    if (driver.savepoint)
      this.savepoint = (connection, name, compile) => driver.savepoint!(this.#unwrap(connection), name, compile);
    if (driver.rollbackToSavepoint)
      this.rollbackToSavepoint = (connection, name, compile) =>
        driver.rollbackToSavepoint!(this.#unwrap(connection), name, compile);
    if (driver.releaseSavepoint)
      this.releaseSavepoint = (connection, name, compile) =>
        driver.releaseSavepoint!(this.#unwrap(connection), name, compile);
  }

  #unwrap(connection: DatabaseConnection): DatabaseConnection {
    return this.#real.get(connection) ?? connection;
  }

  init(): Promise<void> {
    return this.#driver.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const real = await this.#driver.acquireConnection();
    const connection: DatabaseConnection = {
      executeQuery: (query) => {
        if (!this.#wrote.has(connection) && changesCallers(query)) {
          this.#wrote.add(connection);
          this.#writes.began();
        }
        return real.executeQuery(query);
      },
      streamQuery: (query, chunkSize) => real.streamQuery(query, chunkSize),
    };
    this.#real.set(connection, real);
    return connection;
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.#driver.beginTransaction(this.#unwrap(connection), settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.#driver.commitTransaction(this.#unwrap(connection));
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.#driver.rollbackTransaction(this.#unwrap(connection));
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    try {
      await this.#driver.releaseConnection(this.#unwrap(connection));
    } finally {
      if (this.#wrote.has(connection)) {
        this.#wrote.delete(connection);
        this.#writes.ended();
      }
    }
  }

  destroy(): Promise<void> {
    return this.#driver.destroy();
  }
}

// The keys that authenticated lately, remembered for a few seconds so that a busy key's requests do not each read the
// database (auth.ts). A remembered key never outlives a change of it:
//   - in this process, every statement that writes api_keys or workspaces through the platform's database (a Kysely
//     plugin: revocation, rotation, a member's removal, a test's direct update) drops the cache before it runs, and
//     the cache stays unused until a moment after it (HOLD_MS): a lookup that read the row before the transaction
//     committed does not store what it read (the generation);
//   - other processes on PostgreSQL: a trigger (migration 016_key_changes) notifies `api_keys_changed` when such a
//     statement commits; every server listens and drops its cache, and does not use it while it is not listening;
//   - other processes on SQLite: `PRAGMA data_version` changes when another connection commits; the cache is dropped
//     when it has (asked once per turn of the event loop);
//   - a rotation's grace period and a key's expiry are decided on every request from the remembered row, at the
//     request's own time.
// Writes that change nothing a caller is made of are not changes: a key's `last_used_at` (a minute's touch) and a
// workspace's `event_sequence` (every event), which nothing reads from the caller.
import type { KyselyPlugin, OperationNode, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import type { Logger } from 'pino';
import type { Storage } from '../storage/database.ts';
import { listenForWork } from './jobs/notify.ts';

/** The notification channel of migration 016_key_changes' trigger. */
export const KEY_CHANGES_CHANNEL = 'api_keys_changed';

/** After a write to the keys, the cache stays unused this long: longer than the transaction that wrote takes to commit. */
const HOLD_MS = 1000;

/** The tables whose rows a caller is made of, and the columns whose writes are not changes of it. */
const WATCHED: Record<string, ReadonlySet<string>> = {
  api_keys: new Set(['last_used_at']),
  workspaces: new Set(['event_sequence']),
};

function name(node: OperationNode | undefined): string | undefined {
  // TableNode { table: SchemableIdentifierNode { identifier: IdentifierNode { name } } }, ColumnNode { column: IdentifierNode }
  const anyNode = node as { kind?: string; table?: { identifier?: { name?: string } }; column?: { name?: string } } | undefined;
  if (anyNode?.kind === 'TableNode') return anyNode.table?.identifier?.name;
  if (anyNode?.kind === 'ColumnNode') return anyNode.column?.name;
  return undefined;
}

/** Whether a statement writes a watched table in a way that may change a caller. */
export function changesCallers(node: RootOperationNode): boolean {
  if (node.kind === 'DeleteQueryNode') return node.from.froms.some((from) => name(from)! in WATCHED);
  if (node.kind !== 'UpdateQueryNode') return false;
  const table = name(node.table);
  if (table === undefined || !(table in WATCHED)) return false;
  const ignored = WATCHED[table]!;
  return (node.updates ?? []).some((update) => !ignored.has(name(update.column) ?? ''));
}

export class KeyCache<Entry> {
  readonly #ttlMs: number;
  readonly #entries = new Map<string, { entry: Entry; until: number }>();
  #generation = 0;
  #heldUntil = 0;
  /** False while changes made by other processes could go unseen (PostgreSQL: not listening). */
  #watching = true;
  #dataVersion: (() => number) | undefined;
  #seenVersion = 0;
  #versionCheckedThisTurn = false;

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

  get(hash: string): Entry | undefined {
    if (!this.#usable()) return undefined;
    const remembered = this.#entries.get(hash);
    if (!remembered) return undefined;
    if (remembered.until > performance.now()) return remembered.entry;
    this.#entries.delete(hash);
    return undefined;
  }

  set(hash: string, entry: Entry, token: number): void {
    // #usable first: a change by another process seen now drops the cache, and with it this lookup's token.
    if (!this.#usable() || token !== this.#generation) return;
    // Expired entries of keys not used again go when the map is large; a key used again replaces its own.
    if (this.#entries.size >= 10_000) this.#entries.clear();
    this.#entries.set(hash, { entry, until: performance.now() + this.#ttlMs });
  }

  #usable(): boolean {
    if (this.#ttlMs === 0 || !this.#watching || performance.now() < this.#heldUntil) return false;
    // Asked once per turn of the event loop (about 5 µs a time, many lookups a turn under load): a request that another
    // process's commit could concern arrives in a later turn than the commit's own answer was sent.
    if (this.#dataVersion && !this.#versionCheckedThisTurn) {
      this.#versionCheckedThisTurn = true;
      setImmediate(() => (this.#versionCheckedThisTurn = false));
      const version = this.#dataVersion();
      if (version !== this.#seenVersion) {
        this.#seenVersion = version;
        this.forget();
      }
    }
    return true;
  }

  /** Add to the platform's database (openStorage's plugins): its writes to keys and workspaces drop the cache. */
  readonly plugin: KyselyPlugin = {
    transformQuery: (args: PluginTransformQueryArgs): RootOperationNode => {
      if (changesCallers(args.node)) {
        this.forget();
        this.#heldUntil = performance.now() + HOLD_MS;
      }
      return args.node;
    },
    transformResult: async (args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> => args.result,
  };

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
    return listenForWork(storage.kind, databaseUrl, KEY_CHANGES_CHANNEL, logger, () => {
      this.forget();
      this.#watching = true;
    }, () => {
      this.#watching = false;
      this.forget();
    });
  }
}

import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { DatabaseSync as DatabaseSyncType, StatementSync } from 'node:sqlite';
import { setTimeout as delay } from 'node:timers/promises';
import { fail } from '../kernel/errors.js';
import type {
  Collection,
  CollectionOptions,
  CollectionStats,
  InvocationTable,
  KeyedLog,
  Store,
  StoreDescription,
  StoreStats,
} from '../kernel/store.js';
import { importLowdbData } from './lowdb-import.js';
import { checkFields } from './query.js';
import { WalCheckpointer } from './sqlite-checkpointer.js';
import { SqliteInvocations } from './sqlite-invocations.js';
import { KEY_SPAN, SqliteLog } from './sqlite-logs.js';
import { SqliteCollection } from './sqlite-records.js';
import { fieldExpression, SAFE_NAME, type SqlAccess, type StoreLog } from './sqlite-sql.js';

/**
 * The embedded store: one SQLite database (`.hangar/hangar.db`) through Node's built-in
 * `node:sqlite` — nothing to compile or download, the same on every supported Node line and in
 * Electron's (bench/sqlite-drivers.mjs measures it against libsql and better-sqlite3).
 *
 * Why SQLite and not lowdb for these collections: lowdb rewrites a whole file per change, so a
 * write costs as much as the data already stored, a failed write leaves memory ahead of the disk,
 * and two processes on one folder overwrite each other. Here every mutation is one transaction
 * (WAL journal), costs the same however much is stored, and is visible to every process on the
 * workspace the moment it commits: SQLite's file locking lets two Hangar processes share a
 * workspace (writers wait up to `busyTimeoutMs` for each other) with nothing lost.
 *
 * Durability (`storage.durability`): `normal` (the default) is SQLite's `synchronous=NORMAL` in
 * WAL mode — a committed write survives the process being killed, and after a power loss the
 * database is consistent but the last transactions may be gone; `full` adds an fsync per commit,
 * so a committed write also survives power loss, at the cost of that fsync.
 *
 * Nothing is cached in memory: reads are indexed point or range reads (µs), so there is no second
 * copy that could disagree with the disk or with another process.
 *
 * Pages are read through a memory map (`mmap_size`, up to `MMAP_BYTES` of the file): a page that is
 * not in SQLite's own 2 MB cache is then a memory read instead of a `pread` into it. On a store of
 * 10,000 threads, where most appends touch pages the cache no longer holds, an append measured
 * 0.133 → 0.118 ms (10 threads: 0.083 either way; bench/agents.bench.ts). A bigger cache instead
 * (`cache_size` 64 MB) measured no faster: every page it adds is fresh memory to fault in. The
 * map is address space, not memory, and reads only; writes still go through the WAL.
 *
 * This module opens the database (damage check, migrations, pragmas) and runs its transactions;
 * collections are `sqlite-records.ts`, keyed logs `sqlite-logs.ts`, the first-open import of a
 * lowdb folder `lowdb-import.ts`.
 */
export type Durability = 'full' | 'normal';

/** How much of the database file is read through a memory map (SQLite's own default is none). */
export const MMAP_BYTES = 256 * 1024 * 1024;

export interface SqliteStoreOptions {
  durability?: Durability;
  /** How long a writer waits for another process's transaction before giving up. */
  busyTimeoutMs?: number;
  /** Where damage found at open and the lowdb import are reported. */
  log?: StoreLog;
  /** A lowdb data folder (`.hangar/data`) to import on first open; see importLowdbData. */
  importFrom?: string;
}

/** Versioned migrations, run in order at open; `PRAGMA user_version` records how far a file is. */
export const MIGRATIONS: string[] = [
  `CREATE TABLE records (
     collection TEXT NOT NULL,
     id TEXT NOT NULL,
     value TEXT NOT NULL,
     PRIMARY KEY (collection, id)
   ) WITHOUT ROWID;
   CREATE TABLE log_keys (
     log TEXT NOT NULL,
     key TEXT NOT NULL,
     version INTEGER NOT NULL,
     length INTEGER NOT NULL,
     PRIMARY KEY (log, key)
   ) WITHOUT ROWID;
   CREATE TABLE log_items (
     log TEXT NOT NULL,
     key TEXT NOT NULL,
     position INTEGER NOT NULL,
     value TEXT NOT NULL,
     PRIMARY KEY (log, key, position)
   ) WITHOUT ROWID;
   CREATE TABLE log_tombstones (
     log TEXT NOT NULL,
     key TEXT NOT NULL,
     version INTEGER NOT NULL,
     PRIMARY KEY (log, key)
   ) WITHOUT ROWID;
   CREATE TABLE imports (source TEXT PRIMARY KEY, imported_at TEXT NOT NULL, counts TEXT NOT NULL);`,
  // How many records of a collection hold each combination of its `countBy` fields (see there).
  `CREATE TABLE record_groups (
     collection TEXT NOT NULL,
     grp TEXT NOT NULL,
     n INTEGER NOT NULL,
     PRIMARY KEY (collection, grp)
   ) WITHOUT ROWID;`,
  // Checkpoints (core/agents/checkpoint-tables.ts): a row per step with the versions of its
  // channels, a value per channel version, and the messages no thread log holds. Chain records
  // move here from the records table; steps of the older layouts are converted when first touched.
  `CREATE TABLE cp_chains (
     id INTEGER PRIMARY KEY,
     chain TEXT NOT NULL UNIQUE,
     principal TEXT,
     next INTEGER NOT NULL,
     channels TEXT NOT NULL DEFAULT '[]',
     messages INTEGER NOT NULL DEFAULT 0
   );
   INSERT INTO cp_chains (chain, principal, next)
     SELECT id, json_extract(value, '$.principal'), json_extract(value, '$.next') FROM records WHERE collection = 'checkpoint_chains';
   DELETE FROM records WHERE collection = 'checkpoint_chains';
   CREATE TABLE cp_steps (
     chain INTEGER NOT NULL,
     seq INTEGER NOT NULL,
     id NOT NULL,
     parent,
     step INTEGER NOT NULL,
     ts NOT NULL,
     source TEXT,
     node TEXT,
     next TEXT,
     extra TEXT,
     versions TEXT NOT NULL,
     PRIMARY KEY (chain, seq)
   ) WITHOUT ROWID;
   CREATE INDEX cp_steps_id ON cp_steps (chain, id);
   CREATE TABLE cp_blobs (chain INTEGER NOT NULL, channel INTEGER NOT NULL, version INTEGER NOT NULL, value TEXT NOT NULL,
     PRIMARY KEY (chain, channel, version)) WITHOUT ROWID;
   CREATE TABLE cp_messages (chain INTEGER NOT NULL, position INTEGER NOT NULL, value TEXT NOT NULL,
     PRIMARY KEY (chain, position)) WITHOUT ROWID;`,
  // The invocation log's table (core/logs) is created on its first use instead (sqlite-invocations.ts):
  // a workspace with the log off keeps none of its seven b-trees, a page each. Databases that ran
  // this step when it created the table keep it.
  '-- invocations: created on first use',
  // Keyed logs in fewer bytes (a 1,000-turn thread's message rows: 368 KiB to about 190): a key
  // gets a number, and an item's row id is that number × 2^28 + its position (sqlite-logs.ts), so
  // rows no longer repeat the log name and key text and the table needs no second b-tree; object
  // items are written as their values with their keys once per shape. Existing items are moved
  // as they are (JSON text, shape NULL), which reads the same.
  `CREATE TABLE log_heads (
     id INTEGER PRIMARY KEY,
     log TEXT NOT NULL,
     key TEXT NOT NULL,
     version INTEGER NOT NULL,
     length INTEGER NOT NULL,
     UNIQUE (log, key)
   );
   INSERT INTO log_heads (log, key, version, length) SELECT log, key, version, length FROM log_keys ORDER BY log, key;
   DROP TABLE log_keys;
   ALTER TABLE log_heads RENAME TO log_keys;
   CREATE TABLE log_shapes (id INTEGER PRIMARY KEY, shape TEXT NOT NULL UNIQUE);
   CREATE TABLE log_rows (item INTEGER PRIMARY KEY, shape INTEGER, value TEXT NOT NULL);
   INSERT INTO log_rows (item, value)
     SELECT k.id * ${2 ** 28} + i.position, i.value FROM log_items i JOIN log_keys k ON k.log = i.log AND k.key = i.key ORDER BY 1;
   DROP TABLE log_items;
   ALTER TABLE log_rows RENAME TO log_items;`,
  // Checkpoint steps in fewer bytes (core/agents/checkpoint-tables.ts): a step's row id is its
  // chain's number × 2^28 + its seq, so the table is SQLite's own rowid b-tree, filled whole by
  // appends, and a step is found by id from an index of the id's first four bytes (a UUID's are
  // random) rather than of the whole id and the chain. The import record needs no second b-tree.
  `CREATE TABLE cp_rows (
     k INTEGER PRIMARY KEY,
     id NOT NULL,
     parent,
     step INTEGER NOT NULL,
     ts NOT NULL,
     source TEXT,
     node TEXT,
     next TEXT,
     extra TEXT,
     versions TEXT NOT NULL
   );
   INSERT INTO cp_rows SELECT chain * ${2 ** 28} + seq, id, parent, step, ts, source, node, next, extra, versions FROM cp_steps ORDER BY 1;
   DROP TABLE cp_steps;
   ALTER TABLE cp_rows RENAME TO cp_steps;
   CREATE INDEX cp_steps_id ON cp_steps (substr(id, 1, 4));
   CREATE TABLE imports_kept (source TEXT PRIMARY KEY, imported_at TEXT NOT NULL, counts TEXT NOT NULL) WITHOUT ROWID;
   INSERT INTO imports_kept SELECT source, imported_at, counts FROM imports;
   DROP TABLE imports;
   ALTER TABLE imports_kept RENAME TO imports;`,
  // Records in SQLite's own rowid b-tree (the primary key becomes an index beside it): a WITHOUT
  // ROWID table keeps each row inside its key's b-tree, which SQLite advises only for rows under a
  // twentieth of a page, and a task's record holds its whole input (a 10,000-row batch: ~1 MB).
  // Measured with node:sqlite: after twenty 1 MB records, a 100-byte record update took 1.05 ms
  // instead of 0.02, and a 1 MB record with the task board's indexes 23 ms instead of 7.3 — the
  // ML batch's writes held the server's thread for seconds. The collections' indexes go with the
  // old table and are made again as each collection opens (`ensureIndex`).
  `CREATE TABLE records_rowid (
     collection TEXT NOT NULL,
     id TEXT NOT NULL,
     value TEXT NOT NULL,
     PRIMARY KEY (collection, id)
   );
   INSERT INTO records_rowid (collection, id, value) SELECT collection, id, value FROM records ORDER BY collection, id;
   DROP TABLE records;
   ALTER TABLE records_rowid RENAME TO records;`,
  // When each keyed log's key last changed (epoch ms; NULL for heads written before): a thread's
  // `updated_at` is read from its messages' head (core/threads/service.ts) rather than written into
  // its record on every append, which rewrote the record and its four index entries in a second
  // transaction — most of an append's cost, and the part that grew with the number of threads.
  'ALTER TABLE log_keys ADD COLUMN changed INTEGER;',
];

/**
 * `node:sqlite` without its ExperimentalWarning: Node 22 prints one to the user's terminal at
 * load (Node 24 does not), about a module Hangar has chosen deliberately; every other warning passes.
 */
const DatabaseSync: typeof DatabaseSyncType = (() => {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (/SQLite is an experimental feature/.test(typeof warning === 'string' ? warning : warning.message)) return;
    return (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return (createRequire(import.meta.url)('node:sqlite') as typeof import('node:sqlite')).DatabaseSync;
  } finally {
    process.emitWarning = emitWarning;
  }
})();
type DatabaseSync = DatabaseSyncType;

/** The database file's place in a workspace's state folder. */
export const DATABASE_FILE = 'hangar.db';

/** What could not be written, as the 503 a client sees. */
function writeFailed(what: string, err: unknown) {
  const reason = err instanceof Error ? err.message : String(err);
  return fail('HANGAR_STORAGE_WRITE_FAILED', { what, reason }, { headers: { 'Retry-After': '1' } });
}

export class SqliteStore implements Store, SqlAccess {
  readonly file: string;
  private readonly db: DatabaseSync;
  private readonly statements = new Map<string, StatementSync>();
  private readonly collections = new Map<string, SqliteCollection<unknown>>();
  private readonly logs = new Map<string, SqliteLog<unknown>>();
  private invocationTable: SqliteInvocations | undefined;
  /** Indexes made (or found) by this process, so reopening a collection costs nothing. */
  private readonly indexes = new Set<string>();
  /** Indexes of collections opened empty, created before their first write (`createDeferredIndexes`). */
  private readonly deferredIndexes = new Map<string, Array<readonly string[]>>();
  private readonly log: NonNullable<SqliteStoreOptions['log']>;
  /** The last failed write, until a write succeeds again (what /readiness reports). */
  private failing: { at: Date; message: string } | undefined;
  /** Set at open when a damaged file was moved aside. */
  readonly recovered: { movedTo: string; problem: string } | undefined;
  /** WAL checkpoints off this thread (sqlite-checkpointer.ts), once `checkpointInBackground` asks for them. */
  private checkpointer: WalCheckpointer | undefined;
  private readonly busyTimeoutMs: number;

  constructor(file: string, options: SqliteStoreOptions = {}) {
    this.file = file;
    this.log = options.log ?? (() => {});
    mkdirSync(path.dirname(file), { recursive: true });
    const busyTimeoutMs = options.busyTimeoutMs ?? 5_000;
    this.busyTimeoutMs = busyTimeoutMs;
    // The connection being opened, kept even when opening fails: closing a connection deletes the
    // -wal and -shm beside `file` by name, so a damaged file's is closed only once they are moved.
    let db: DatabaseSync | undefined;
    const connect = (): DatabaseSync => {
      const deadline = Date.now() + busyTimeoutMs;
      // Stryker disable next-line MethodExpression: the pauses' pacing, which only timing shows
      for (let pauseMs = 5; ; pauseMs = Math.min(pauseMs * 2, 100)) {
        db = new DatabaseSync(file, { timeout: busyTimeoutMs });
        try {
          db.exec(
            `PRAGMA journal_mode = WAL; PRAGMA synchronous = ${options.durability === 'full' ? 'FULL' : 'NORMAL'}; PRAGMA mmap_size = ${MMAP_BYTES};`,
          );
          return db;
        } catch (err) {
          // Processes opening a new file together each hold a read lock and ask to upgrade it to
          // switch the file to WAL: SQLite answers all but one SQLITE_BUSY at once (a deadlock the
          // busy handler does not wait out), so the open is tried again until the busy timeout.
          // Stryker disable next-line EqualityOperator: equivalent at millisecond resolution
          if (!isBusy(err) || Date.now() >= deadline) throw err;
          // Stryker disable next-line CallExpression: a connection left open here holds no lock, only memory
          db.close();
          sleepSync(pauseMs);
        }
      }
    };
    let damage: string | undefined;
    try {
      damage = quickCheck(connect());
    } catch (err) {
      if (!isDamage(err)) {
        db?.close();
        throw err;
      }
      damage = (err as Error).message;
    }
    if (damage) {
      // Never silently emptied: the damaged file (and its WAL) stays next to the new one.
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const movedTo = `${file}.damaged-${stamp}`;
      for (const suffix of ['', '-wal', '-shm']) if (existsSync(file + suffix)) renameSync(file + suffix, movedTo + suffix);
      db!.close();
      this.recovered = { movedTo, problem: damage };
      this.log(
        'error',
        `store: ${path.basename(file)} is damaged (${damage}); moved it to ${path.basename(movedTo)} and started an empty store`,
      );
      connect();
    }
    this.db = db!;
    this.migrate();
    // Stryker disable next-line ConditionalExpression: importLowdbData of no folder finds nothing to import
    if (options.importFrom) importLowdbData(this, options.importFrom, this.log);
  }

  /**
   * From the next commit on, WAL checkpoints run on a thread of their own (sqlite-checkpointer.ts).
   * A server asks once it is ready, so the thread's start does not share the machine with its own;
   * a short-lived command never asks, and checkpoints on commit as SQLite does.
   */
  checkpointInBackground(): WalCheckpointer {
    this.checkpointer ??= new WalCheckpointer({
      file: this.file,
      busyTimeoutMs: this.busyTimeoutMs,
      setAutocheckpoint: (pages) => this.db.isOpen && this.db.exec(`PRAGMA wal_autocheckpoint = ${pages}`),
      warn: (message) => this.log('warn', `store: ${message}`),
    });
    return this.checkpointer;
  }

  /** Checkpoints on commit again, and the thread gone (a server stopping with its store left open). */
  stopBackgroundCheckpoints(): void {
    this.checkpointer?.close();
  }

  /**
   * Each step reads the version inside its own write transaction, so two processes opening a new
   * file together apply every migration exactly once.
   */
  private migrate(): void {
    const userVersion = () => (this.db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
    for (;;) {
      const done = this.transaction(() => {
        const version = userVersion();
        if (version > MIGRATIONS.length) {
          throw new Error(`${this.file} was written by a newer Hangar (schema ${version}, this one knows ${MIGRATIONS.length})`);
        }
        if (version === MIGRATIONS.length) return true;
        this.db.exec(MIGRATIONS[version]!);
        this.db.exec(`PRAGMA user_version = ${version + 1}`);
        return false;
      }, 'the schema');
      if (done) return;
    }
  }

  /** A cached prepared statement. */
  statement(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    // Stryker disable next-line ConditionalExpression: preparing again gives an equal statement; the cache saves the parse
    if (!statement) this.statements.set(sql, (statement = this.db.prepare(sql)));
    return statement;
  }

  /**
   * Runs `fn` in one write transaction (BEGIN IMMEDIATE takes the write lock up front, so another
   * process waits rather than failing half-way). A failure rolls everything back and answers 503.
   */
  transaction<R>(fn: () => R, what = 'a record'): R {
    try {
      this.db.exec('BEGIN IMMEDIATE');
    } catch (err) {
      throw this.failed(what, err);
    }
    let result: R;
    try {
      result = fn();
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
    try {
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw this.failed(what, err);
    }
    this.failing = undefined;
    this.checkpointer?.committed();
    return result;
  }

  private failed(what: string, err: unknown) {
    const error = writeFailed(what, err);
    this.failing = { at: new Date(), message: error.message };
    this.log('error', `store: ${error.message}`);
    return error;
  }

  describe(): StoreDescription {
    return {
      backend: 'sqlite',
      path: this.file,
      ...(this.recovered ? { recovered: { moved_to: this.recovered.movedTo, problem: this.recovered.problem } } : {}),
    };
  }

  /** Whether the store can write right now (probed with a write when the last one failed). */
  health(): { ok: true } | { ok: false; detail: string } {
    // Stryker disable next-line ConditionalExpression: a probe of a store that writes succeeds; skipping it saves a write
    if (!this.failing) return { ok: true };
    try {
      // Stryker disable next-line ArrowFunction,StringLiteral: BEGIN IMMEDIATE already takes the write lock the probe is for
      this.transaction(() => this.db.exec('CREATE TEMP TABLE IF NOT EXISTS probe (x); DROP TABLE temp.probe;'), 'a health probe');
      return { ok: true };
    } catch {
      // Stryker disable next-line OptionalChaining,StringLiteral: the failed probe has just set `failing`; the fallback is for the type checker
      return { ok: false, detail: this.failing?.message ?? 'the store cannot write' };
    }
  }

  collection<T>(name: string, options: CollectionOptions = {}): Collection<T> {
    if (!SAFE_NAME.test(name)) throw new Error(`invalid collection name "${name}"`);
    let collection = this.collections.get(name);
    if (!collection) {
      const created = new SqliteCollection<unknown>(this, name, options.countBy, () => this.createDeferredIndexes(name));
      this.collections.set(name, (collection = created));
      if (options.countBy) (collection as SqliteCollection<unknown>).ensureGroups();
    }
    // Indexes named by any opener count, not only the first: a collection read as documents
    // (no options) before its ingestor opened it still gets the ingestor's index.
    for (const fields of options.indexes ?? []) {
      if (this.isEmpty(name)) {
        const deferred = this.deferredIndexes.get(name) ?? [];
        // Stryker disable next-line ConditionalExpression,ArrowFunction: a list named twice is made once either way (ensureIndex keeps the names it made)
        if (!deferred.some((f) => f.join() === fields.join())) deferred.push(fields);
        this.deferredIndexes.set(name, deferred);
      } else this.ensureIndex(name, fields);
    }
    return collection as SqliteCollection<T>;
  }

  /**
   * Whether the collection holds no record (and has no index yet). Its indexes then wait for its
   * first write: an index is at least one page (4 KiB) even when empty, and a workspace declares
   * some thirty for collections most workspaces never fill — 120 KiB of a new database otherwise.
   * A page of an empty collection needs no index.
   */
  private isEmpty(collection: string): boolean {
    return !this.statement('SELECT 1 FROM records WHERE collection = ? LIMIT 1').get(collection);
  }

  /** Before the first write to a collection opened empty: the indexes it declared. */
  private createDeferredIndexes(collection: string): void {
    const deferred = this.deferredIndexes.get(collection);
    if (!deferred) return;
    // Stryker disable next-line CallExpression: made again, each index returns at once (ensureIndex keeps the names it made)
    this.deferredIndexes.delete(collection);
    for (const fields of deferred) this.ensureIndex(collection, fields);
  }

  /**
   * A partial expression index over the collection's rows: the same `json_extract` text the
   * queries use, so SQLite's planner matches them. Names are checked, so they are safe inline.
   */
  private ensureIndex(collection: string, fields: readonly string[]): void {
    checkFields({ orderBy: fields.map((field) => ({ field })) });
    const base = `ix_${collection}_${fields.join('_')}`.replace(/[^A-Za-z0-9_]/g, '_');
    const name = `${base}__ordered`;
    // Stryker disable next-line ConditionalExpression: dropping the older spellings again and CREATE INDEX IF NOT EXISTS change nothing; the set saves a transaction
    if (this.indexes.has(name)) return;
    // Stryker disable next-line CallExpression: as above
    this.indexes.add(name);
    // `collection` first and `id` last: every query names the collection and breaks ties by id, so
    // the index gives the whole ORDER BY — a page is read in order, never sorted in a temporary
    // b-tree — and the planner prefers it to the primary key even when nothing else is filtered.
    // Older spellings of the same index go.
    const columns = ['collection', ...fields.map(fieldExpression), 'id'].join(', ');
    this.transaction(() => {
      this.db.exec(`DROP INDEX IF EXISTS "${base}"; DROP INDEX IF EXISTS "${base}__id"`);
      this.db.exec(`CREATE INDEX IF NOT EXISTS "${name}" ON records (${columns}) WHERE collection = '${collection}'`);
    }, `the index ${name}`);
  }

  appendLog<T>(name: string): KeyedLog<T> {
    if (!SAFE_NAME.test(name)) throw new Error(`invalid log name "${name}"`);
    let log = this.logs.get(name);
    if (!log) this.logs.set(name, (log = new SqliteLog<unknown>(this, name)));
    return log as SqliteLog<T>;
  }

  invocations(): InvocationTable {
    this.invocationTable ??= new SqliteInvocations(this);
    return this.invocationTable;
  }

  async stats(): Promise<StoreStats> {
    const collections: Record<string, CollectionStats> = {};
    const rows = this.statement(
      'SELECT collection AS name, COUNT(*) AS records, SUM(LENGTH(value)) AS bytes FROM records GROUP BY collection',
    ).all() as Array<{ name: string; records: number; bytes: number }>;
    for (const row of rows) collections[row.name] = { records: row.records, files: 1, bytes: row.bytes ?? 0 };
    const logs = this.statement(
      `SELECT k.log AS name, COUNT(*) AS records, SUM((SELECT SUM(LENGTH(value)) FROM log_items i WHERE i.item >= k.id * ${KEY_SPAN} AND i.item < (k.id + 1) * ${KEY_SPAN})) AS bytes FROM log_keys k GROUP BY k.log`,
    ).all() as Array<{ name: string; records: number; bytes: number }>;
    for (const row of logs) collections[row.name] = { records: row.records, files: 1, bytes: row.bytes ?? 0 };
    for (const name of this.collections.keys()) collections[name] ??= { records: 0, files: 1, bytes: 0 };
    const pages = this.statement('PRAGMA page_count').get() as { page_count: number };
    const size = this.statement('PRAGMA page_size').get() as { page_size: number };
    return { backend: 'sqlite', path: this.file, files: 1, bytes: pages.page_count * size.page_size, collections };
  }

  /**
   * Every write is on disk (to SQLite's durability setting) when its call returns; a flush (a
   * stop) also moves the WAL into the database file and empties it, so a stopped workspace is
   * one file and does not keep a WAL of up to SQLite's 1,000-page checkpoint threshold (~4 MB).
   *
   * While another connection checkpoints (the checkpoint thread, or a command on the same
   * workspace), it holds SQLite's checkpoint lock, and a TRUNCATE answers "busy" at once instead of
   * waiting on the busy handler: it is asked again until it gets the lock, for as long as a writer
   * would wait (`busyTimeoutMs`). A stop that did not ask again left a WAL of up to the backstop
   * (16 MB) beside a stopped workspace.
   */
  async flush(): Promise<void> {
    const deadline = performance.now() + this.busyTimeoutMs;
    while (this.db.isOpen) {
      const { busy } = this.statement('PRAGMA wal_checkpoint(TRUNCATE)').get() as { busy: number };
      // Stryker disable next-line EqualityOperator: equivalent at millisecond resolution
      if (!busy || performance.now() >= deadline) return;
      await delay(FLUSH_RETRY_MS);
    }
  }

  close(): void {
    this.checkpointer?.close();
    if (this.db.isOpen) this.db.close();
  }
}

/**
 * SQLite's result codes for a file that is not a sound database (SQLITE_CORRUPT, SQLITE_NOTADB).
 * Anything else at open — another process holding a lock, a folder we cannot write — is not
 * damage, and moving the file aside for it would hide a healthy database.
 */
const DAMAGE_CODES = new Set([11, 26]);
const SQLITE_BUSY = 5;
/** How long a flush waits before asking for the checkpoint lock again (a checkpoint of a 16 MB WAL takes ~50 ms here). */
const FLUSH_RETRY_MS = 10;
/** SQLite's primary result code in an error from node:sqlite; 0 for any other error. */
const resultCode = (err: unknown) => ((err as { errcode?: number }).errcode ?? 0) & 0xff;
const isDamage = (err: unknown) => DAMAGE_CODES.has(resultCode(err));
const isBusy = (err: unknown) => resultCode(err) === SQLITE_BUSY;

/** Opening a store is synchronous (a constructor), so its retry pauses block this thread briefly. */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** `PRAGMA quick_check` (O(N), far cheaper than integrity_check); the problems found, if any. */
function quickCheck(db: DatabaseSync): string | undefined {
  const rows = db.prepare('PRAGMA quick_check').all() as Array<{ quick_check: string }>;
  const problems = rows.map((r) => r.quick_check).filter((r) => r !== 'ok');
  return problems.length ? problems.slice(0, 3).join('; ') : undefined;
}

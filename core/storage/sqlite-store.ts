import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { DatabaseSync as DatabaseSyncType, StatementSync } from 'node:sqlite';
import { serviceUnavailable } from '../http/errors.js';
import { replayLog } from './append-log.js';
import { checkFields } from './query.js';
import type { Collection, CollectionOptions, CollectionStats, FieldValue, KeyedLog, LogEntry, RecordQuery, Store, StoreDescription, StoreStats } from '../kernel/store.js';

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
 */
export type Durability = 'full' | 'normal';

export interface SqliteStoreOptions {
  durability?: Durability;
  /** How long a writer waits for another process's transaction before giving up. */
  busyTimeoutMs?: number;
  /** Where damage found at open and the lowdb import are reported. */
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** A lowdb data folder (`.hangar/data`) to import on first open; see importLowdbData. */
  importFrom?: string;
}

/** Versioned migrations, run in order at open; `PRAGMA user_version` records how far a file is. */
const MIGRATIONS: string[] = [
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
];

const SAFE_NAME = /^[a-z0-9][a-z0-9_.-]*$/i;

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
  return serviceUnavailable(`the store could not write ${what}: ${reason}`, 1);
}

export class SqliteStore implements Store {
  readonly file: string;
  private readonly db: DatabaseSync;
  private readonly statements = new Map<string, StatementSync>();
  private readonly collections = new Map<string, SqliteCollection<unknown>>();
  private readonly logs = new Map<string, SqliteLog<unknown>>();
  private readonly log: NonNullable<SqliteStoreOptions['log']>;
  /** The last failed write, until a write succeeds again (what /readiness reports). */
  private failing: { at: Date; message: string } | undefined;
  /** Set at open when a damaged file was moved aside. */
  readonly recovered: { movedTo: string; problem: string } | undefined;

  constructor(file: string, options: SqliteStoreOptions = {}) {
    this.file = file;
    this.log = options.log ?? (() => {});
    mkdirSync(path.dirname(file), { recursive: true });
    const connect = () => {
      const db = new DatabaseSync(file, { timeout: options.busyTimeoutMs ?? 5_000 });
      db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = ${options.durability === 'full' ? 'FULL' : 'NORMAL'};`);
      return db;
    };
    let db: DatabaseSync | undefined;
    let damage: string | undefined;
    try {
      db = connect();
      damage = quickCheck(db);
    } catch (err) {
      if (!isDamage(err)) throw err;
      damage = (err as Error).message;
    }
    if (damage) {
      db?.close();
      // Never silently emptied: the damaged file (and its WAL) stays next to the new one.
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const movedTo = `${file}.damaged-${stamp}`;
      for (const suffix of ['', '-wal', '-shm']) if (existsSync(file + suffix)) renameSync(file + suffix, movedTo + suffix);
      this.recovered = { movedTo, problem: damage };
      this.log('error', `store: ${path.basename(file)} is damaged (${damage}); moved it to ${path.basename(movedTo)} and started an empty store`);
      db = connect();
    }
    this.db = db!;
    this.migrate();
    if (options.importFrom) importLowdbData(this, options.importFrom, this.log);
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
    if (!this.failing) return { ok: true };
    try {
      this.transaction(() => this.db.exec('CREATE TEMP TABLE IF NOT EXISTS probe (x); DROP TABLE temp.probe;'), 'a health probe');
      return { ok: true };
    } catch {
      return { ok: false, detail: this.failing?.message ?? 'the store cannot write' };
    }
  }

  collection<T>(name: string, options: CollectionOptions = {}): Collection<T> {
    if (!SAFE_NAME.test(name)) throw new Error(`invalid collection name "${name}"`);
    let collection = this.collections.get(name);
    if (!collection) {
      this.collections.set(name, (collection = new SqliteCollection<unknown>(this, name, options.countBy)));
      for (const fields of options.indexes ?? []) this.ensureIndex(name, fields);
      if (options.countBy) (collection as SqliteCollection<unknown>).ensureGroups();
    }
    return collection as SqliteCollection<T>;
  }

  /**
   * A partial expression index over the collection's rows: the same `json_extract` text the
   * queries use, so SQLite's planner matches them. Names are checked, so they are safe inline.
   */
  private ensureIndex(collection: string, fields: readonly string[]): void {
    checkFields({ orderBy: fields.map((field) => ({ field })) });
    const name = `ix_${collection}_${fields.join('_')}`.replace(/[^A-Za-z0-9_]/g, '_');
    const columns = fields.map(fieldExpression).join(', ');
    this.transaction(() => this.db.exec(`CREATE INDEX IF NOT EXISTS "${name}" ON records (${columns}) WHERE collection = '${collection}'`), `the index ${name}`);
  }

  appendLog<T>(name: string): KeyedLog<T> {
    if (!SAFE_NAME.test(name)) throw new Error(`invalid log name "${name}"`);
    let log = this.logs.get(name);
    if (!log) this.logs.set(name, (log = new SqliteLog<unknown>(this, name)));
    return log as SqliteLog<T>;
  }

  async stats(): Promise<StoreStats> {
    const collections: Record<string, CollectionStats> = {};
    const rows = this.statement('SELECT collection AS name, COUNT(*) AS records, SUM(LENGTH(value)) AS bytes FROM records GROUP BY collection').all() as Array<{ name: string; records: number; bytes: number }>;
    for (const row of rows) collections[row.name] = { records: row.records, files: 1, bytes: row.bytes ?? 0 };
    const logs = this.statement('SELECT k.log AS name, COUNT(*) AS records, (SELECT SUM(LENGTH(value)) FROM log_items i WHERE i.log = k.log) AS bytes FROM log_keys k GROUP BY k.log').all() as Array<{ name: string; records: number; bytes: number }>;
    for (const row of logs) collections[row.name] = { records: row.records, files: 1, bytes: row.bytes ?? 0 };
    for (const name of this.collections.keys()) collections[name] ??= { records: 0, files: 1, bytes: 0 };
    const pages = this.statement('PRAGMA page_count').get() as { page_count: number };
    const size = this.statement('PRAGMA page_size').get() as { page_size: number };
    return { backend: 'sqlite', path: this.file, files: 1, bytes: pages.page_count * size.page_size, collections };
  }

  /** Every write is on disk (to SQLite's durability setting) when its call returns. */
  async flush(): Promise<void> {}

  close(): void {
    if (this.db.isOpen) this.db.close();
  }
}

/**
 * SQLite's result codes for a file that is not a sound database (SQLITE_CORRUPT, SQLITE_NOTADB).
 * Anything else at open — another process holding a lock, a folder we cannot write — is not
 * damage, and moving the file aside for it would hide a healthy database.
 */
const DAMAGE_CODES = new Set([11, 26]);
function isDamage(err: unknown): boolean {
  const code = (err as { errcode?: number }).errcode;
  return code !== undefined && DAMAGE_CODES.has(code & 0xff);
}

/** `PRAGMA quick_check` (O(N), far cheaper than integrity_check); the problems found, if any. */
function quickCheck(db: DatabaseSync): string | undefined {
  const rows = db.prepare('PRAGMA quick_check').all() as Array<{ quick_check: string }>;
  const problems = rows.map((r) => r.quick_check).filter((r) => r !== 'ok');
  return problems.length ? problems.slice(0, 3).join('; ') : undefined;
}

/** JSON text of a value; a value JSON cannot represent is refused before anything is written. */
function encode(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError('the store holds JSON values only');
  return text;
}

/** The marker row that records which fields a collection's groups count. */
const SPEC = '#fields';

class SqliteCollection<T> implements Collection<T> {
  /** `json_array(json_extract(value, '$.f1'), …)`: a record's group, computed by SQLite both ways. */
  private readonly groupOf: string | undefined;

  constructor(
    private readonly store: SqliteStore,
    readonly name: string,
    private readonly countBy?: readonly string[],
  ) {
    if (countBy) {
      checkFields({ orderBy: countBy.map((field) => ({ field })) });
      this.groupOf = `json_array(${countBy.map((f) => `json_extract(value, '$.${f}')`).join(', ')})`;
    }
  }

  /**
   * Counts kept by something else than this code (the lowdb import, another field list) are
   * rebuilt in one GROUP BY; from then on every write keeps them in its own transaction.
   */
  ensureGroups(): void {
    const spec = JSON.stringify(this.countBy);
    const marker = this.store.statement('SELECT n FROM record_groups WHERE collection = ? AND grp = ?').get(this.name, `${SPEC}${spec}`);
    if (marker) return;
    this.store.transaction(() => {
      this.store.statement('DELETE FROM record_groups WHERE collection = ?').run(this.name);
      this.store
        .statement(`INSERT INTO record_groups (collection, grp, n) SELECT collection, ${this.groupOf}, COUNT(*) FROM records WHERE collection = ? GROUP BY 2`)
        .run(this.name);
      this.store.statement('INSERT INTO record_groups (collection, grp, n) VALUES (?, ?, 0)').run(this.name, `${SPEC}${spec}`);
    }, `the counts of ${this.name}`);
  }

  /** Inside a write transaction: the record `id` leaves its group (if it exists). */
  private leaveGroup(id: string): void {
    if (!this.groupOf) return;
    const row = this.store.statement(`SELECT ${this.groupOf} AS grp FROM records WHERE collection = ? AND id = ?`).get(this.name, id) as { grp: string } | undefined;
    if (!row) return;
    this.store.statement('UPDATE record_groups SET n = n - 1 WHERE collection = ? AND grp = ?').run(this.name, row.grp);
    this.store.statement('DELETE FROM record_groups WHERE collection = ? AND grp = ? AND n <= 0').run(this.name, row.grp);
  }

  /** Inside a write transaction: a record with this JSON text joins its group. */
  private joinGroup(text: string): void {
    if (!this.groupOf) return;
    const { grp } = this.store.statement(`SELECT ${this.groupOf} AS grp FROM (SELECT ? AS value)`).get(text) as { grp: string };
    this.store.statement('INSERT INTO record_groups (collection, grp, n) VALUES (?, ?, 1) ON CONFLICT (collection, grp) DO UPDATE SET n = n + 1').run(this.name, grp);
  }

  private write(id: string, text: string): void {
    this.leaveGroup(id);
    this.store.statement('INSERT INTO records (collection, id, value) VALUES (?, ?, ?) ON CONFLICT (collection, id) DO UPDATE SET value = excluded.value').run(this.name, id, text);
    this.joinGroup(text);
  }

  private remove(id: string): boolean {
    this.leaveGroup(id);
    return Number(this.store.statement('DELETE FROM records WHERE collection = ? AND id = ?').run(this.name, id).changes) > 0;
  }

  /** The total of a query whose filter names only counted fields: a sum over groups, not a count of records. */
  private totalFromGroups(where: Record<string, unknown>): number | undefined {
    if (!this.countBy || !Object.keys(where).every((field) => this.countBy!.includes(field))) return undefined;
    const rows = this.store.statement("SELECT grp, n FROM record_groups WHERE collection = ? AND grp NOT LIKE '#%'").all(this.name) as Array<{ grp: string; n: number }>;
    const wanted = Object.entries(where).map(([field, value]) => [this.countBy!.indexOf(field), Array.isArray(value) ? value : [value]] as const);
    let total = 0;
    for (const row of rows) {
      const values = JSON.parse(row.grp) as unknown[];
      if (wanted.every(([i, accepted]) => accepted.some((v) => (typeof v === 'boolean' ? Number(v) : v) === values[i]))) total += row.n;
    }
    return total;
  }

  async get(id: string): Promise<T | undefined> {
    const row = this.store.statement('SELECT value FROM records WHERE collection = ? AND id = ?').get(this.name, id) as { value: string } | undefined;
    return row ? (JSON.parse(row.value) as T) : undefined;
  }

  async has(id: string): Promise<boolean> {
    return this.store.statement('SELECT 1 FROM records WHERE collection = ? AND id = ?').get(this.name, id) !== undefined;
  }

  async put(id: string, value: T): Promise<T> {
    const text = encode(value);
    this.store.transaction(() => this.write(id, text), `${this.name}/${id}`);
    return value;
  }

  async update(id: string, fn: (current: T | undefined) => T | undefined): Promise<T | undefined> {
    return this.store.transaction(() => {
      const row = this.store.statement('SELECT value FROM records WHERE collection = ? AND id = ?').get(this.name, id) as { value: string } | undefined;
      const next = fn(row ? (JSON.parse(row.value) as T) : undefined);
      if (next === undefined) this.remove(id);
      else this.write(id, encode(next));
      return next;
    }, `${this.name}/${id}`);
  }

  async delete(id: string): Promise<boolean> {
    return this.store.transaction(() => this.remove(id), `${this.name}/${id}`);
  }

  async deleteWhere(predicate: (value: T, id: string) => boolean): Promise<number> {
    return this.store.transaction(() => {
      const doomed = (this.store.statement('SELECT id, value FROM records WHERE collection = ?').all(this.name) as Array<{ id: string; value: string }>)
        .filter((row) => predicate(JSON.parse(row.value) as T, row.id))
        .map((row) => row.id);
      for (const id of doomed) this.remove(id);
      return doomed.length;
    }, `${this.name} (deleting matching records)`);
  }

  async entries(): Promise<Array<[string, T]>> {
    const rows = this.store.statement('SELECT id, value FROM records WHERE collection = ?').all(this.name) as Array<{ id: string; value: string }>;
    return rows.map((row) => [row.id, JSON.parse(row.value) as T]);
  }

  async list(): Promise<T[]> {
    return (await this.entries()).map(([, value]) => value);
  }

  async count(): Promise<number> {
    return (this.store.statement('SELECT COUNT(*) AS n FROM records WHERE collection = ?').get(this.name) as { n: number }).n;
  }

  /** The semantics of query.ts's queryInMemory, in SQL (the contract tests hold both to it). */
  async query(query: RecordQuery): Promise<{ items: T[]; total: number }> {
    checkFields(query);
    const conditions = [`collection = '${this.name}'`];
    const params: Array<string | number> = [];
    for (const [field, wanted] of Object.entries(query.where ?? {})) {
      const values = (Array.isArray(wanted) ? wanted : [wanted]) as FieldValue[];
      if (values.length === 0) return { items: [], total: 0 };
      conditions.push(`${fieldExpression(field)} IN (${values.map(() => '?').join(', ')})`);
      params.push(...values.map((v) => (typeof v === 'boolean' ? Number(v) : v)));
    }
    const where = conditions.join(' AND ');
    const order = query.orderBy ?? [];
    const orderSql = [...order.map((o) => `${fieldExpression(o.field)} ${o.desc ? 'DESC' : 'ASC'}`), `id ${order.at(-1)?.desc ? 'DESC' : 'ASC'}`].join(', ');
    const total =
      this.totalFromGroups(query.where ?? {}) ??
      (this.store.statement(`SELECT COUNT(*) AS n FROM records WHERE ${where}`).get(...params) as { n: number }).n;
    const rows = this.store
      .statement(`SELECT value FROM records WHERE ${where} ORDER BY ${orderSql} LIMIT ? OFFSET ?`)
      .all(...params, query.limit ?? -1, query.offset ?? 0) as Array<{ value: string }>;
    return { items: rows.map((row) => JSON.parse(row.value) as T), total };
  }
}

/** How a record's top-level field is read in SQL; queries and indexes must spell it identically. */
const fieldExpression = (field: string) => `json_extract(value, '$.${field}')`;

/**
 * A keyed list (a thread's messages): each item is one row, so an append inserts rows and never
 * touches what the key already holds.
 */
class SqliteLog<T> implements KeyedLog<T> {
  constructor(
    private readonly store: SqliteStore,
    readonly name: string,
  ) {}

  private head(key: string): { version: number; length: number } | undefined {
    return this.store.statement('SELECT version, length FROM log_keys WHERE log = ? AND key = ?').get(this.name, key) as { version: number; length: number } | undefined;
  }

  private tombstone(key: string): number {
    const row = this.store.statement('SELECT version FROM log_tombstones WHERE log = ? AND key = ?').get(this.name, key) as { version: number } | undefined;
    return row?.version ?? 0;
  }

  async get(key: string): Promise<LogEntry<T> | undefined> {
    const head = this.head(key);
    if (!head) return undefined;
    const rows = this.store.statement('SELECT value FROM log_items WHERE log = ? AND key = ? ORDER BY position').all(this.name, key) as Array<{ value: string }>;
    return { items: rows.map((row) => JSON.parse(row.value) as T), version: head.version };
  }

  async range(key: string, offset: number, limit: number): Promise<{ items: T[]; total: number }> {
    const total = this.head(key)?.length ?? 0;
    const start = offset < 0 ? Math.max(0, total + offset) : offset;
    if (limit <= 0 || start >= total) return { items: [], total };
    const rows = this.store
      .statement('SELECT value FROM log_items WHERE log = ? AND key = ? AND position >= ? AND position < ? ORDER BY position')
      .all(this.name, key, start, start + limit) as Array<{ value: string }>;
    return { items: rows.map((row) => JSON.parse(row.value) as T), total };
  }

  async keys(): Promise<string[]> {
    return (this.store.statement('SELECT key FROM log_keys WHERE log = ?').all(this.name) as Array<{ key: string }>).map((row) => row.key);
  }

  async append(key: string, items: T[]): Promise<{ length: number; version: number }> {
    const texts = items.map(encode);
    return this.store.transaction(() => {
      const head = this.head(key) ?? { version: this.tombstone(key), length: 0 };
      const insert = this.store.statement('INSERT INTO log_items (log, key, position, value) VALUES (?, ?, ?, ?)');
      texts.forEach((text, i) => insert.run(this.name, key, head.length + i, text));
      const next = { length: head.length + texts.length, version: head.version + 1 };
      this.writeHead(key, next.version, next.length);
      return next;
    }, `${this.name}/${key}`);
  }

  async set(key: string, items: T[]): Promise<LogEntry<T>> {
    const texts = items.map(encode);
    const version = this.store.transaction(() => {
      const version = (this.head(key)?.version ?? this.tombstone(key)) + 1;
      this.store.statement('DELETE FROM log_items WHERE log = ? AND key = ?').run(this.name, key);
      const insert = this.store.statement('INSERT INTO log_items (log, key, position, value) VALUES (?, ?, ?, ?)');
      texts.forEach((text, i) => insert.run(this.name, key, i, text));
      this.writeHead(key, version, texts.length);
      return version;
    }, `${this.name}/${key}`);
    return { items: [...items], version };
  }

  async delete(key: string): Promise<boolean> {
    return this.store.transaction(() => {
      const head = this.head(key);
      if (!head) return false;
      this.store.statement('DELETE FROM log_items WHERE log = ? AND key = ?').run(this.name, key);
      this.store.statement('DELETE FROM log_keys WHERE log = ? AND key = ?').run(this.name, key);
      // A key created again keeps counting upwards, as readers compare versions.
      this.store.statement('INSERT INTO log_tombstones (log, key, version) VALUES (?, ?, ?) ON CONFLICT (log, key) DO UPDATE SET version = excluded.version').run(this.name, key, head.version + 1);
      return true;
    }, `${this.name}/${key}`);
  }

  private writeHead(key: string, version: number, length: number): void {
    this.store
      .statement('INSERT INTO log_keys (log, key, version, length) VALUES (?, ?, ?, ?) ON CONFLICT (log, key) DO UPDATE SET version = excluded.version, length = excluded.length')
      .run(this.name, key, version, length);
  }

  async flush(): Promise<void> {}

  async stats(): Promise<CollectionStats> {
    const keys = (this.store.statement('SELECT COUNT(*) AS n FROM log_keys WHERE log = ?').get(this.name) as { n: number }).n;
    const bytes = (this.store.statement('SELECT SUM(LENGTH(value)) AS b FROM log_items WHERE log = ?').get(this.name) as { b: number | null }).b ?? 0;
    return { records: keys, files: 1, bytes };
  }
}

/**
 * Upgrading loses nothing: a workspace's lowdb data (`.hangar/data/<collection>/<n>.json` shards and
 * `_logs/<name>.jsonl` append logs) is imported on the first open, one transaction per collection,
 * with a line of counts per collection. The old folder is then renamed `data.imported-<time>` and
 * kept. The import is recorded in the database, so running it again (or a copy of the folder put
 * back) changes nothing.
 */
export function importLowdbData(store: SqliteStore, dataDir: string, log: NonNullable<SqliteStoreOptions['log']>): void {
  if (!existsSync(dataDir)) return;
  const source = path.resolve(dataDir);
  if (store.statement('SELECT 1 FROM imports WHERE source = ?').get(source)) return;
  const entries = readdirSync(dataDir, { withFileTypes: true });
  const collections = entries.filter((e) => e.isDirectory() && e.name !== '_logs' && SAFE_NAME.test(e.name)).map((e) => e.name);
  const logsDir = path.join(dataDir, '_logs');
  const logs = existsSync(logsDir) ? readdirSync(logsDir).filter((f) => f.endsWith('.jsonl')).map((f) => f.slice(0, -'.jsonl'.length)) : [];
  if (collections.length === 0 && logs.length === 0) return;
  log('info', `store: importing ${collections.length + logs.length} collection(s) from ${path.basename(path.dirname(source))}/${path.basename(source)} into ${path.basename(store.file)}`);
  const counts: Record<string, number> = {};
  for (const name of collections) {
    const records = readLowdbCollection(path.join(dataDir, name));
    store.transaction(() => {
      const upsert = store.statement('INSERT INTO records (collection, id, value) VALUES (?, ?, ?) ON CONFLICT (collection, id) DO NOTHING');
      for (const [id, value] of records) upsert.run(name, id, encode(value));
      // Rows written behind the collection's back: its counts are rebuilt when it is next opened.
      store.statement('DELETE FROM record_groups WHERE collection = ?').run(name);
    }, `${name} (import)`);
    counts[name] = records.length;
    log('info', `store: imported ${name}: ${records.length} record(s)`);
  }
  for (const name of logs) {
    const keys = readAppendLog(path.join(logsDir, `${name}.jsonl`));
    store.transaction(() => {
      const head = store.statement('INSERT INTO log_keys (log, key, version, length) VALUES (?, ?, ?, ?) ON CONFLICT (log, key) DO NOTHING');
      const item = store.statement('INSERT INTO log_items (log, key, position, value) VALUES (?, ?, ?, ?) ON CONFLICT (log, key, position) DO NOTHING');
      for (const [key, entry] of keys) {
        head.run(name, key, entry.version, entry.items.length);
        entry.items.forEach((value, i) => item.run(name, key, i, encode(value)));
      }
    }, `${name} (import)`);
    counts[name] = keys.size;
    log('info', `store: imported ${name}: ${keys.size} key(s)`);
  }
  store.transaction(() => {
    store.statement('INSERT INTO imports (source, imported_at, counts) VALUES (?, ?, ?)').run(source, new Date().toISOString(), JSON.stringify(counts));
  }, 'the import record');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const keptAt = `${source}.imported-${stamp}`;
  renameSync(source, keptAt);
  log('info', `store: import done; the old files are kept in ${path.basename(keptAt)}`);
}

function readLowdbCollection(dir: string): Array<[string, unknown]> {
  const records: Array<[string, unknown]> = [];
  for (const file of readdirSync(dir)) {
    if (!/^\d+\.json$/.test(file)) continue;
    const text = readFileSync(path.join(dir, file), 'utf8');
    let shard: { records?: Record<string, unknown> };
    try {
      shard = JSON.parse(text) as typeof shard;
    } catch (err) {
      throw new Error(`cannot import ${path.basename(dir)}/${file}: ${(err as Error).message} (fix or remove the file, then start again)`);
    }
    records.push(...Object.entries(shard.records ?? {}));
  }
  return records;
}

/** An append log's keys as the old store read them (append-log.ts's own replay). */
function readAppendLog(file: string): Map<string, LogEntry<unknown>> {
  const entries = new Map<string, LogEntry<unknown>>();
  replayLog(readFileSync(file, 'utf8'), entries);
  return entries;
}

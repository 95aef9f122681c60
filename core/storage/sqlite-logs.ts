import type { CollectionStats, KeyedLog, LogEntry } from '../kernel/store.js';
import { encode, runner, type SqlAccess } from './sqlite-sql.js';
import { type StoreStatements, storeStatements } from './store-sql.js';

/** The statements every keyed log shares (the query layer's, compiled once for SQLite). */
const STATEMENTS: StoreStatements = storeStatements('sqlite');

/**
 * A keyed list (a thread's messages): each item is one row, so an append inserts rows and never
 * touches what the key already holds.
 */
export class SqliteLog<T> implements KeyedLog<T> {
  private readonly sql: ReturnType<typeof runner>;

  constructor(
    private readonly store: SqlAccess,
    readonly name: string,
  ) {
    this.sql = runner(store);
  }

  private head(key: string): { version: number; length: number } | undefined {
    return this.sql.get<{ version: number; length: number }>(STATEMENTS.logHead(this.name, key));
  }

  private tombstone(key: string): number {
    return this.sql.get<{ version: number }>(STATEMENTS.logTombstone(this.name, key))?.version ?? 0;
  }

  async get(key: string): Promise<LogEntry<T> | undefined> {
    const head = this.head(key);
    if (!head) return undefined;
    const rows = this.sql.all<{ value: string }>(STATEMENTS.logItems(this.name, key));
    return { items: rows.map((row) => JSON.parse(row.value) as T), version: head.version };
  }

  async range(key: string, offset: number, limit: number): Promise<{ items: T[]; total: number }> {
    const total = this.head(key)?.length ?? 0;
    const start = offset < 0 ? Math.max(0, total + offset) : offset;
    if (limit <= 0 || start >= total) return { items: [], total };
    const rows = this.sql.all<{ value: string }>(STATEMENTS.logRange(this.name, key, start, start + limit));
    return { items: rows.map((row) => JSON.parse(row.value) as T), total };
  }

  async keys(): Promise<string[]> {
    return this.sql.all<{ key: string }>(STATEMENTS.logKeys(this.name)).map((row) => row.key);
  }

  async append(key: string, items: T[]): Promise<{ length: number; version: number }> {
    const texts = items.map(encode);
    return this.store.transaction(() => {
      const head = this.head(key) ?? { version: this.tombstone(key), length: 0 };
      texts.forEach((text, i) => this.sql.run(STATEMENTS.appendItem(this.name, key, head.length + i, text)));
      const next = { length: head.length + texts.length, version: head.version + 1 };
      this.writeHead(key, next.version, next.length);
      return next;
    }, `${this.name}/${key}`);
  }

  async set(key: string, items: T[]): Promise<LogEntry<T>> {
    const texts = items.map(encode);
    const version = this.store.transaction(() => {
      const version = (this.head(key)?.version ?? this.tombstone(key)) + 1;
      this.sql.run(STATEMENTS.deleteItems(this.name, key));
      texts.forEach((text, i) => this.sql.run(STATEMENTS.appendItem(this.name, key, i, text)));
      this.writeHead(key, version, texts.length);
      return version;
    }, `${this.name}/${key}`);
    return { items: [...items], version };
  }

  async delete(key: string): Promise<boolean> {
    return this.store.transaction(() => {
      const head = this.head(key);
      if (!head) return false;
      this.sql.run(STATEMENTS.deleteItems(this.name, key));
      this.sql.run(STATEMENTS.deleteHead(this.name, key));
      // A key created again keeps counting upwards, as readers compare versions.
      this.sql.run(STATEMENTS.writeTombstone(this.name, key, head.version + 1));
      return true;
    }, `${this.name}/${key}`);
  }

  private writeHead(key: string, version: number, length: number): void {
    this.sql.run(STATEMENTS.writeHead(this.name, key, version, length));
  }

  async flush(): Promise<void> {}

  async stats(): Promise<CollectionStats> {
    const keys = (this.store.statement('SELECT COUNT(*) AS n FROM log_keys WHERE log = ?').get(this.name) as { n: number }).n;
    const bytes =
      (this.store.statement('SELECT SUM(LENGTH(value)) AS b FROM log_items WHERE log = ?').get(this.name) as { b: number | null }).b ?? 0;
    return { records: keys, files: 1, bytes };
  }
}

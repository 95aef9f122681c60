import type { CollectionStats, KeyedLog, LogEntry } from '../kernel/store.js';
import { encode, type SqlAccess } from './sqlite-sql.js';

/**
 * A keyed list (a thread's messages): each item is one row, so an append inserts rows and never
 * touches what the key already holds.
 */
export class SqliteLog<T> implements KeyedLog<T> {
  constructor(
    private readonly store: SqlAccess,
    readonly name: string,
  ) {}

  private head(key: string): { version: number; length: number } | undefined {
    return this.store.statement('SELECT version, length FROM log_keys WHERE log = ? AND key = ?').get(this.name, key) as
      | { version: number; length: number }
      | undefined;
  }

  private tombstone(key: string): number {
    const row = this.store.statement('SELECT version FROM log_tombstones WHERE log = ? AND key = ?').get(this.name, key) as
      | { version: number }
      | undefined;
    return row?.version ?? 0;
  }

  async get(key: string): Promise<LogEntry<T> | undefined> {
    const head = this.head(key);
    if (!head) return undefined;
    const rows = this.store
      .statement('SELECT value FROM log_items WHERE log = ? AND key = ? ORDER BY position')
      .all(this.name, key) as Array<{ value: string }>;
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
      this.store
        .statement(
          'INSERT INTO log_tombstones (log, key, version) VALUES (?, ?, ?) ON CONFLICT (log, key) DO UPDATE SET version = excluded.version',
        )
        .run(this.name, key, head.version + 1);
      return true;
    }, `${this.name}/${key}`);
  }

  private writeHead(key: string, version: number, length: number): void {
    this.store
      .statement(
        'INSERT INTO log_keys (log, key, version, length) VALUES (?, ?, ?, ?) ON CONFLICT (log, key) DO UPDATE SET version = excluded.version, length = excluded.length',
      )
      .run(this.name, key, version, length);
  }

  async flush(): Promise<void> {}

  async stats(): Promise<CollectionStats> {
    const keys = (this.store.statement('SELECT COUNT(*) AS n FROM log_keys WHERE log = ?').get(this.name) as { n: number }).n;
    const bytes =
      (this.store.statement('SELECT SUM(LENGTH(value)) AS b FROM log_items WHERE log = ?').get(this.name) as { b: number | null }).b ?? 0;
    return { records: keys, files: 1, bytes };
  }
}

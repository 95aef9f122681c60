import type { CollectionStats, KeyedLog, LogEntry } from '../kernel/store.js';
import type { PgAccess } from './postgres-sql.js';
import { encode } from './sqlite-sql.js';

/**
 * A keyed list of the PostgreSQL store (a thread's messages): one row per item, and a head row per
 * key (version, length). An append is one statement — the head's upsert takes the key's row lock,
 * so appends to one key from any number of instances are serialised by the database and never
 * interleave, and the items go in at the positions the head handed out.
 */
export class PostgresLog<T> implements KeyedLog<T> {
  constructor(
    private readonly store: PgAccess,
    readonly name: string,
  ) {}

  private async head(key: string): Promise<{ version: number; length: number } | undefined> {
    const { rows } = await this.store.query<{ version: string; length: string }>(
      'SELECT version, length FROM log_keys WHERE log = $1 AND key = $2',
      [this.name, key],
    );
    return rows[0] ? { version: Number(rows[0].version), length: Number(rows[0].length) } : undefined;
  }

  async get(key: string): Promise<LogEntry<T> | undefined> {
    // One statement, so the items and the version are of the same moment.
    const { rows } = await this.store.query<{ version: string; items: T[] }>(
      `SELECT k.version, COALESCE((SELECT jsonb_agg(i.value ORDER BY i.position) FROM log_items i WHERE i.log = k.log AND i.key = k.key), '[]') AS items
         FROM log_keys k WHERE k.log = $1 AND k.key = $2`,
      [this.name, key],
    );
    return rows[0] ? { items: rows[0].items, version: Number(rows[0].version) } : undefined;
  }

  async range(key: string, offset: number, limit: number): Promise<{ items: T[]; total: number }> {
    const total = (await this.head(key))?.length ?? 0;
    const start = offset < 0 ? Math.max(0, total + offset) : offset;
    if (limit <= 0 || start >= total) return { items: [], total };
    const { rows } = await this.store.query<{ value: T }>(
      'SELECT value FROM log_items WHERE log = $1 AND key = $2 AND position >= $3 AND position < $4 ORDER BY position',
      [this.name, key, start, start + limit],
    );
    return { items: rows.map((row) => row.value), total };
  }

  async keys(): Promise<string[]> {
    const { rows } = await this.store.query<{ key: string }>('SELECT key FROM log_keys WHERE log = $1', [this.name]);
    return rows.map((row) => row.key);
  }

  async append(key: string, items: T[]): Promise<{ length: number; version: number }> {
    const texts = items.map(encode);
    const { rows } = await this.store.query<{ version: string; length: string }>(
      `WITH head AS (
         INSERT INTO log_keys (log, key, version, length, changed)
         VALUES ($1, $2, COALESCE((SELECT version FROM log_tombstones WHERE log = $1 AND key = $2), 0) + 1, $3, $5)
         ON CONFLICT (log, key) DO UPDATE SET version = log_keys.version + 1, length = log_keys.length + $3, changed = $5
         RETURNING version, length
       ), added AS (
         INSERT INTO log_items (log, key, position, value)
         SELECT $1, $2, head.length - $3 + item.n - 1, item.value::jsonb FROM head, unnest($4::text[]) WITH ORDINALITY AS item(value, n)
       )
       SELECT version, length FROM head`,
      [this.name, key, texts.length, texts, Date.now()],
      `${this.name}/${key}`,
    );
    return { version: Number(rows[0]!.version), length: Number(rows[0]!.length) };
  }

  async set(key: string, items: T[]): Promise<LogEntry<T>> {
    const texts = items.map(encode);
    const version = await this.store.transaction(async (client) => {
      const { rows } = await client.query<{ version: string }>(
        `INSERT INTO log_keys (log, key, version, length, changed)
         VALUES ($1, $2, COALESCE((SELECT version FROM log_tombstones WHERE log = $1 AND key = $2), 0) + 1, $3, $4)
         ON CONFLICT (log, key) DO UPDATE SET version = log_keys.version + 1, length = $3, changed = $4
         RETURNING version`,
        [this.name, key, texts.length, Date.now()],
      );
      await client.query('DELETE FROM log_items WHERE log = $1 AND key = $2', [this.name, key]);
      await client.query(
        `INSERT INTO log_items (log, key, position, value)
         SELECT $1, $2, item.n - 1, item.value::jsonb FROM unnest($3::text[]) WITH ORDINALITY AS item(value, n)`,
        [this.name, key, texts],
      );
      return Number(rows[0]!.version);
    }, `${this.name}/${key}`);
    return { items: [...items], version };
  }

  async changedAt(keys: readonly string[]): Promise<Map<string, number>> {
    const { rows } = await this.store.query<{ key: string; changed: string }>(
      'SELECT key, changed FROM log_keys WHERE log = $1 AND key = ANY($2::text[]) AND changed IS NOT NULL',
      [this.name, keys],
    );
    return new Map(rows.map((row) => [row.key, Number(row.changed)]));
  }

  async delete(key: string): Promise<boolean> {
    return this.store.transaction(async (client) => {
      const { rows } = await client.query<{ version: string }>('DELETE FROM log_keys WHERE log = $1 AND key = $2 RETURNING version', [
        this.name,
        key,
      ]);
      if (!rows[0]) return false;
      await client.query('DELETE FROM log_items WHERE log = $1 AND key = $2', [this.name, key]);
      // A key created again keeps counting upwards, as readers compare versions.
      await client.query(
        'INSERT INTO log_tombstones (log, key, version) VALUES ($1, $2, $3) ON CONFLICT (log, key) DO UPDATE SET version = excluded.version',
        [this.name, key, Number(rows[0].version) + 1],
      );
      return true;
    }, `${this.name}/${key}`);
  }

  async flush(): Promise<void> {}

  async stats(): Promise<CollectionStats> {
    const { rows } = await this.store.query<{ keys: string; bytes: string | null }>(
      'SELECT (SELECT COUNT(*) FROM log_keys WHERE log = $1) AS keys, (SELECT SUM(pg_column_size(value)) FROM log_items WHERE log = $1) AS bytes',
      [this.name],
    );
    return { records: Number(rows[0]!.keys), files: 1, bytes: Number(rows[0]!.bytes ?? 0) };
  }
}

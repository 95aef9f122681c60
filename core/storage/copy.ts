/**
 * Moves a store's contents between the embedded SQLite file and PostgreSQL, either way
 * (`hangar store copy`). Works on the tables both stores share, so record ids, log positions and
 * log versions arrive exactly as they were (a client comparing versions sees no change).
 *
 * Idempotent and a copy, not a sync: every record of the source is written over the target's record
 * of the same id, and every log key of the source replaces the target's key of that name; what only
 * the target holds stays. Running it twice gives the same target. Each batch is one transaction, so
 * an interrupted copy leaves whole records and whole keys, and running it again completes it.
 * Counts per group (`countBy`) are not copied: the target rebuilds them from its records when the
 * collection is next opened.
 */
import type { PostgresStore } from './postgres-store.js';
import { SqliteStore } from './sqlite-store.js';

/** A record or a log key as both stores hold it: JSON text. */
interface RecordRow {
  id: string;
  value: string;
}
interface LogKeyRow {
  key: string;
  version: number;
  items: string[];
}

/** The table-level access a copy needs from one side. */
interface CopySide {
  collections(): Promise<string[]>;
  logs(): Promise<string[]>;
  countRecords(collection: string): Promise<number>;
  countKeys(log: string): Promise<number>;
  /** Records after `afterId` in id order (keyset pages, so a page costs the same at any depth). */
  records(collection: string, afterId: string, limit: number): Promise<RecordRow[]>;
  putRecords(collection: string, rows: RecordRow[]): Promise<void>;
  keys(log: string, afterKey: string, limit: number): Promise<LogKeyRow[]>;
  putKeys(log: string, keys: LogKeyRow[]): Promise<void>;
  /** Versions of deleted keys, so a key created again keeps counting upwards on the target too. */
  tombstones(log: string): Promise<Array<{ key: string; version: number }>>;
  putTombstones(log: string, rows: Array<{ key: string; version: number }>): Promise<void>;
  close(): Promise<void>;
}

function sqliteSide(store: SqliteStore): CopySide {
  const all = <R>(sql: string, ...params: Array<string | number>) => store.statement(sql).all(...params) as R[];
  return {
    collections: async () => all<{ c: string }>('SELECT DISTINCT collection AS c FROM records ORDER BY 1').map((r) => r.c),
    logs: async () => all<{ l: string }>('SELECT log AS l FROM log_keys UNION SELECT log FROM log_tombstones ORDER BY 1').map((r) => r.l),
    countRecords: async (c) => all<{ n: number }>('SELECT COUNT(*) AS n FROM records WHERE collection = ?', c)[0]!.n,
    countKeys: async (l) => all<{ n: number }>('SELECT COUNT(*) AS n FROM log_keys WHERE log = ?', l)[0]!.n,
    records: async (c, after, limit) =>
      all<RecordRow>('SELECT id, value FROM records WHERE collection = ? AND id > ? ORDER BY id LIMIT ?', c, after, limit),
    putRecords: async (c, rows) =>
      store.transaction(() => {
        store.statement('DELETE FROM record_groups WHERE collection = ?').run(c);
        const put = store.statement(
          'INSERT INTO records (collection, id, value) VALUES (?, ?, ?) ON CONFLICT (collection, id) DO UPDATE SET value = excluded.value',
        );
        for (const row of rows) put.run(c, row.id, row.value);
      }, `${c} (copying)`),
    keys: async (l, after, limit) =>
      all<{ key: string; version: number }>(
        'SELECT key, version FROM log_keys WHERE log = ? AND key > ? ORDER BY key LIMIT ?',
        l,
        after,
        limit,
      ).map((head) => ({
        ...head,
        items: all<{ value: string }>('SELECT value FROM log_items WHERE log = ? AND key = ? ORDER BY position', l, head.key).map(
          (r) => r.value,
        ),
      })),
    putKeys: async (l, keys) =>
      store.transaction(() => {
        for (const { key, version, items } of keys) {
          store.statement('DELETE FROM log_items WHERE log = ? AND key = ?').run(l, key);
          const put = store.statement('INSERT INTO log_items (log, key, position, value) VALUES (?, ?, ?, ?)');
          items.forEach((value, i) => put.run(l, key, i, value));
          store
            .statement(
              'INSERT INTO log_keys (log, key, version, length) VALUES (?, ?, ?, ?) ON CONFLICT (log, key) DO UPDATE SET version = excluded.version, length = excluded.length',
            )
            .run(l, key, version, items.length);
        }
      }, `${l} (copying)`),
    tombstones: async (l) => all<{ key: string; version: number }>('SELECT key, version FROM log_tombstones WHERE log = ?', l),
    putTombstones: async (l, rows) =>
      store.transaction(() => {
        const put = store.statement(
          'INSERT INTO log_tombstones (log, key, version) VALUES (?, ?, ?) ON CONFLICT (log, key) DO UPDATE SET version = MAX(version, excluded.version)',
        );
        for (const row of rows) put.run(l, row.key, row.version);
      }, `${l} (copying)`),
    close: async () => store.close(),
  };
}

function postgresSide(store: PostgresStore): CopySide {
  const rows = async <R extends object>(sql: string, params: unknown[] = []) =>
    (await store.query<R & Record<string, unknown>>(sql, params)).rows;
  return {
    collections: async () => (await rows<{ c: string }>('SELECT DISTINCT collection AS c FROM records ORDER BY 1')).map((r) => r.c),
    logs: async () =>
      (await rows<{ l: string }>('SELECT log AS l FROM log_keys UNION SELECT log FROM log_tombstones ORDER BY 1')).map((r) => r.l),
    countRecords: async (c) => Number((await rows<{ n: string }>('SELECT COUNT(*) AS n FROM records WHERE collection = $1', [c]))[0]!.n),
    countKeys: async (l) => Number((await rows<{ n: string }>('SELECT COUNT(*) AS n FROM log_keys WHERE log = $1', [l]))[0]!.n),
    records: async (c, after, limit) =>
      rows<RecordRow>('SELECT id, value::text AS value FROM records WHERE collection = $1 AND id > $2 ORDER BY id LIMIT $3', [
        c,
        after,
        limit,
      ]),
    putRecords: (c, batch) =>
      store.transaction(async (client) => {
        await client.query('DELETE FROM record_groups WHERE collection = $1', [c]);
        await client.query(
          `INSERT INTO records (collection, id, value) SELECT $1, r.id, r.value::jsonb FROM unnest($2::text[], $3::text[]) AS r(id, value)
           ON CONFLICT (collection, id) DO UPDATE SET value = excluded.value`,
          [c, batch.map((r) => r.id), batch.map((r) => r.value)],
        );
      }, `${c} (copying)`),
    keys: async (l, after, limit) => {
      const heads = await rows<{ key: string; version: string; items: string[] }>(
        `SELECT k.key, k.version, COALESCE((SELECT array_agg(i.value::text ORDER BY i.position) FROM log_items i WHERE i.log = k.log AND i.key = k.key), '{}') AS items
           FROM log_keys k WHERE k.log = $1 AND k.key > $2 ORDER BY k.key LIMIT $3`,
        [l, after, limit],
      );
      return heads.map((head) => ({ key: head.key, version: Number(head.version), items: head.items }));
    },
    putKeys: (l, keys) =>
      store.transaction(async (client) => {
        for (const { key, version, items } of keys) {
          await client.query('DELETE FROM log_items WHERE log = $1 AND key = $2', [l, key]);
          await client.query(
            `INSERT INTO log_items (log, key, position, value) SELECT $1, $2, item.n - 1, item.value::jsonb FROM unnest($3::text[]) WITH ORDINALITY AS item(value, n)`,
            [l, key, items],
          );
          await client.query(
            'INSERT INTO log_keys (log, key, version, length) VALUES ($1, $2, $3, $4) ON CONFLICT (log, key) DO UPDATE SET version = excluded.version, length = excluded.length',
            [l, key, version, items.length],
          );
        }
      }, `${l} (copying)`),
    tombstones: async (l) =>
      (await rows<{ key: string; version: string }>('SELECT key, version FROM log_tombstones WHERE log = $1', [l])).map((r) => ({
        key: r.key,
        version: Number(r.version),
      })),
    putTombstones: (l, batch) =>
      store.transaction(async (client) => {
        for (const row of batch) {
          await client.query(
            'INSERT INTO log_tombstones (log, key, version) VALUES ($1, $2, $3) ON CONFLICT (log, key) DO UPDATE SET version = GREATEST(log_tombstones.version, excluded.version)',
            [l, row.key, row.version],
          );
        }
      }, `${l} (copying)`),
    close: () => store.close(),
  };
}

export type CopyEndpoint = SqliteStore | PostgresStore;

/** What the copy reports as it goes: a collection or log started, a batch done, one finished. */
export type CopyProgress = (event: { kind: 'collection' | 'log'; name: string; done: number; total: number; finished: boolean }) => void;

export interface CopyCounts {
  collections: Record<string, number>;
  logs: Record<string, number>;
}

const side = (store: CopyEndpoint): CopySide => (store instanceof SqliteStore ? sqliteSide(store) : postgresSide(store));

/** Copies every collection and log of `from` into `to` (see the module comment); the counts copied. */
export async function copyStore(
  from: CopyEndpoint,
  to: CopyEndpoint,
  progress: CopyProgress = () => {},
  batchSize = 1_000,
): Promise<CopyCounts> {
  const source = side(from);
  const target = side(to);
  const counts: CopyCounts = { collections: {}, logs: {} };
  for (const name of await source.collections()) {
    const total = await source.countRecords(name);
    let done = 0;
    let after = '';
    progress({ kind: 'collection', name, done, total, finished: false });
    for (;;) {
      const batch = await source.records(name, after, batchSize);
      if (batch.length === 0) break;
      await target.putRecords(name, batch);
      done += batch.length;
      after = batch.at(-1)!.id;
      progress({ kind: 'collection', name, done, total: Math.max(total, done), finished: false });
    }
    counts.collections[name] = done;
    progress({ kind: 'collection', name, done, total: done, finished: true });
  }
  for (const name of await source.logs()) {
    const total = await source.countKeys(name);
    let done = 0;
    let after = '';
    progress({ kind: 'log', name, done, total, finished: false });
    await target.putTombstones(name, await source.tombstones(name));
    // Keys hold whole lists (a thread's messages), so fewer per batch.
    for (;;) {
      const batch = await source.keys(name, after, Math.max(1, Math.floor(batchSize / 10)));
      if (batch.length === 0) break;
      await target.putKeys(name, batch);
      done += batch.length;
      after = batch.at(-1)!.key;
      progress({ kind: 'log', name, done, total: Math.max(total, done), finished: false });
    }
    counts.logs[name] = done;
    progress({ kind: 'log', name, done, total: done, finished: true });
  }
  return counts;
}

/**
 * Moves a store's contents between the embedded SQLite file and PostgreSQL, either way
 * (`hangar store copy`). Works on the tables both stores share, so record ids, log positions and
 * log versions arrive exactly as they were (a client comparing versions sees no change).
 *
 * Idempotent and a copy, not a sync: every record of the source is written over the target's record
 * of the same id, and every log key of the source replaces the target's key of that name; what only
 * the target holds stays. Running it twice gives the same target. Each batch is one transaction, so
 * an interrupted copy leaves whole records and whole keys, and running it again completes it.
 * The invocation log's rows are copied by id: a row the target already holds (the same call) stays.
 * Counts per group (`countBy`) are not copied: the target rebuilds them from its records when the
 * collection is next opened.
 */
import type { InvocationRow } from '../kernel/store.js';
import type { PostgresStore } from './postgres-store.js';
import { deleteItems, headOf, itemRows, itemText, writeHead, writeItems } from './sqlite-logs.js';
import { SqliteStore } from './sqlite-store.js';

/** A record or a log key as both stores hold it: JSON text. */
interface RecordRow {
  id: string;
  value: string;
}
interface LogKeyRow {
  key: string;
  version: number;
  /** When the key last changed (epoch ms), null when unknown. */
  changed: number | null;
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
  /** The invocation log's rows (the table may not exist yet: none). */
  countInvocations(): Promise<number>;
  /** Rows after `afterSeq` in insertion order, with their `seq` (keyset pages). */
  invocations(afterSeq: number, limit: number): Promise<Array<{ seq: number; row: InvocationRow }>>;
  /** Rows the target already holds (same id) are kept as they are: a record of a call never changes. */
  putInvocations(rows: InvocationRow[]): Promise<void>;
  close(): Promise<void>;
}

const INVOCATION_COLUMNS = 'seq, id, started, resource, name, operation, principal, status, http_status, duration_ms, error';

/** A row as either store returns it (PostgreSQL's BIGINTs as text, its JSONB as text here). */
function invocationRow(r: Record<string, unknown>): { seq: number; row: InvocationRow } {
  return {
    seq: Number(r.seq),
    row: {
      id: r.id as string,
      started: Number(r.started),
      resource: r.resource as string,
      name: r.name as string,
      operation: r.operation as string,
      principal: r.principal as string,
      status: r.status as string,
      http_status: r.http_status === null ? null : Number(r.http_status),
      duration_ms: Number(r.duration_ms),
      error: (r.error as string | null) ?? null,
      value: JSON.parse(r.value as string) as unknown,
    },
  };
}

function sqliteSide(store: SqliteStore): CopySide {
  const all = <R>(sql: string, ...params: Array<string | number>) => store.statement(sql).all(...params) as R[];
  // The invocation table is made on its first use; a store that never logged a call has none.
  const hasInvocations = () => all("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'invocations'").length > 0;
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
      all<{ id: number; key: string; version: number; changed: number | null }>(
        'SELECT id, key, version, changed FROM log_keys WHERE log = ? AND key > ? ORDER BY key LIMIT ?',
        l,
        after,
        limit,
      ).map((head) => ({
        key: head.key,
        version: head.version,
        changed: head.changed,
        items: itemRows(store, head.id).map((row) => itemText(store, row)),
      })),
    putKeys: async (l, keys) =>
      store.transaction(() => {
        for (const { key, version, changed, items } of keys) {
          const head = headOf(store, l, key, `${l} (copying)`);
          deleteItems(store, head.id);
          writeItems(store, head.id, 0, items, `${l} (copying)`);
          writeHead(store, head.id, version, items.length, changed);
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
    countInvocations: async () => (hasInvocations() ? all<{ n: number }>('SELECT COUNT(*) AS n FROM invocations')[0]!.n : 0),
    invocations: async (after, limit) =>
      hasInvocations()
        ? all<Record<string, unknown>>(
            `SELECT ${INVOCATION_COLUMNS}, value FROM invocations WHERE seq > ? ORDER BY seq LIMIT ?`,
            after,
            limit,
          ).map(invocationRow)
        : [],
    putInvocations: (rows) => store.invocations().insert(rows),
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
      const heads = await rows<{ key: string; version: string; changed: string | null; items: string[] }>(
        `SELECT k.key, k.version, k.changed, COALESCE((SELECT array_agg(i.value::text ORDER BY i.position) FROM log_items i WHERE i.log = k.log AND i.key = k.key), '{}') AS items
           FROM log_keys k WHERE k.log = $1 AND k.key > $2 ORDER BY k.key LIMIT $3`,
        [l, after, limit],
      );
      return heads.map((head) => ({
        key: head.key,
        version: Number(head.version),
        changed: head.changed === null ? null : Number(head.changed),
        items: head.items,
      }));
    },
    putKeys: (l, keys) =>
      store.transaction(async (client) => {
        for (const { key, version, changed, items } of keys) {
          await client.query('DELETE FROM log_items WHERE log = $1 AND key = $2', [l, key]);
          await client.query(
            `INSERT INTO log_items (log, key, position, value) SELECT $1, $2, item.n - 1, item.value::jsonb FROM unnest($3::text[]) WITH ORDINALITY AS item(value, n)`,
            [l, key, items],
          );
          await client.query(
            `INSERT INTO log_keys (log, key, version, length, changed) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (log, key) DO UPDATE SET version = excluded.version, length = excluded.length, changed = excluded.changed`,
            [l, key, version, items.length, changed],
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
    countInvocations: async () => Number((await rows<{ n: string }>('SELECT COUNT(*) AS n FROM invocations'))[0]!.n),
    invocations: async (after, limit) =>
      (
        await rows<Record<string, unknown>>(
          `SELECT ${INVOCATION_COLUMNS}, value::text AS value FROM invocations WHERE seq > $1 ORDER BY seq LIMIT $2`,
          [after, limit],
        )
      ).map(invocationRow),
    putInvocations: (batch) => store.invocations().insert(batch),
    close: () => store.close(),
  };
}

export type CopyEndpoint = SqliteStore | PostgresStore;

/** What the copy reports as it goes: a collection or log started, a batch done, one finished. */
export type CopyProgress = (event: {
  kind: 'collection' | 'log' | 'table';
  name: string;
  done: number;
  total: number;
  finished: boolean;
}) => void;

export interface CopyCounts {
  collections: Record<string, number>;
  logs: Record<string, number>;
  /** The store's own tables: the invocation log's rows. */
  tables: { invocations: number };
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
  const counts: CopyCounts = { collections: {}, logs: {}, tables: { invocations: 0 } };
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
  // The invocation log, in its insertion order (ties of a start time stay in order on the target).
  const total = await source.countInvocations();
  if (total > 0) {
    let done = 0;
    let after = 0;
    progress({ kind: 'table', name: 'invocations', done, total, finished: false });
    for (;;) {
      const batch = await source.invocations(after, batchSize);
      if (batch.length === 0) break;
      await target.putInvocations(batch.map((b) => b.row));
      done += batch.length;
      after = batch.at(-1)!.seq;
      progress({ kind: 'table', name: 'invocations', done, total: Math.max(total, done), finished: false });
    }
    counts.tables.invocations = done;
    progress({ kind: 'table', name: 'invocations', done, total: done, finished: true });
  }
  return counts;
}

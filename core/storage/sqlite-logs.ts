import { fail } from '../kernel/errors.js';
import type { CollectionStats, KeyedLog, LogEntry } from '../kernel/store.js';
import { encode, runner, type SqlAccess } from './sqlite-sql.js';
import { type StoreStatements, storeStatements } from './store-sql.js';

/** The statements every keyed log shares (the query layer's, compiled once for SQLite). */
const STATEMENTS: StoreStatements = storeStatements('sqlite');

/**
 * An item's row id is its key's number × KEY_SPAN + its position, so a key's items are one range
 * of the table's own b-tree: no log name or key text repeated per row, no second index, and an
 * append at the end of the newest key fills pages whole (SQLite splits a rowid table's last page
 * by starting a new one). 2^28 positions per key; key numbers up to 2^25 keep every row id a
 * safe JavaScript integer.
 */
export const KEY_SPAN = 2 ** 28;
const MAX_KEY = 2 ** 25;

/**
 * How an object item is kept: its values as a JSON array, its keys once per shape (`log_shapes`),
 * and an ISO time that round-trips through `Date` as its milliseconds. A chat message
 * `{"role":…,"content":…,"timestamp":…}` loses 29 bytes of key names and 13 of time. Reads give the
 * object back as it was written (same keys, same order, same values); anything else — arrays,
 * scalars, an object with a `__proto__` key — is kept as its JSON text (shape NULL).
 */
interface Shape {
  keys: string[];
  times: Set<number>;
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const MAX_SHAPE_KEYS = 64;

/** Shapes by id: ids are never reused or changed, so a cache per database is always right. */
const shapeCache = new WeakMap<SqlAccess, Map<number, Shape>>();

/** An item as stored: its shape's text (undefined: JSON text as is) and its value text. */
export function packItem(text: string): { shape?: string; value: string } {
  if (text.charCodeAt(0) !== 123 /* { */) return { value: text };
  const object = JSON.parse(text) as Record<string, unknown>;
  const keys = Object.keys(object);
  if (keys.length === 0 || keys.length > MAX_SHAPE_KEYS || keys.includes('__proto__')) return { value: text };
  const times: number[] = [];
  const values = keys.map((key, i) => {
    const value = object[key];
    // Stryker disable next-line ConditionalExpression,LogicalOperator: no JSON value but a string matches ISO (a number's text has no dashes), so the type test only saves the regex
    if (typeof value === 'string' && ISO.test(value)) {
      const ms = Date.parse(value);
      if (Number.isFinite(ms) && new Date(ms).toISOString() === value) {
        times.push(i);
        return ms;
      }
    }
    return value;
  });
  return { shape: JSON.stringify(times.length ? [keys, times] : [keys]), value: JSON.stringify(values) };
}

function unpackItem(shape: Shape | undefined, value: string): unknown {
  if (!shape) return JSON.parse(value);
  const values = JSON.parse(value) as unknown[];
  const object: Record<string, unknown> = {};
  shape.keys.forEach((key, i) => {
    object[key] = shape.times.has(i) ? new Date(values[i] as number).toISOString() : values[i];
  });
  return object;
}

/** The item as JSON text, exactly as it was written (for a copy to another store). */
export function itemText(store: SqlAccess, row: { shape: number | null; value: string }): string {
  // Stryker disable next-line ConditionalExpression: a row without a shape holds JSON.stringify's text, which parsing and writing again gives back unchanged
  return row.shape === null ? row.value : JSON.stringify(unpackItem(shapeOf(store, row.shape), row.value));
}

function shapeOf(store: SqlAccess, id: number | null): Shape | undefined {
  if (id === null) return undefined;
  let cache = shapeCache.get(store);
  if (!cache) shapeCache.set(store, (cache = new Map()));
  let shape = cache.get(id);
  if (!shape) {
    const row = store.statement('SELECT shape FROM log_shapes WHERE id = ?').get(id) as { shape: string } | undefined;
    if (!row) throw new Error(`log item shape ${id} is missing from the store`);
    // Stryker disable next-line ArrayDeclaration: positions are numbers, so anything else in the default is never asked for
    const [keys, times = []] = JSON.parse(row.shape) as [string[], number[]?];
    cache.set(id, (shape = { keys, times: new Set(times) }));
  }
  return shape;
}

/** Inside a write transaction: the id of a shape, added when new. */
function shapeId(store: SqlAccess, shape: string): number {
  const found = store.statement('SELECT id FROM log_shapes WHERE shape = ?').get(shape) as { id: number } | undefined;
  if (found) return found.id;
  return Number(store.statement('INSERT INTO log_shapes (shape) VALUES (?)').run(shape).lastInsertRowid);
}

/** Inside a write transaction: writes items (JSON texts) at `from`, `from + 1`, … of key number `id`. */
export function writeItems(store: SqlAccess, id: number, from: number, texts: readonly string[], what: string): void {
  if (from + texts.length > KEY_SPAN)
    throw fail('HANGAR_STORAGE_WRITE_FAILED', { what, reason: `a key holds at most ${KEY_SPAN.toLocaleString('en')} items` });
  const run = runner(store);
  texts.forEach((text, i) => {
    const { shape, value } = packItem(text);
    run.run(STATEMENTS.appendItem(id * KEY_SPAN + from + i, shape === undefined ? null : shapeId(store, shape), value));
  });
}

/** The stored rows of key number `id`, positions `from` … `to - 1`. */
export function itemRows(store: SqlAccess, id: number, from = 0, to = KEY_SPAN): Array<{ shape: number | null; value: string }> {
  return runner(store).all(STATEMENTS.logRange(id * KEY_SPAN + from, id * KEY_SPAN + to));
}

/** Inside a write transaction: key `key`'s head, made (with no items yet) when it has none. */
export function headOf(
  store: SqlAccess,
  log: string,
  key: string,
  what: string,
): { id: number; version: number; length: number; created: boolean } {
  const run = runner(store);
  const head = run.get<{ id: number; version: number; length: number }>(STATEMENTS.logHead(log, key));
  if (head) return { ...head, created: false };
  const version = run.get<{ version: number }>(STATEMENTS.logTombstone(log, key))?.version ?? 0;
  const id = Number(run.run(STATEMENTS.createHead(log, key, version)).lastInsertRowid);
  if (id >= MAX_KEY) throw fail('HANGAR_STORAGE_WRITE_FAILED', { what, reason: `the store holds at most ${MAX_KEY} keyed lists` });
  return { id, version, length: 0, created: true };
}

/** Inside a write transaction: key number `id`'s head after a change (`changed`: epoch ms, null when unknown). */
export function writeHead(store: SqlAccess, id: number, version: number, length: number, changed: number | null): void {
  runner(store).run(STATEMENTS.writeHead(id, version, length, changed));
}

/** Inside a write transaction: deletes the items of key number `id`. */
export function deleteItems(store: SqlAccess, id: number): void {
  runner(store).run(STATEMENTS.deleteItems(id * KEY_SPAN, (id + 1) * KEY_SPAN));
}

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

  private head(key: string): { id: number; version: number; length: number } | undefined {
    return this.sql.get<{ id: number; version: number; length: number }>(STATEMENTS.logHead(this.name, key));
  }

  private items(id: number, from?: number, to?: number): T[] {
    return itemRows(this.store, id, from, to).map((row) => unpackItem(shapeOf(this.store, row.shape), row.value) as T);
  }

  async get(key: string): Promise<LogEntry<T> | undefined> {
    const head = this.head(key);
    if (!head) return undefined;
    return { items: this.items(head.id), version: head.version };
  }

  async range(key: string, offset: number, limit: number): Promise<{ items: T[]; total: number }> {
    const head = this.head(key);
    const total = head?.length ?? 0;
    const start = offset < 0 ? Math.max(0, total + offset) : offset;
    // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator: each test is a shortcut: a missing key's total is 0, and positions start … min(total, start + limit) hold nothing whenever one applies
    if (!head || limit <= 0 || start >= total) return { items: [], total };
    return { items: this.items(head.id, start, Math.min(total, start + limit)), total };
  }

  async keys(): Promise<string[]> {
    return this.sql.all<{ key: string }>(STATEMENTS.logKeys(this.name)).map((row) => row.key);
  }

  async append(key: string, items: T[]): Promise<{ length: number; version: number }> {
    const texts = items.map(encode);
    const what = `${this.name}/${key}`;
    return this.store.transaction(() => {
      const head = headOf(this.store, this.name, key, what);
      writeItems(this.store, head.id, head.length, texts, what);
      const next = { length: head.length + texts.length, version: head.version + 1 };
      writeHead(this.store, head.id, next.version, next.length, Date.now());
      return next;
    }, what);
  }

  async set(key: string, items: T[]): Promise<LogEntry<T>> {
    const texts = items.map(encode);
    const what = `${this.name}/${key}`;
    const version = this.store.transaction(() => {
      const head = headOf(this.store, this.name, key, what);
      deleteItems(this.store, head.id);
      writeItems(this.store, head.id, 0, texts, what);
      writeHead(this.store, head.id, head.version + 1, texts.length, Date.now());
      return head.version + 1;
    }, what);
    return { items: [...items], version };
  }

  async changedAt(keys: readonly string[]): Promise<Map<string, number>> {
    // One statement for any number of keys: the list goes in as one JSON array parameter.
    const rows = this.store
      .statement('SELECT key, changed FROM log_keys WHERE log = ? AND key IN (SELECT value FROM json_each(?)) AND changed IS NOT NULL')
      .all(this.name, JSON.stringify(keys)) as Array<{ key: string; changed: number }>;
    return new Map(rows.map((row) => [row.key, row.changed]));
  }

  async delete(key: string): Promise<boolean> {
    return this.store.transaction(() => {
      const head = this.head(key);
      if (!head) return false;
      deleteItems(this.store, head.id);
      this.sql.run(STATEMENTS.deleteHead(head.id));
      // A key created again keeps counting upwards, as readers compare versions.
      this.sql.run(STATEMENTS.writeTombstone(this.name, key, head.version + 1));
      return true;
    }, `${this.name}/${key}`);
  }

  async flush(): Promise<void> {}

  async stats(): Promise<CollectionStats> {
    const row = this.store
      .statement(
        'SELECT COUNT(*) AS n, (SELECT SUM(LENGTH(i.value)) FROM log_keys k JOIN log_items i ON i.item >= k.id * ?1 AND i.item < (k.id + 1) * ?1 WHERE k.log = ?2) AS b FROM log_keys WHERE log = ?2',
      )
      .get(KEY_SPAN, this.name) as { n: number; b: number | null };
    return { records: row.n, files: 1, bytes: row.b ?? 0 };
  }
}

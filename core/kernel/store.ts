/**
 * The store interface every subsystem persists through. Records are JSON values keyed by id inside
 * named collections. Reads are served from memory; a mutation resolves only once it is on disk
 * (a write is durable before a response says it happened).
 *
 * Ordering: `list()` returns records grouped by shard, not in global insertion order — callers that
 * need an order sort by their own timestamp or sequence field.
 */
export interface Collection<T> {
  readonly name: string;
  get(id: string): Promise<T | undefined>;
  has(id: string): Promise<boolean>;
  /** Insert or replace. */
  put(id: string, value: T): Promise<T>;
  /**
   * Atomic read-modify-write of one record: `fn` sees the current value and returns the next one
   * (`undefined` deletes). No other mutation of the collection interleaves with `fn`.
   */
  update(id: string, fn: (current: T | undefined) => T | undefined): Promise<T | undefined>;
  delete(id: string): Promise<boolean>;
  /** Delete every record for which `predicate` is true; returns how many went. */
  deleteWhere(predicate: (value: T, id: string) => boolean): Promise<number>;
  list(): Promise<T[]>;
  entries(): Promise<Array<[string, T]>>;
  count(): Promise<number>;
  /**
   * One page of the records matching `where`, in `orderBy` order (ties by id, in the direction of
   * the last key), and how many match in all. Served from an index when the collection declared
   * one for those fields (`CollectionOptions.indexes`), so a page costs the same at 100 or 100,000.
   */
  query(query: RecordQuery): Promise<{ items: T[]; total: number }>;
}

/** A scalar a record's top-level field is compared with. */
export type FieldValue = string | number | boolean;

export interface RecordQuery {
  /** Top-level field → value (equal) or values (any of). */
  where?: Record<string, FieldValue | readonly FieldValue[]>;
  orderBy?: ReadonlyArray<{ field: string; desc?: boolean }>;
  limit?: number;
  offset?: number;
}

export interface CollectionOptions {
  /**
   * How many files the collection is split into (by a hash of the id). One write rewrites one shard,
   * so large collections (threads, messages, task events) should use many. Fixed per collection:
   * changing it for an existing collection on disk is refused at open.
   */
  shards?: number;
  /**
   * Top-level fields queried together, most selective first, ending with the sort field (e.g.
   * `['status', 'created_at']`). The SQLite store builds an index for each; lowdb ignores them.
   */
  indexes?: ReadonlyArray<readonly string[]>;
  /**
   * Top-level fields whose combinations the SQLite store counts as records change (in the same
   * transaction), so the `total` of a query filtering only on them is a sum over the distinct
   * combinations — a handful — instead of a count of every matching record.
   */
  countBy?: readonly string[];
}

export interface CollectionStats {
  records: number;
  files: number;
  bytes: number;
}

export interface StoreStats {
  backend: string;
  path: string;
  files: number;
  bytes: number;
  collections: Record<string, CollectionStats>;
}

export interface LogEntry<T> {
  items: T[];
  /** Bumped by every change of this key. */
  version: number;
}

/** Keyed lists (a thread's messages): appends cost the same however much a key or the log holds. */
export interface KeyedLog<T> {
  readonly name: string;
  get(key: string): Promise<LogEntry<T> | undefined>;
  keys(): Promise<string[]>;
  /**
   * Items `offset` … `offset + limit - 1` of the key's list (a negative offset counts from the end,
   * so `range(k, -100, 100)` is the newest 100) and the list's whole length, without reading the rest.
   */
  range(key: string, offset: number, limit: number): Promise<{ items: T[]; total: number }>;
  /**
   * Add items at the end of the key's list; resolves with its new length and version (not the list:
   * an append must not read what the key already holds).
   */
  append(key: string, items: T[]): Promise<{ length: number; version: number }>;
  /** Replace the key's list (clear, fork). */
  set(key: string, items: T[]): Promise<LogEntry<T>>;
  /**
   * When each of `keys` last changed by an append or a set (epoch milliseconds), read from the
   * keys' heads in one query. A key that holds no list, or last changed before stores kept the
   * time, is absent. A thread's `updated_at` comes from here, so an append rewrites no record.
   */
  changedAt(keys: readonly string[]): Promise<Map<string, number>>;
  delete(key: string): Promise<boolean>;
  flush(): Promise<void>;
  stats(): Promise<CollectionStats>;
}

/**
 * A row of the invocation log (core/logs): the fields its lists filter and its analyses read, as
 * columns with indexes, and the whole record as JSON.
 */
export interface InvocationRow {
  id: string;
  /** Epoch milliseconds the call started (lists are newest first by it). */
  started: number;
  resource: string;
  name: string;
  operation: string;
  principal: string;
  status: string;
  http_status: number | null;
  duration_ms: number;
  error: string | null;
  /** The whole record. */
  value: unknown;
}

/** What a list of the invocation log filters on; every field optional, times in epoch ms (inclusive). */
export interface InvocationFilter {
  resource?: string;
  name?: string;
  operation?: string;
  principal?: string;
  status?: string;
  http_status?: number;
  since?: number;
  until?: number;
}

/** The columns of a row, without its record: what an analysis of a window reads. */
export type InvocationSummary = Omit<InvocationRow, 'value'>;

/** The invocation log's own table: written in batches, read by index (who, what, when). */
export interface InvocationTable {
  /** One transaction for the whole batch; a row whose id is stored already is skipped, so an import run twice adds nothing. */
  insert(rows: readonly InvocationRow[]): Promise<void>;
  /** A page of records matching `filter`, newest first (ties in insertion order, newest first), and how many match. */
  page(filter: InvocationFilter, limit: number, offset: number): Promise<{ items: unknown[]; total: number }>;
  get(id: string): Promise<unknown | undefined>;
  /** The columns of every row matching `filter`, oldest first. */
  summaries(filter: InvocationFilter): Promise<InvocationSummary[]>;
  count(): Promise<number>;
  /** Drops all but the newest `keep` rows; how many went. */
  prune(keep: number): Promise<number>;
}

export interface Store {
  collection<T>(name: string, options?: CollectionOptions): Collection<T>;
  /** A keyed append-only log: appends cost the same however much it holds. */
  appendLog<T>(name: string): KeyedLog<T>;
  /** The invocation log's table (core/logs). */
  invocations(): InvocationTable;
  stats(): Promise<StoreStats>;
  /** Resolves when every pending write is on disk. */
  flush(): Promise<void>;
  /** Whether writes succeed right now (the last failure, until one succeeds again). */
  health(): { ok: true } | { ok: false; detail: string };
  /** What the store is, and a damaged file it moved aside at start, if any (status view, /api/v1/status). */
  describe(): StoreDescription;
}

export interface StoreDescription {
  backend: string;
  path: string;
  recovered?: { moved_to: string; problem: string };
}

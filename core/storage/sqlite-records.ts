/**
 * A collection of the SQLite store: one row per record in the shared `records` table, JSON in
 * `value`, queried with `json_extract` (indexed per collection by the store). A collection that
 * names `countBy` fields keeps a count per combination of their values in `record_groups`, in the
 * same transaction as each write, so a filtered list's total is a sum over a few groups.
 */
import type { Collection, FieldValue, RecordQuery } from '../kernel/store.js';
import { checkFields, orderRecords as mergeOrdered } from './query.js';
import { encode, runner, type SqlAccess } from './sqlite-sql.js';
import { RecordQueries, type StoreStatements, storeStatements } from './store-sql.js';

/** The statements every SQLite collection shares (compiled once, on first use). */
const STATEMENTS: StoreStatements = storeStatements('sqlite');

/** The marker row that records which fields a collection's groups count. */
const SPEC = '#fields';

export class SqliteCollection<T> implements Collection<T> {
  /** `json_array(json_extract(value, '$.f1'), …)`: a record's group, computed by SQLite both ways. */
  private readonly groupOf: string | undefined;
  private readonly sql: ReturnType<typeof runner>;
  private readonly queries: RecordQueries;

  constructor(
    private readonly store: SqlAccess,
    readonly name: string,
    private readonly countBy?: readonly string[],
  ) {
    this.sql = runner(store);
    this.queries = new RecordQueries('sqlite', name);
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
        .statement(
          `INSERT INTO record_groups (collection, grp, n) SELECT collection, ${this.groupOf}, COUNT(*) FROM records WHERE collection = ? GROUP BY 2`,
        )
        .run(this.name);
      this.store.statement('INSERT INTO record_groups (collection, grp, n) VALUES (?, ?, 0)').run(this.name, `${SPEC}${spec}`);
    }, `the counts of ${this.name}`);
  }

  /** Inside a write transaction: the record `id` leaves its group (if it exists). */
  private leaveGroup(id: string): void {
    if (!this.groupOf) return;
    const row = this.store.statement(`SELECT ${this.groupOf} AS grp FROM records WHERE collection = ? AND id = ?`).get(this.name, id) as
      | { grp: string }
      | undefined;
    if (!row) return;
    this.store.statement('UPDATE record_groups SET n = n - 1 WHERE collection = ? AND grp = ?').run(this.name, row.grp);
    this.store.statement('DELETE FROM record_groups WHERE collection = ? AND grp = ? AND n <= 0').run(this.name, row.grp);
  }

  /** Inside a write transaction: a record with this JSON text joins its group. */
  private joinGroup(text: string): void {
    if (!this.groupOf) return;
    const { grp } = this.store.statement(`SELECT ${this.groupOf} AS grp FROM (SELECT ? AS value)`).get(text) as { grp: string };
    this.store
      .statement('INSERT INTO record_groups (collection, grp, n) VALUES (?, ?, 1) ON CONFLICT (collection, grp) DO UPDATE SET n = n + 1')
      .run(this.name, grp);
  }

  private write(id: string, text: string): void {
    this.leaveGroup(id);
    this.sql.run(STATEMENTS.putRecord(this.name, id, text));
    this.joinGroup(text);
  }

  private remove(id: string): boolean {
    this.leaveGroup(id);
    return Number(this.sql.run(STATEMENTS.deleteRecord(this.name, id)).changes) > 0;
  }

  /** The total of a query whose filter names only counted fields: a sum over groups, not a count of records. */
  private totalFromGroups(where: Record<string, unknown>): number | undefined {
    if (!this.countBy || !Object.keys(where).every((field) => this.countBy!.includes(field))) return undefined;
    const rows = this.store
      .statement("SELECT grp, n FROM record_groups WHERE collection = ? AND grp NOT LIKE '#%'")
      .all(this.name) as Array<{ grp: string; n: number }>;
    const wanted = Object.entries(where).map(
      ([field, value]) => [this.countBy!.indexOf(field), Array.isArray(value) ? value : [value]] as const,
    );
    let total = 0;
    for (const row of rows) {
      const values = JSON.parse(row.grp) as unknown[];
      if (wanted.every(([i, accepted]) => accepted.some((v) => (typeof v === 'boolean' ? Number(v) : v) === values[i]))) total += row.n;
    }
    return total;
  }

  async get(id: string): Promise<T | undefined> {
    const row = this.sql.get<{ value: string }>(STATEMENTS.getRecord(this.name, id));
    return row ? (JSON.parse(row.value) as T) : undefined;
  }

  async has(id: string): Promise<boolean> {
    return this.sql.get(STATEMENTS.hasRecord(this.name, id)) !== undefined;
  }

  async put(id: string, value: T): Promise<T> {
    const text = encode(value);
    this.store.transaction(() => this.write(id, text), `${this.name}/${id}`);
    return value;
  }

  async update(id: string, fn: (current: T | undefined) => T | undefined): Promise<T | undefined> {
    return this.store.transaction(() => {
      const row = this.sql.get<{ value: string }>(STATEMENTS.getRecord(this.name, id));
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
      const doomed = this.sql
        .all<{ id: string; value: string }>(STATEMENTS.allRecords(this.name))
        .filter((row) => predicate(JSON.parse(row.value) as T, row.id))
        .map((row) => row.id);
      for (const id of doomed) this.remove(id);
      return doomed.length;
    }, `${this.name} (deleting matching records)`);
  }

  async entries(): Promise<Array<[string, T]>> {
    const rows = this.sql.all<{ id: string; value: string }>(STATEMENTS.allRecords(this.name));
    return rows.map((row) => [row.id, JSON.parse(row.value) as T]);
  }

  async list(): Promise<T[]> {
    return (await this.entries()).map(([, value]) => value);
  }

  async count(): Promise<number> {
    return this.sql.get<{ n: number }>(STATEMENTS.countRecords(this.name))!.n;
  }

  /** The semantics of query.ts's queryInMemory, in SQL (the contract tests hold both to it). */
  async query(query: RecordQuery): Promise<{ items: T[]; total: number }> {
    const compiled = this.queries.compile(query);
    if (!compiled) return { items: [], total: 0 };
    const total = this.totalFromGroups(query.where ?? {}) ?? this.sql.get<{ n: number }>(compiled.count)!.n;
    if (query.limit === 0) return { items: [], total };
    const split = this.splitByValue(query);
    if (split) return { items: split, total };
    const rows = this.sql.all<{ value: string }>(compiled.page);
    return { items: rows.map((row) => JSON.parse(row.value) as T), total };
  }

  /**
   * A page ordered by a field and filtered by several values of another (tasks of three statuses,
   * newest first): SQLite cannot merge an index's ranges in order, so it would sort every matching
   * record. One ordered read per value, each at most `offset + limit` rows, merged here, reads only
   * what the page needs. Undefined when the query is not of that kind.
   */
  private splitByValue(query: RecordQuery): T[] | undefined {
    const order = query.orderBy ?? [];
    const where = query.where ?? {};
    const field = Object.keys(where).find((f) => Array.isArray(where[f]) && (where[f] as unknown[]).length > 1);
    if (!field || order.length === 0 || query.limit === undefined) return undefined;
    const end = (query.offset ?? 0) + query.limit;
    const rows: Array<{ id: string; value: T }> = [];
    for (const one of new Set(where[field] as FieldValue[])) {
      const compiled = this.queries.compile({ ...query, where: { ...where, [field]: one }, limit: end, offset: 0 })!;
      for (const row of this.sql.all<{ id: string; value: string }>(compiled.page))
        rows.push({ id: row.id, value: JSON.parse(row.value) as T });
    }
    return mergeOrdered(rows, order)
      .slice(query.offset ?? 0, end)
      .map((row) => row.value);
  }

  /**
   * SQLite's plan for a query's page (`EXPLAIN QUERY PLAN`, one line per step): how a test or a
   * person checks that a list is served from an index rather than a scan and a sort.
   */
  explain(query: RecordQuery): string[] {
    const compiled = this.queries.compile(query);
    if (!compiled) return [];
    const rows = this.sql.all<{ detail: string }>({ sql: `EXPLAIN QUERY PLAN ${compiled.page.sql}`, parameters: compiled.page.parameters });
    return rows.map((row) => row.detail);
  }
}

/**
 * A collection of the SQLite store: one row per record in the shared `records` table, JSON in
 * `value`, queried with `json_extract` (indexed per collection by the store). A collection that
 * names `countBy` fields keeps a count per combination of their values in `record_groups`, in the
 * same transaction as each write, so a filtered list's total is a sum over a few groups.
 */
import type { Collection, FieldValue, RecordQuery } from '../kernel/store.js';
import { checkFields, orderRecords as mergeOrdered } from './query.js';
import { encode, runner, type SqlAccess } from './sqlite-sql.js';
import { groupMarker, groupOf, groupStatements, RecordQueries, type StoreStatements, storeStatements, totalOfGroups } from './store-sql.js';

/** The statements every SQLite collection shares (compiled once, on first use). */
const STATEMENTS: StoreStatements = storeStatements('sqlite');
const GROUPS = groupStatements('sqlite');

export class SqliteCollection<T> implements Collection<T> {
  private readonly sql: ReturnType<typeof runner>;
  private readonly queries: RecordQueries;
  /** The statement reading the counted fields of a record (`previous`), when the collection counts groups. */
  private readonly countedFields: string | undefined;

  constructor(
    private readonly store: SqlAccess,
    readonly name: string,
    private readonly countBy?: readonly string[],
    /** Creates the indexes the store deferred while the collection was empty (before a write's transaction). */
    private readonly beforeWrite: () => void = () => {},
  ) {
    this.sql = runner(store);
    this.queries = new RecordQueries('sqlite', name);
    if (countBy) checkFields({ orderBy: countBy.map((field) => ({ field })) });
    this.countedFields =
      countBy &&
      `SELECT json_array(${countBy.map((field) => `json(value -> '$.${field}')`).join(', ')}) AS counted FROM records WHERE collection = ? AND id = ?`;
  }

  /**
   * Counts kept by something else than this code (the lowdb import, a copy, another field list, an
   * older spelling of the groups) are rebuilt from the records once; from then on every write keeps
   * them in its own transaction. The groups are the query layer's (store-sql.ts), as PostgreSQL's.
   */
  ensureGroups(): void {
    const fields = this.countBy!;
    const marker = groupMarker(fields);
    if (this.sql.get(GROUPS.find(this.name, marker))) return;
    this.store.transaction(() => {
      const counts = new Map<string, number>();
      for (const row of this.sql.all<{ value: string }>(STATEMENTS.allRecords(this.name))) {
        const grp = groupOf(fields, JSON.parse(row.value));
        counts.set(grp, (counts.get(grp) ?? 0) + 1);
      }
      this.sql.run(GROUPS.clear(this.name));
      for (const [grp, n] of counts) this.sql.run(GROUPS.add(this.name, grp, n));
      this.sql.run(GROUPS.add(this.name, marker, 0));
    }, `the counts of ${this.name}`);
  }

  /** Inside a write transaction: a record moves from one group to another (undefined: none). */
  private moveGroup(previous: unknown, next: unknown): void {
    if (!this.countBy) return;
    const from = previous === undefined ? undefined : groupOf(this.countBy, previous);
    const to = next === undefined ? undefined : groupOf(this.countBy, next);
    // Stryker disable next-line ConditionalExpression: leaving a group and entering it again ends at the same count (a group emptied on the way is made again)
    if (from === to) return;
    if (from !== undefined) {
      this.sql.run(GROUPS.leave(this.name, from));
      this.sql.run(GROUPS.dropEmpty(this.name, from));
    }
    if (to !== undefined) this.sql.run(GROUPS.add(this.name, to, 1));
  }

  /**
   * Inside a write transaction: the counted fields of the stored value of `id` (all the groups
   * need), when the collection counts groups. Only those fields are read: a task's record holds its
   * whole input, and parsing a 1 MB record here to learn its status took 7-20 ms of every write.
   * `json(value -> '$.f')` is the field as JSON (an object stays an object, true stays true), NULL
   * when absent; as an element of `json_array` it reads back as the record's own value would.
   */
  private previous(id: string): unknown {
    // Stryker disable next-line ConditionalExpression: without countBy, moveGroup ignores the value read
    if (!this.countedFields) return undefined;
    const row = this.store.statement(this.countedFields).get(this.name, id) as { counted: string } | undefined;
    if (!row) return undefined;
    const values = JSON.parse(row.counted) as unknown[];
    return Object.fromEntries(this.countBy!.map((field, i) => [field, values[i]]));
  }

  private write(id: string, value: unknown, text: string, previous = this.previous(id)): void {
    this.sql.run(STATEMENTS.putRecord(this.name, id, text));
    this.moveGroup(previous, value);
  }

  private remove(id: string, previous = this.previous(id)): boolean {
    const removed = Number(this.sql.run(STATEMENTS.deleteRecord(this.name, id)).changes) > 0;
    // Stryker disable next-line ConditionalExpression: nothing removed means no previous value, and a move from no group to none does nothing
    if (removed) this.moveGroup(previous, undefined);
    return removed;
  }

  /** The total of a query whose filter names only counted fields: a sum over groups, not a count of records. */
  private totalFromGroups(where: Record<string, FieldValue | readonly FieldValue[]>): number | undefined {
    const countBy = this.countBy;
    if (!countBy || !Object.keys(where).every((field) => countBy.includes(field))) return undefined;
    return totalOfGroups(countBy, this.sql.all<{ grp: string; n: number }>(GROUPS.all(this.name)), where);
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
    this.beforeWrite();
    this.store.transaction(() => this.write(id, value, text), `${this.name}/${id}`);
    return value;
  }

  async update(id: string, fn: (current: T | undefined) => T | undefined): Promise<T | undefined> {
    this.beforeWrite();
    return this.store.transaction(() => {
      const row = this.sql.get<{ value: string }>(STATEMENTS.getRecord(this.name, id));
      const current = row ? (JSON.parse(row.value) as T) : undefined;
      const next = fn(current);
      if (next === undefined) {
        // Stryker disable next-line ConditionalExpression: removing an id that is not there changes nothing
        if (row) this.remove(id, current);
      } else this.write(id, next, encode(next), current);
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
        .map((row) => ({ id: row.id, value: JSON.parse(row.value) as T }))
        .filter((row) => predicate(row.value, row.id));
      for (const row of doomed) this.remove(row.id, row.value);
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
    // Stryker disable next-line ConditionalExpression: a page of LIMIT 0 reads nothing either; this skips the read
    if (query.limit === 0) return { items: [], total };
    const split = this.splitByValue(query);
    // Stryker disable next-line ConditionalExpression: the per-value reads answer what the plain page answers (a cheaper plan, not another result)
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
  // Stryker disable next-line BlockStatement: without the split, the plain page answers the same items
  private splitByValue(query: RecordQuery): T[] | undefined {
    // Stryker disable next-line ArrayDeclaration: merged without an order, the reads come by id, as the plain page lists them
    const order = query.orderBy ?? [];
    const where = query.where ?? {};
    // Stryker disable next-line ArrowFunction,ConditionalExpression,EqualityOperator: which queries are split changes how a page is read, not what it holds (an empty list never gets here: it answers nothing)
    const field = Object.keys(where).find((f) => Array.isArray(where[f]) && (where[f] as unknown[]).length > 1);
    // Stryker disable next-line ConditionalExpression,EqualityOperator: as above: which pages are split changes how they are read, not what they hold
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
    // The plan the collection has once it holds records (an empty one's indexes wait for its first write).
    this.beforeWrite();
    const compiled = this.queries.compile(query);
    if (!compiled) return [];
    const rows = this.sql.all<{ detail: string }>({ sql: `EXPLAIN QUERY PLAN ${compiled.page.sql}`, parameters: compiled.page.parameters });
    return rows.map((row) => row.detail);
  }
}

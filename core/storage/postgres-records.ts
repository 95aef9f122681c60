/**
 * A collection of the PostgreSQL store: one row per record in the shared `records` table, JSONB in
 * `value`, queried with `value->'field'` (indexed per collection by the store). The same semantics
 * as the SQLite collection (the store contract tests run both): a collection naming `countBy`
 * fields keeps a count per combination of their values in `record_groups` in the same transaction
 * as each write, so a filtered list's total is a sum over a few groups.
 */
import type pg from 'pg';
import type { Collection, FieldValue, RecordQuery } from '../kernel/store.js';
import { callerCode, LOCK_SPACE, type PgAccess, pgFieldExpression } from './postgres-sql.js';
import { checkFields } from './query.js';
import { encode } from './sqlite-sql.js';
import { type CompiledSql, groupMarker, groupOf, groupStatements, totalOfGroups } from './store-sql.js';

/** The group statements both stores share (the query layer's, compiled for PostgreSQL). */
const GROUPS = groupStatements('postgres');

/** Runs a statement the query layer compiled on a transaction's connection. */
const on = (client: pg.PoolClient, q: CompiledSql) => client.query(q.sql, q.parameters as unknown[]);

export class PostgresCollection<T> implements Collection<T> {
  constructor(
    private readonly store: PgAccess,
    readonly name: string,
    private readonly countBy?: readonly string[],
  ) {
    if (countBy) checkFields({ orderBy: countBy.map((field) => ({ field })) });
  }

  /** A record's group: the JSON array of its counted fields (missing ones as null), as JSONB compares it. */
  private groupOf(value: unknown): string {
    return groupOf(this.countBy!, value);
  }

  /**
   * Counts kept by something else than this code (a `store copy`, another field list) are rebuilt
   * in one GROUP BY; from then on every write keeps them in its own transaction.
   */
  async ensureGroups(client: pg.PoolClient): Promise<void> {
    const marker = groupMarker(this.countBy!);
    if ((await on(client, GROUPS.find(this.name, marker))).rowCount) return;
    await this.lock(client, '#groups');
    await on(client, GROUPS.clear(this.name));
    const group = `jsonb_build_array(${this.countBy!.map(pgFieldExpression).join(', ')})`;
    await client.query(
      `INSERT INTO record_groups (collection, grp, n) SELECT collection, ${group}, COUNT(*) FROM records WHERE collection = $1 GROUP BY 1, 2`,
      [this.name],
    );
    await on(client, GROUPS.add(this.name, marker, 0));
  }

  /** Inside a transaction: no other read-modify-write of this record runs until it ends (also for a record not yet there). */
  private async lock(client: pg.PoolClient, id: string): Promise<void> {
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_SPACE, `${this.name}/${id}`]);
  }

  private async current(client: pg.PoolClient, id: string): Promise<T | undefined> {
    const { rows } = await client.query<{ value: T }>('SELECT value FROM records WHERE collection = $1 AND id = $2', [this.name, id]);
    return rows[0]?.value;
  }

  private async moveGroup(client: pg.PoolClient, from: string | undefined, to: string | undefined): Promise<void> {
    if (from === to) return;
    if (from !== undefined) {
      await on(client, GROUPS.leave(this.name, from));
      await on(client, GROUPS.dropEmpty(this.name, from));
    }
    if (to !== undefined) await on(client, GROUPS.add(this.name, to, 1));
  }

  /** Inside a transaction holding the record's lock: write (or, with `undefined`, delete) it, keeping the counts. */
  private async write(client: pg.PoolClient, id: string, previous: T | undefined, next: T | undefined): Promise<boolean> {
    let changed: boolean;
    if (next === undefined) {
      changed = ((await client.query('DELETE FROM records WHERE collection = $1 AND id = $2', [this.name, id])).rowCount ?? 0) > 0;
    } else {
      await client.query(
        'INSERT INTO records (collection, id, value) VALUES ($1, $2, $3::jsonb) ON CONFLICT (collection, id) DO UPDATE SET value = excluded.value',
        [this.name, id, encode(next)],
      );
      changed = true;
    }
    if (this.countBy) {
      await this.moveGroup(
        client,
        previous === undefined ? undefined : this.groupOf(previous),
        next === undefined ? undefined : this.groupOf(next),
      );
    }
    return changed;
  }

  async get(id: string): Promise<T | undefined> {
    const { rows } = await this.store.query<{ value: T }>('SELECT value FROM records WHERE collection = $1 AND id = $2', [this.name, id]);
    return rows[0]?.value;
  }

  async has(id: string): Promise<boolean> {
    return ((await this.store.query('SELECT 1 FROM records WHERE collection = $1 AND id = $2', [this.name, id])).rowCount ?? 0) > 0;
  }

  async put(id: string, value: T): Promise<T> {
    const text = encode(value);
    if (!this.countBy) {
      await this.store.query(
        'INSERT INTO records (collection, id, value) VALUES ($1, $2, $3::jsonb) ON CONFLICT (collection, id) DO UPDATE SET value = excluded.value',
        [this.name, id, text],
        `${this.name}/${id}`,
      );
      return value;
    }
    await this.store.transaction(async (client) => {
      await this.lock(client, id);
      await this.write(client, id, await this.current(client, id), value);
    }, `${this.name}/${id}`);
    return value;
  }

  async update(id: string, fn: (current: T | undefined) => T | undefined): Promise<T | undefined> {
    return this.store.transaction(async (client) => {
      await this.lock(client, id);
      const previous = await this.current(client, id);
      const next = callerCode(() => fn(previous));
      if (next !== undefined) encode(next);
      await this.write(client, id, previous, next);
      return next;
    }, `${this.name}/${id}`);
  }

  async delete(id: string): Promise<boolean> {
    return this.store.transaction(async (client) => {
      await this.lock(client, id);
      return this.write(client, id, await this.current(client, id), undefined);
    }, `${this.name}/${id}`);
  }

  async deleteWhere(predicate: (value: T, id: string) => boolean): Promise<number> {
    return this.store.transaction(async (client) => {
      const { rows } = await client.query<{ id: string; value: T }>('SELECT id, value FROM records WHERE collection = $1 FOR UPDATE', [
        this.name,
      ]);
      const doomed = rows.filter((row) => callerCode(() => predicate(row.value, row.id)));
      for (const row of doomed) await this.write(client, row.id, row.value, undefined);
      return doomed.length;
    }, `${this.name} (deleting matching records)`);
  }

  async entries(): Promise<Array<[string, T]>> {
    const { rows } = await this.store.query<{ id: string; value: T }>('SELECT id, value FROM records WHERE collection = $1', [this.name]);
    return rows.map((row) => [row.id, row.value]);
  }

  async list(): Promise<T[]> {
    return (await this.entries()).map(([, value]) => value);
  }

  async count(): Promise<number> {
    const { rows } = await this.store.query<{ n: string }>('SELECT COUNT(*) AS n FROM records WHERE collection = $1', [this.name]);
    return Number(rows[0]!.n);
  }

  /** The total of a query whose filter names only counted fields: a sum over groups, not a count of records. */
  private async totalFromGroups(where: Record<string, FieldValue | readonly FieldValue[]>): Promise<number | undefined> {
    const countBy = this.countBy;
    if (!countBy || !Object.keys(where).every((field) => countBy.includes(field))) return undefined;
    const q = GROUPS.all(this.name);
    const { rows } = await this.store.query<{ grp: unknown; n: string }>(q.sql, q.parameters);
    return totalOfGroups(countBy, rows, where);
  }

  /**
   * The semantics of query.ts's queryInMemory, in SQL: JSONB equality and order (numbers as
   * numbers; a missing field first, as null), ties by id. The collection's name is written into the
   * text, not bound, so the planner can match the partial indexes the store declared for it.
   */
  async query(query: RecordQuery): Promise<{ items: T[]; total: number }> {
    checkFields(query);
    const conditions = [`collection = '${this.name}'`];
    const params: unknown[] = [];
    for (const [field, wanted] of Object.entries(query.where ?? {})) {
      const values = (Array.isArray(wanted) ? wanted : [wanted]) as FieldValue[];
      if (values.length === 0) return { items: [], total: 0 };
      const placeholders = values.map((value) => {
        params.push(JSON.stringify(value));
        return `$${params.length}::jsonb`;
      });
      conditions.push(`${pgFieldExpression(field)} IN (${placeholders.join(', ')})`);
    }
    const where = conditions.join(' AND ');
    const order = query.orderBy ?? [];
    const orderSql = [
      ...order.map((o) => `${pgFieldExpression(o.field)} ${o.desc ? 'DESC NULLS LAST' : 'ASC NULLS FIRST'}`),
      `id ${order.at(-1)?.desc ? 'DESC' : 'ASC'}`,
    ].join(', ');
    const total =
      (await this.totalFromGroups(query.where ?? {})) ??
      Number((await this.store.query<{ n: string }>(`SELECT COUNT(*) AS n FROM records WHERE ${where}`, params)).rows[0]!.n);
    const page = [...params, query.limit ?? null, query.offset ?? 0];
    const { rows } = await this.store.query<{ value: T }>(
      `SELECT value FROM records WHERE ${where} ORDER BY ${orderSql} LIMIT $${page.length - 1} OFFSET $${page.length}`,
      page,
    );
    return { items: rows.map((row) => row.value), total };
  }
}

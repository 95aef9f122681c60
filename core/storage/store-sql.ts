/**
 * The store's SQL, written once with Kysely and compiled for SQLite (this store) or PostgreSQL
 * (team mode's store): the same statements, the same query shapes, each dialect's spelling.
 *
 * Kysely is used compile-only (a `DummyDriver`): it builds the SQL text and its parameters and
 * the store runs them on its own connection — synchronously on `node:sqlite`. Each statement is
 * compiled once, with a placeholder per argument (`compiledOnce`); a call only maps its arguments
 * onto the compiled parameters. Measured by bench/query-layer.bench.mjs on the store's hot paths:
 * compiling per call costs 1.1–1.9× today's hand-written SQL, Drizzle's `toSQL()` 1.5–3.1×,
 * compiled once is within the noise of hand-written SQL (README, Architecture → Storage).
 */
import {
  type Compilable,
  DummyDriver,
  type Generated,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type RawBuilder,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  sql,
} from 'kysely';
import type { FieldValue, InvocationFilter, InvocationRow, RecordQuery } from '../kernel/store.js';
import { checkFields } from './query.js';

export type SqlDialect = 'sqlite' | 'postgres';

/** The store's tables, as both dialects hold them. */
export interface StoreTables {
  records: { collection: string; id: string; value: string };
  record_groups: { collection: string; grp: string; n: number };
  /** `changed`: epoch ms of the key's last append or set (NULL: last changed before the column existed). */
  log_keys: { id: Generated<number>; log: string; key: string; version: number; length: number; changed: number | null };
  /** SQLite's layout: `item` is the key's number × 2^28 + the position; `shape` names the keys of an object value. */
  log_items: { item: number; shape: number | null; value: string };
  log_shapes: { id: Generated<number>; shape: string };
  log_tombstones: { log: string; key: string; version: number };
  /** The invocation log's row (kernel/store.ts), its record as JSON text. */
  invocations: Omit<InvocationRow, 'value'> & { seq: Generated<number>; value: string };
}

export interface CompiledSql {
  sql: string;
  parameters: unknown[];
}

/** A compile-only Kysely for the dialect. */
export function queryBuilder(dialect: SqlDialect): Kysely<StoreTables> {
  return new Kysely<StoreTables>({
    dialect:
      dialect === 'sqlite'
        ? {
            createAdapter: () => new SqliteAdapter(),
            createDriver: () => new DummyDriver(),
            createIntrospector: (db) => new SqliteIntrospector(db),
            createQueryCompiler: () => new SqliteQueryCompiler(),
          }
        : {
            createAdapter: () => new PostgresAdapter(),
            createDriver: () => new DummyDriver(),
            createIntrospector: (db) => new PostgresIntrospector(db),
            createQueryCompiler: () => new PostgresQueryCompiler(),
          },
  });
}

/**
 * A record's top-level field in SQL; queries and indexes must spell it identically (SQLite
 * matches an expression index by its text). PostgreSQL reads it from `jsonb` as text.
 */
export function fieldOf(dialect: SqlDialect, field: string): RawBuilder<unknown> {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(field)) throw new Error(`invalid field name "${field}" in a store query`);
  return dialect === 'sqlite' ? sql`json_extract(value, ${sql.lit(`$.${field}`)})` : sql`(value::jsonb ->> ${sql.lit(field)})`;
}

const SLOT = '\u0000arg';

/**
 * A statement compiled on its first call, with a placeholder standing for each argument; every
 * call maps its arguments onto the compiled parameters (constants the builder added stay).
 */
export function compiledOnce<A extends unknown[]>(build: (...args: A) => Compilable): (...args: A) => CompiledSql {
  let compiled: { sql: string; slots: Array<number | { constant: unknown }> } | undefined;
  return (...args: A) => {
    if (!compiled) {
      const query = build(...(args.map((_, i) => `${SLOT}${i}`) as A)).compile();
      compiled = {
        sql: query.sql,
        slots: query.parameters.map((p) => (typeof p === 'string' && p.startsWith(SLOT) ? Number(p.slice(SLOT.length)) : { constant: p })),
      };
    }
    return { sql: compiled.sql, parameters: compiled.slots.map((slot) => (typeof slot === 'number' ? args[slot] : slot.constant)) };
  };
}

/**
 * The statements of a collection and of a keyed log, compiled once per dialect. The keyed-log
 * statements are SQLite's layout (a key's number and items by row id, sqlite-logs.ts);
 * PostgreSQL's logs keep `(log, key, position)` rows (postgres-logs.ts).
 */
export function storeStatements(dialect: SqlDialect) {
  const db = queryBuilder(dialect);
  return {
    getRecord: compiledOnce((collection: string, id: string) =>
      db.selectFrom('records').select('value').where('collection', '=', collection).where('id', '=', id),
    ),
    hasRecord: compiledOnce((collection: string, id: string) =>
      db.selectFrom('records').select(sql.lit(1).as('found')).where('collection', '=', collection).where('id', '=', id),
    ),
    putRecord: compiledOnce((collection: string, id: string, value: string) =>
      db
        .insertInto('records')
        .values({ collection, id, value })
        .onConflict((oc) => oc.columns(['collection', 'id']).doUpdateSet({ value: (eb) => eb.ref('excluded.value') })),
    ),
    deleteRecord: compiledOnce((collection: string, id: string) =>
      db.deleteFrom('records').where('collection', '=', collection).where('id', '=', id),
    ),
    allRecords: compiledOnce((collection: string) => db.selectFrom('records').select(['id', 'value']).where('collection', '=', collection)),
    countRecords: compiledOnce((collection: string) =>
      db
        .selectFrom('records')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('collection', '=', collection),
    ),
    logHead: compiledOnce((log: string, key: string) =>
      db.selectFrom('log_keys').select(['id', 'version', 'length']).where('log', '=', log).where('key', '=', key),
    ),
    logTombstone: compiledOnce((log: string, key: string) =>
      db.selectFrom('log_tombstones').select('version').where('log', '=', log).where('key', '=', key),
    ),
    /** Items by row id (a key's number × KEY_SPAN + position, sqlite-logs.ts): `from` ≤ item < `to`. */
    logRange: compiledOnce((from: number, to: number) =>
      db.selectFrom('log_items').select(['shape', 'value']).where('item', '>=', from).where('item', '<', to).orderBy('item'),
    ),
    logKeys: compiledOnce((log: string) => db.selectFrom('log_keys').select('key').where('log', '=', log)),
    appendItem: compiledOnce((item: number, shape: number | null, value: string) =>
      db.insertInto('log_items').values({ item, shape, value }),
    ),
    deleteItems: compiledOnce((from: number, to: number) => db.deleteFrom('log_items').where('item', '>=', from).where('item', '<', to)),
    createHead: compiledOnce((log: string, key: string, version: number) =>
      db.insertInto('log_keys').values({ log, key, version, length: 0 }),
    ),
    deleteHead: compiledOnce((id: number) => db.deleteFrom('log_keys').where('id', '=', id)),
    writeHead: compiledOnce((id: number, version: number, length: number, changed: number | null) =>
      db.updateTable('log_keys').set({ version, length, changed }).where('id', '=', id),
    ),
    writeTombstone: compiledOnce((log: string, key: string, version: number) =>
      db
        .insertInto('log_tombstones')
        .values({ log, key, version })
        .onConflict((oc) => oc.columns(['log', 'key']).doUpdateSet({ version: (eb) => eb.ref('excluded.version') })),
    ),
  };
}

export type StoreStatements = ReturnType<typeof storeStatements>;

/**
 * The counts a collection keeps per combination of its `countBy` fields (`record_groups`). A group
 * is the JSON array of the record's values of those fields (a missing one as null), computed in
 * JavaScript the same way for both stores (`groupOf`); the row whose group is `{"fields":[…]}`
 * records which fields the counts are of.
 */
export function groupStatements(dialect: SqlDialect) {
  const db = queryBuilder(dialect);
  return {
    find: compiledOnce((collection: string, grp: string) =>
      db.selectFrom('record_groups').select('n').where('collection', '=', collection).where('grp', '=', grp),
    ),
    all: compiledOnce((collection: string) => db.selectFrom('record_groups').select(['grp', 'n']).where('collection', '=', collection)),
    clear: compiledOnce((collection: string) => db.deleteFrom('record_groups').where('collection', '=', collection)),
    add: compiledOnce((collection: string, grp: string, n: number) =>
      db
        .insertInto('record_groups')
        .values({ collection, grp, n })
        .onConflict((oc) => oc.columns(['collection', 'grp']).doUpdateSet({ n: (eb) => eb('record_groups.n', '+', eb.ref('excluded.n')) })),
    ),
    leave: compiledOnce((collection: string, grp: string) =>
      db
        .updateTable('record_groups')
        .set((eb) => ({ n: eb('n', '-', 1) }))
        .where('collection', '=', collection)
        .where('grp', '=', grp),
    ),
    dropEmpty: compiledOnce((collection: string, grp: string) =>
      db.deleteFrom('record_groups').where('collection', '=', collection).where('grp', '=', grp).where('n', '<=', 0),
    ),
  };
}

/** A record's group: its `countBy` fields' values as a JSON array (a missing one as null). */
export function groupOf(fields: readonly string[], value: unknown): string {
  return JSON.stringify(fields.map((field) => (value as Record<string, unknown> | null)?.[field] ?? null));
}

/** The row that records which fields a collection's groups count (a JSON object, where groups are arrays). */
export const groupMarker = (fields: readonly string[]) => JSON.stringify({ fields });

/** The total of the records whose groups match `where` (only counted fields): a sum over the groups. */
export function totalOfGroups(
  fields: readonly string[],
  rows: ReadonlyArray<{ grp: unknown; n: number | string }>,
  where: Record<string, FieldValue | readonly FieldValue[]>,
): number {
  const wanted = Object.entries(where).map(([field, value]) => [fields.indexOf(field), Array.isArray(value) ? value : [value]] as const);
  let total = 0;
  for (const row of rows) {
    const values = typeof row.grp === 'string' ? (JSON.parse(row.grp) as unknown) : row.grp;
    if (!Array.isArray(values)) continue;
    if (wanted.every(([i, accepted]) => (accepted as readonly unknown[]).includes(values[i]))) total += Number(row.n);
  }
  return total;
}

/**
 * `Collection.query` in SQL: the page and the count of a query, compiled once per shape (which
 * fields, how many values each, which order) and cached. The collection's name is written into
 * the SQL, not bound: SQLite uses a partial index (`WHERE collection = 'tasks'`) only for a query
 * whose own WHERE names the same literal.
 */
export class RecordQueries {
  private readonly db: Kysely<StoreTables>;
  private readonly shapes = new Map<string, { page: (...args: unknown[]) => CompiledSql; count: (...args: unknown[]) => CompiledSql }>();

  constructor(
    private readonly dialect: SqlDialect,
    private readonly collection: string,
  ) {
    this.db = queryBuilder(dialect);
  }

  /** The page and count statements of `query` with its parameters, or undefined when it can match nothing. */
  compile(query: RecordQuery): { page: CompiledSql; count: CompiledSql } | undefined {
    checkFields(query);
    const where = Object.entries(query.where ?? {}).map(
      ([field, wanted]) => [field, (Array.isArray(wanted) ? wanted : [wanted]) as FieldValue[]] as const,
    );
    if (where.some(([, values]) => values.length === 0)) return undefined;
    const order = query.orderBy ?? [];
    const shape = JSON.stringify([where.map(([field, values]) => [field, values.length]), order.map((o) => [o.field, !!o.desc])]);
    let statements = this.shapes.get(shape);
    if (!statements) {
      const filtered = (values: unknown[]) => {
        let q = this.db.selectFrom('records').where('collection', '=', sql.lit(this.collection));
        let i = 0;
        for (const [field, wanted] of where) {
          const slots = wanted.map(() => values[i++]);
          q = q.where(fieldOf(this.dialect, field), 'in', slots);
        }
        return q;
      };
      const tieDesc = order.at(-1)?.desc ?? false;
      statements = {
        page: compiledOnce((...values: unknown[]) => {
          let q = filtered(values).select(['id', 'value']);
          for (const o of order) q = q.orderBy(fieldOf(this.dialect, o.field), o.desc ? 'desc' : 'asc');
          const [limit, offset] = values.slice(-2);
          return q
            .orderBy('id', tieDesc ? 'desc' : 'asc')
            .limit(limit as number)
            .offset(offset as number);
        }),
        count: compiledOnce((...values: unknown[]) => filtered(values).select((eb) => eb.fn.countAll<number>().as('n'))),
      };
      this.shapes.set(shape, statements);
    }
    // SQLite has no boolean: JSON true is 1 there. `LIMIT -1` is SQLite's "no limit"; PostgreSQL's is NULL.
    const values = where.flatMap(([, vs]) => vs.map((v) => (typeof v === 'boolean' && this.dialect === 'sqlite' ? Number(v) : v)));
    const noLimit = this.dialect === 'sqlite' ? -1 : null;
    return {
      page: statements.page(...values, query.limit ?? noLimit, query.offset ?? 0),
      count: statements.count(...values),
    };
  }
}

/** The invocation log's columns a filter may name (`since`/`until` bound `started`). */
const EQUAL_FILTERS = ['resource', 'name', 'operation', 'principal', 'status', 'http_status'] as const;
const SUMMARY_COLUMNS = [
  'id',
  'started',
  'resource',
  'name',
  'operation',
  'principal',
  'status',
  'http_status',
  'duration_ms',
  'error',
] as const;

/** A row's column values in the order `insertInvocation` takes them (the record as JSON text). */
export function invocationValues(row: InvocationRow) {
  return [
    row.id,
    row.started,
    row.resource,
    row.name,
    row.operation,
    row.principal,
    row.status,
    row.http_status,
    row.duration_ms,
    row.error,
    JSON.stringify(row.value),
  ] as const;
}

/** `invocationValues` by column name, as an INSERT takes them. */
export function invocationColumns(v: ReturnType<typeof invocationValues>) {
  return {
    id: v[0],
    started: v[1],
    resource: v[2],
    name: v[3],
    operation: v[4],
    principal: v[5],
    status: v[6],
    http_status: v[7],
    duration_ms: v[8],
    error: v[9],
    value: v[10],
  };
}

function invocationStatements(dialect: SqlDialect) {
  const db = queryBuilder(dialect);
  return {
    insert: compiledOnce((...v: ReturnType<typeof invocationValues>) =>
      db
        .insertInto('invocations')
        .values(invocationColumns(v))
        .onConflict((oc) => oc.column('id').doNothing()),
    ),
    get: compiledOnce((id: string) => db.selectFrom('invocations').select('value').where('id', '=', id)),
    count: compiledOnce(() => db.selectFrom('invocations').select((eb) => eb.fn.countAll<number>().as('n'))),
    /** The `keep`-th newest row (`skip` = keep − 1): everything older goes. */
    cutoff: compiledOnce((skip: number) =>
      db.selectFrom('invocations').select(['started', 'seq']).orderBy('started', 'desc').orderBy('seq', 'desc').limit(1).offset(skip),
    ),
    pruneBefore: compiledOnce((started: number, seq: number) =>
      db
        .deleteFrom('invocations')
        .where((eb) => eb.or([eb('started', '<', started), eb.and([eb('started', '=', started), eb('seq', '<', seq)])])),
    ),
  };
}

/**
 * The invocation log's statements (core/kernel/store.ts `InvocationTable`) for one dialect: a
 * filtered page, its count and an analysis window compiled once per filter shape (which fields are
 * given), the rest once. Lists are newest first by `started`, ties by `seq` (insertion order).
 */
export class InvocationQueries {
  private readonly db: Kysely<StoreTables>;
  private readonly shapes = new Map<
    string,
    { page: (...a: unknown[]) => CompiledSql; count: (...a: unknown[]) => CompiledSql; summaries: (...a: unknown[]) => CompiledSql }
  >();

  constructor(dialect: SqlDialect) {
    this.db = queryBuilder(dialect);
    this.fixed = invocationStatements(dialect);
  }

  /** The statements that take no filter, compiled once. */
  readonly fixed: ReturnType<typeof invocationStatements>;

  /** The page, count and window statements of `filter` with its parameters. */
  compile(filter: InvocationFilter, limit: number, offset: number): { page: CompiledSql; count: CompiledSql; summaries: CompiledSql } {
    const fields = EQUAL_FILTERS.filter((f) => filter[f] !== undefined);
    const since = filter.since !== undefined;
    const until = filter.until !== undefined;
    const shape = `${fields.join(',')}|${since}|${until}`;
    let statements = this.shapes.get(shape);
    if (!statements) {
      const filtered = (values: unknown[]) => {
        let q = this.db.selectFrom('invocations');
        let i = 0;
        for (const field of fields) q = q.where(field, '=', values[i++] as never);
        if (since) q = q.where('started', '>=', values[i++] as number);
        if (until) q = q.where('started', '<=', values[i++] as number);
        return q;
      };
      statements = {
        page: compiledOnce((...values: unknown[]) =>
          filtered(values)
            .select('value')
            .orderBy('started', 'desc')
            .orderBy('seq', 'desc')
            .limit(values.at(-2) as number)
            .offset(values.at(-1) as number),
        ),
        count: compiledOnce((...values: unknown[]) => filtered(values).select((eb) => eb.fn.countAll<number>().as('n'))),
        summaries: compiledOnce((...values: unknown[]) =>
          filtered(values)
            .select([...SUMMARY_COLUMNS])
            .orderBy('started')
            .orderBy('seq'),
        ),
      };
      this.shapes.set(shape, statements);
    }
    const values: unknown[] = fields.map((f) => filter[f]);
    if (since) values.push(filter.since);
    if (until) values.push(filter.until);
    return {
      page: statements.page(...values, limit, offset),
      count: statements.count(...values),
      summaries: statements.summaries(...values),
    };
  }
}

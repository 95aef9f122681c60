/**
 * What the PostgreSQL store's parts share: its schema migrations, the SQL spelling of a record's
 * field that queries and indexes must agree on, and the transaction runner's contract.
 */
import type pg from 'pg';
import { POSTGRES_INVOCATIONS } from './postgres-invocations.js';

/** The database as the collections and logs use it (see `PostgresStore`). */
export interface PgAccess {
  /** One statement on any pooled connection (autocommit); a failure answers 503. */
  query<R extends pg.QueryResultRow>(sql: string, params?: unknown[], what?: string): Promise<pg.QueryResult<R>>;
  /** Runs `fn` on one connection in one transaction; a failure rolls everything back and answers 503. */
  transaction<R>(fn: (client: pg.PoolClient) => Promise<R>, what?: string): Promise<R>;
}

/**
 * The first key of every advisory lock the store takes ('HANG'), so its locks never meet another
 * application's on the same database (pg-boss takes its own).
 */
export const LOCK_SPACE = 0x48414e47;
/** The second key of the migration lock (a record's lock uses a hash of its name; a collision only makes one wait). */
export const MIGRATION_LOCK = 0;

/**
 * Versioned migrations, run in order at open under an advisory lock; `hangar_schema` records how far
 * a database is. The same tables as the SQLite store, with JSONB values (so records can be queried
 * and indexed by field) and ids compared byte-wise (`COLLATE "C"`), as SQLite and JavaScript order them.
 */
export const PG_MIGRATIONS: string[] = [
  `CREATE TABLE records (
     collection TEXT NOT NULL,
     id TEXT COLLATE "C" NOT NULL,
     value JSONB NOT NULL,
     PRIMARY KEY (collection, id)
   );
   CREATE TABLE log_keys (
     log TEXT NOT NULL,
     key TEXT COLLATE "C" NOT NULL,
     version BIGINT NOT NULL,
     length BIGINT NOT NULL,
     PRIMARY KEY (log, key)
   );
   CREATE TABLE log_items (
     log TEXT NOT NULL,
     key TEXT COLLATE "C" NOT NULL,
     position BIGINT NOT NULL,
     value JSONB NOT NULL,
     PRIMARY KEY (log, key, position)
   );
   CREATE TABLE log_tombstones (
     log TEXT NOT NULL,
     key TEXT COLLATE "C" NOT NULL,
     version BIGINT NOT NULL,
     PRIMARY KEY (log, key)
   );
   CREATE TABLE record_groups (
     collection TEXT NOT NULL,
     grp JSONB NOT NULL,
     n BIGINT NOT NULL,
     PRIMARY KEY (collection, grp)
   );
   CREATE TABLE imports (source TEXT PRIMARY KEY, imported_at TIMESTAMPTZ NOT NULL, counts JSONB NOT NULL);`,
  // The invocation log (core/logs), as in the SQLite store.
  POSTGRES_INVOCATIONS,
  // When each keyed log's key last changed (epoch ms), as in the SQLite store: a thread's
  // `updated_at` is read from it instead of rewriting the thread's record on every append.
  'ALTER TABLE log_keys ADD COLUMN changed BIGINT;',
];

/** How a record's top-level field is read in SQL (a JSONB value); queries and indexes must spell it identically. */
export const pgFieldExpression = (field: string) => `(value->'${field}')`;

/**
 * An error thrown by the caller's own code inside a transaction (an `update` function, a
 * `deleteWhere` predicate): passed through unchanged rather than reported as a failed write.
 */
export class CallerError {
  constructor(readonly cause: unknown) {}
}

/** Runs the caller's function, marking what it throws as the caller's. */
export function callerCode<R>(fn: () => R): R {
  try {
    return fn();
  } catch (err) {
    throw new CallerError(err);
  }
}

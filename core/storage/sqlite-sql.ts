/**
 * What the SQLite store's parts share: access to the database (cached statements, write
 * transactions that answer 503 on failure), the JSON text a value is stored as, and the SQL
 * spelling of a record's field that queries and indexes must agree on.
 */
import type { SQLInputValue, StatementSync } from 'node:sqlite';
import { stringifyJson } from '../lib/json-text.js';
import type { CompiledSql } from './store-sql.js';

/** The database as the collections, logs and the lowdb import use it (see `SqliteStore`). */
export interface SqlAccess {
  /** A cached prepared statement. */
  statement(sql: string): StatementSync;
  /** Runs `fn` in one write transaction; a failure rolls everything back and answers 503. */
  transaction<R>(fn: () => R, what?: string): R;
}

/** Runs a statement the query layer compiled (store-sql.ts) on the store's cached prepared statements. */
export function runner(store: SqlAccess) {
  const prepared = (q: CompiledSql) => store.statement(q.sql);
  const params = (q: CompiledSql) => q.parameters as SQLInputValue[];
  return {
    get: <R>(q: CompiledSql) => prepared(q).get(...params(q)) as R | undefined,
    all: <R>(q: CompiledSql) => prepared(q).all(...params(q)) as R[],
    run: (q: CompiledSql) => prepared(q).run(...params(q)),
  };
}

/** Where the store reports what it finds at open (damage) and what the lowdb import did. */
export type StoreLog = (level: 'info' | 'warn' | 'error', message: string) => void;

/** Names of collections and logs: safe to put in SQL text and file names. */
export const SAFE_NAME = /^[a-z0-9][a-z0-9_.-]*$/i;

/** JSON text of a value; a value JSON cannot represent is refused before anything is written. */
export function encode(value: unknown): string {
  // A JsonText (a plugin batch's results) goes in as the text it is (core/lib/json-text.ts).
  const text = stringifyJson(value);
  if (text === undefined) throw new TypeError('the store holds JSON values only');
  return text;
}

/** How a record's top-level field is read in SQL; queries and indexes must spell it identically. */
export const fieldExpression = (field: string) => `json_extract(value, '$.${field}')`;

/**
 * The team store: PostgreSQL (`storage.url: postgres://…`), so several Hangar processes on several
 * machines share one set of collections and logs. The same tables and semantics as the embedded
 * SQLite store (`sqlite-store.ts`; the store contract tests run both), with JSONB values, partial
 * expression indexes per collection, and versioned migrations applied under an advisory lock so
 * instances starting together apply each exactly once.
 *
 * Why it fits the Store interface as it is: every read and write of that interface already returns
 * a promise (callers await them), so no caller changes. Only `collection()` / `appendLog()` (which
 * may create an index), `health()` and `describe()` are synchronous: the store opens with a
 * promise (`ready`, awaited by the server before it serves and by every operation), index creation
 * joins that promise, and `health()` answers from the last write's outcome, probing the database
 * in the background when it was a failure (the next readiness check sees the probe's result).
 *
 * Nothing is cached in memory, as with SQLite: every instance reads what the database holds.
 * Durability is PostgreSQL's (a committed write survives a crash of the database server with its
 * default `synchronous_commit = on`).
 *
 * Records are JSONB: key order inside a stored object is JSONB's (shorter keys first), not the
 * order the object was written in; strings may not contain `\u0000` (PostgreSQL refuses them, the
 * write answers 503 naming it).
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { fail } from '../kernel/errors.js';
import type {
  Collection,
  CollectionOptions,
  CollectionStats,
  InvocationTable,
  KeyedLog,
  Store,
  StoreDescription,
  StoreStats,
} from '../kernel/store.js';
import { PostgresInvocations } from './postgres-invocations.js';
import { PostgresLog } from './postgres-logs.js';
import { PostgresCollection } from './postgres-records.js';
import { CallerError, LOCK_SPACE, MIGRATION_LOCK, PG_MIGRATIONS, type PgAccess, pgFieldExpression } from './postgres-sql.js';
import { checkFields } from './query.js';
import { SAFE_NAME, type StoreLog } from './sqlite-sql.js';

export interface PostgresStoreOptions {
  /** The schema the tables live in (created if missing): several stores may share one database. */
  schema?: string;
  /** Most connections this process holds (pg's pool). */
  poolSize?: number;
  log?: StoreLog;
}

/** A connection URL as it may be shown: the password replaced. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

/**
 * Whether an error is about reaching the database (no SQLSTATE: a socket error; class 08: connection
 * exception; 57P: the server shutting down) rather than about the statement.
 */
function isConnectionFailure(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || code.startsWith('08') || code.startsWith('57P');
}

export const isPostgresUrl = (url: string | undefined): url is string => !!url && /^postgres(ql)?:\/\//i.test(url);

export class PostgresStore implements Store, PgAccess {
  readonly pool: pg.Pool;
  readonly schema: string;
  private readonly where: string;
  private readonly log: StoreLog;
  private readonly collections = new Map<string, PostgresCollection<unknown>>();
  private readonly logs = new Map<string, PostgresLog<unknown>>();
  private invocationTable: PostgresInvocations | undefined;
  /** Open (migrations) and every index or count set-up asked for since: what an operation waits for. */
  private opening: Promise<void>;
  private failing: { at: Date; message: string } | undefined;
  private probing = false;

  constructor(url: string, options: PostgresStoreOptions = {}) {
    this.schema = options.schema ?? 'public';
    if (!/^[a-z_][a-z0-9_]*$/.test(this.schema)) throw new Error(`invalid schema name "${this.schema}"`);
    this.where = redactUrl(url);
    this.log = options.log ?? (() => {});
    this.pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize ?? 10,
      options: `-c search_path=${this.schema}`,
      application_name: 'hangar',
    });
    // An idle connection the server drops (restart, failover) must not take the process down.
    this.pool.on('error', (err) => this.log('warn', `store: an idle connection to ${this.where} failed: ${err.message}`));
    this.opening = this.migrate();
    // Awaited by the server and by every operation; this only keeps an early failure from being unhandled.
    this.opening.catch(() => {});
  }

  /** Resolves when the schema is migrated and every index asked for exists; rejects if the database cannot be reached. */
  ready(): Promise<void> {
    return this.opening;
  }

  /** Each migration runs in its own transaction, all under one advisory lock held for the whole open. */
  private async migrate(): Promise<void> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw fail('HANGAR_STORAGE_UNREACHABLE', { where: this.where, reason: (err as Error).message });
    }
    try {
      await client.query('SELECT pg_advisory_lock($1, $2)', [LOCK_SPACE, MIGRATION_LOCK]);
      try {
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
        await client.query('CREATE TABLE IF NOT EXISTS hangar_schema (version INTEGER NOT NULL)');
        for (;;) {
          await client.query('BEGIN');
          const { rows } = await client.query<{ version: number }>('SELECT version FROM hangar_schema');
          const version = rows[0]?.version ?? 0;
          if (version > PG_MIGRATIONS.length) {
            await client.query('ROLLBACK');
            throw new Error(`${this.where} was written by a newer Hangar (schema ${version}, this one knows ${PG_MIGRATIONS.length})`);
          }
          if (version === PG_MIGRATIONS.length) {
            await client.query('COMMIT');
            return;
          }
          await client.query(PG_MIGRATIONS[version]!);
          await client.query('DELETE FROM hangar_schema');
          await client.query('INSERT INTO hangar_schema (version) VALUES ($1)', [version + 1]);
          await client.query('COMMIT');
          this.log('info', `store: ${this.where} migrated to schema ${version + 1}`);
        }
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        await client.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_SPACE, MIGRATION_LOCK]).catch(() => {});
      }
    } finally {
      client.release();
    }
  }

  /** Runs `fn` after the store is open and its indexes exist. */
  private after(fn: () => Promise<void>): void {
    this.opening = this.opening.then(fn);
    this.opening.catch(() => {});
  }

  private failed(what: string, err: unknown) {
    const reason = err instanceof Error ? err.message : String(err);
    const error = fail('HANGAR_STORAGE_WRITE_FAILED', { what, reason }, { headers: { 'Retry-After': '1' } });
    this.failing = { at: new Date(), message: error.message };
    this.log('error', `store: ${error.message}`);
    return error;
  }

  async query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = [], what?: string): Promise<pg.QueryResult<R>> {
    await this.opening;
    try {
      const result = await this.pool.query<R>(sql, params);
      if (what) this.failing = undefined;
      return result;
    } catch (err) {
      if (what) throw this.failed(what, err);
      const reason = (err as Error).message;
      throw isConnectionFailure(err)
        ? fail('HANGAR_STORAGE_UNREACHABLE', { where: this.where, reason })
        : fail('HANGAR_STORAGE_READ_FAILED', { reason });
    }
  }

  async transaction<R>(fn: (client: pg.PoolClient) => Promise<R>, what = 'a record'): Promise<R> {
    await this.opening;
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw this.failed(what, err);
    }
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      this.failing = undefined;
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      if (err instanceof CallerError) throw err.cause;
      if ((err as { status?: number }).status) throw err;
      throw this.failed(what, err);
    } finally {
      client.release();
    }
  }

  describe(): StoreDescription {
    return { backend: 'postgres', path: this.where };
  }

  health(): { ok: true } | { ok: false; detail: string } {
    if (!this.failing) return { ok: true };
    if (!this.probing) {
      this.probing = true;
      this.query('SELECT 1', [], 'a health probe')
        .catch(() => {})
        .finally(() => {
          this.probing = false;
        });
    }
    return { ok: false, detail: this.failing.message };
  }

  collection<T>(name: string, options: CollectionOptions = {}): Collection<T> {
    if (!SAFE_NAME.test(name)) throw new Error(`invalid collection name "${name}"`);
    let collection = this.collections.get(name);
    if (!collection) {
      const created = new PostgresCollection<unknown>(this, name, options.countBy);
      this.collections.set(name, (collection = created));
      for (const fields of options.indexes ?? []) {
        checkFields({ orderBy: fields.map((field) => ({ field })) });
        this.after(() => this.ensureIndex(name, fields));
      }
      if (options.countBy) this.after(() => this.transactionNow((client) => created.ensureGroups(client), `the counts of ${name}`));
    }
    return collection as PostgresCollection<T>;
  }

  /** `transaction` without waiting for `opening` (used while setting up what `opening` waits for). */
  private async transactionNow(fn: (client: pg.PoolClient) => Promise<void>, what: string): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await fn(client);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw this.failed(what, err);
    } finally {
      client.release();
    }
  }

  /**
   * A partial expression index over the collection's rows, in the order queries read it (a missing
   * field first ascending) and ending with the id that breaks ties, so a page is an index range.
   * Under the migration lock, as two instances creating one index together would collide.
   */
  private async ensureIndex(collection: string, fields: readonly string[]): Promise<void> {
    const readable = `ix_${collection}_${fields.join('_')}`.replace(/[^A-Za-z0-9_]/g, '_');
    // PostgreSQL cuts names at 63 bytes; a hash keeps long ones distinct.
    const name =
      readable.length <= 63 ? readable : `${readable.slice(0, 50)}_${createHash('sha1').update(readable).digest('hex').slice(0, 12)}`;
    const columns = [...fields.map((field) => `${pgFieldExpression(field)} NULLS FIRST`), 'id'].join(', ');
    await this.transactionNow(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_SPACE, MIGRATION_LOCK]);
      await client.query(`CREATE INDEX IF NOT EXISTS "${name}" ON records (${columns}) WHERE collection = '${collection}'`);
    }, `the index ${name}`);
  }

  appendLog<T>(name: string): KeyedLog<T> {
    if (!SAFE_NAME.test(name)) throw new Error(`invalid log name "${name}"`);
    let log = this.logs.get(name);
    if (!log) this.logs.set(name, (log = new PostgresLog<unknown>(this, name)));
    return log as PostgresLog<T>;
  }

  invocations(): InvocationTable {
    this.invocationTable ??= new PostgresInvocations(this);
    return this.invocationTable;
  }

  async stats(): Promise<StoreStats> {
    const collections: Record<string, CollectionStats> = {};
    const { rows } = await this.query<{ name: string; records: string; bytes: string | null }>(
      'SELECT collection AS name, COUNT(*) AS records, SUM(pg_column_size(value)) AS bytes FROM records GROUP BY collection',
    );
    for (const row of rows) collections[row.name] = { records: Number(row.records), files: 1, bytes: Number(row.bytes ?? 0) };
    const logs = await this.query<{ name: string; records: string; bytes: string | null }>(
      'SELECT k.log AS name, COUNT(*) AS records, (SELECT SUM(pg_column_size(value)) FROM log_items i WHERE i.log = k.log) AS bytes FROM log_keys k GROUP BY k.log',
    );
    for (const row of logs.rows) collections[row.name] = { records: Number(row.records), files: 1, bytes: Number(row.bytes ?? 0) };
    for (const name of this.collections.keys()) collections[name] ??= { records: 0, files: 1, bytes: 0 };
    const size = await this.query<{ bytes: string }>(
      `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [this.schema],
    );
    return { backend: 'postgres', path: this.where, files: 1, bytes: Number(size.rows[0]!.bytes), collections };
  }

  /** Every write is committed when its call returns. */
  async flush(): Promise<void> {}

  async close(): Promise<void> {
    await this.opening.catch(() => {});
    await this.pool.end();
  }
}

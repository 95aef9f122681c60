/**
 * The invocation log's table in the SQLite store (core/logs writes it in batches behind the calls
 * it records). A row per call: the fields lists filter on as columns, each list read newest first
 * from an index — `(started)`, `(name, started)`, `(resource, started)`, `(status, started)`,
 * `(principal, started)`, each ending in the rowid, so ties come in insertion order and no page is
 * sorted — and the whole record as JSON. The table is made on first use (a workspace with the
 * log off has none), in a write transaction, so two processes make it once.
 */
import type { InvocationFilter, InvocationRow, InvocationSummary, InvocationTable } from '../kernel/store.js';
import { runner, type SqlAccess } from './sqlite-sql.js';
import { InvocationQueries, invocationValues } from './store-sql.js';

const SCHEMA = `CREATE TABLE IF NOT EXISTS invocations (
     seq INTEGER PRIMARY KEY,
     id TEXT NOT NULL UNIQUE,
     started INTEGER NOT NULL,
     resource TEXT NOT NULL,
     name TEXT NOT NULL,
     operation TEXT NOT NULL,
     principal TEXT NOT NULL,
     status TEXT NOT NULL,
     http_status INTEGER,
     duration_ms REAL NOT NULL,
     error TEXT,
     value TEXT NOT NULL
   );
   CREATE INDEX IF NOT EXISTS invocations_started ON invocations (started);
   CREATE INDEX IF NOT EXISTS invocations_name ON invocations (name, started);
   CREATE INDEX IF NOT EXISTS invocations_resource ON invocations (resource, started);
   CREATE INDEX IF NOT EXISTS invocations_status ON invocations (status, started);
   CREATE INDEX IF NOT EXISTS invocations_principal ON invocations (principal, started);`;

export class SqliteInvocations implements InvocationTable {
  private readonly queries = new InvocationQueries('sqlite');
  private readonly sql: ReturnType<typeof runner>;

  constructor(private readonly store: SqlAccess) {
    this.sql = runner(store);
    // Stryker disable next-line ConditionalExpression: every statement of the schema is IF NOT EXISTS; the look saves a write transaction at each open
    if (!store.statement("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'invocations'").get()) {
      store.transaction(() => {
        // Stryker disable next-line MethodExpression: the schema's only blank part is the empty one after its last ';'
        for (const sql of SCHEMA.split(';').filter((part) => part.trim())) store.statement(sql).run();
      }, 'the invocation table');
    }
  }

  async insert(rows: readonly InvocationRow[]): Promise<void> {
    // Stryker disable next-line ConditionalExpression: an empty batch in a transaction writes nothing either
    if (rows.length === 0) return;
    const compiled = rows.map((row) => this.queries.fixed.insert(...invocationValues(row)));
    this.store.transaction(() => {
      for (const q of compiled) this.sql.run(q);
    }, `${rows.length} invocation record(s)`);
  }

  async page(filter: InvocationFilter, limit: number, offset: number): Promise<{ items: unknown[]; total: number }> {
    const compiled = this.queries.compile(filter, limit, offset);
    const total = this.sql.get<{ n: number }>(compiled.count)!.n;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: a page that starts at or past the total reads no row either
    const items = total > offset ? this.sql.all<{ value: string }>(compiled.page).map((row) => JSON.parse(row.value) as unknown) : [];
    return { items, total };
  }

  async get(id: string): Promise<unknown | undefined> {
    const row = this.sql.get<{ value: string }>(this.queries.fixed.get(id));
    return row ? (JSON.parse(row.value) as unknown) : undefined;
  }

  async summaries(filter: InvocationFilter): Promise<InvocationSummary[]> {
    return this.sql.all<InvocationSummary>(this.queries.compile(filter, 0, 0).summaries);
  }

  async count(): Promise<number> {
    return this.sql.get<{ n: number }>(this.queries.fixed.count())!.n;
  }

  async prune(keep: number): Promise<number> {
    return this.store.transaction(() => {
      const cutoff = this.sql.get<{ started: number; seq: number }>(this.queries.fixed.cutoff(Math.max(0, keep - 1)));
      if (!cutoff) return 0;
      if (keep <= 0) return Number(this.store.statement('DELETE FROM invocations').run().changes);
      return Number(this.sql.run(this.queries.fixed.pruneBefore(cutoff.started, cutoff.seq)).changes);
    }, 'the invocation log (pruning)');
  }
}

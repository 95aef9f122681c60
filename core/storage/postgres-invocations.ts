/**
 * The invocation log's table in the PostgreSQL store: the same columns, indexes and statements as
 * SQLite's (`sqlite-invocations.ts`; both compiled by the query layer, store-sql.ts), the record
 * as JSONB. A batch is one multi-row INSERT, so several instances' batches interleave row-safely.
 */
import type { InvocationFilter, InvocationRow, InvocationSummary, InvocationTable } from '../kernel/store.js';
import type { PgAccess } from './postgres-sql.js';
import { InvocationQueries, invocationColumns, invocationValues, queryBuilder } from './store-sql.js';

export const POSTGRES_INVOCATIONS = `CREATE TABLE invocations (
     seq BIGSERIAL PRIMARY KEY,
     id TEXT COLLATE "C" NOT NULL UNIQUE,
     started BIGINT NOT NULL,
     resource TEXT NOT NULL,
     name TEXT NOT NULL,
     operation TEXT NOT NULL,
     principal TEXT NOT NULL,
     status TEXT NOT NULL,
     http_status INTEGER,
     duration_ms DOUBLE PRECISION NOT NULL,
     error TEXT,
     value JSONB NOT NULL
   );
   CREATE INDEX invocations_started ON invocations (started, seq);
   CREATE INDEX invocations_name ON invocations (name, started, seq);
   CREATE INDEX invocations_resource ON invocations (resource, started, seq);
   CREATE INDEX invocations_status ON invocations (status, started, seq);
   CREATE INDEX invocations_principal ON invocations (principal, started, seq);`;

/** Rows per INSERT: PostgreSQL takes at most 65,535 parameters per statement (11 a row). */
const CHUNK = 1_000;

type SummaryRow = Omit<InvocationSummary, 'started'> & { started: string | number };

export class PostgresInvocations implements InvocationTable {
  private readonly queries = new InvocationQueries('postgres');
  private readonly db = queryBuilder('postgres');

  constructor(private readonly store: PgAccess) {}

  async insert(rows: readonly InvocationRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.store.transaction(async (client) => {
      for (let i = 0; i < rows.length; i += CHUNK) {
        const chunk = rows.slice(i, i + CHUNK).map((row) => invocationColumns(invocationValues(row)));
        const q = this.db
          .insertInto('invocations')
          .values(chunk)
          .onConflict((oc) => oc.column('id').doNothing())
          .compile();
        await client.query(q.sql, q.parameters as unknown[]);
      }
    }, `${rows.length} invocation record(s)`);
  }

  async page(filter: InvocationFilter, limit: number, offset: number): Promise<{ items: unknown[]; total: number }> {
    const compiled = this.queries.compile(filter, limit, offset);
    const total = Number((await this.store.query<{ n: string }>(compiled.count.sql, compiled.count.parameters)).rows[0]!.n);
    if (total <= offset) return { items: [], total };
    const { rows } = await this.store.query<{ value: unknown }>(compiled.page.sql, compiled.page.parameters);
    return { items: rows.map((row) => row.value), total };
  }

  async get(id: string): Promise<unknown | undefined> {
    const q = this.queries.fixed.get(id);
    return (await this.store.query<{ value: unknown }>(q.sql, q.parameters)).rows[0]?.value;
  }

  async summaries(filter: InvocationFilter): Promise<InvocationSummary[]> {
    const q = this.queries.compile(filter, 0, 0).summaries;
    const { rows } = await this.store.query<SummaryRow>(q.sql, q.parameters);
    return rows.map((row) => ({ ...row, started: Number(row.started) }));
  }

  async count(): Promise<number> {
    const q = this.queries.fixed.count();
    return Number((await this.store.query<{ n: string }>(q.sql, q.parameters)).rows[0]!.n);
  }

  async prune(keep: number): Promise<number> {
    return this.store.transaction(async (client) => {
      if (keep <= 0) return (await client.query('DELETE FROM invocations')).rowCount ?? 0;
      const cutoff = this.queries.fixed.cutoff(keep - 1);
      const found = (await client.query<{ started: string; seq: string }>(cutoff.sql, cutoff.parameters)).rows[0];
      if (!found) return 0;
      const doomed = this.queries.fixed.pruneBefore(Number(found.started), Number(found.seq));
      return (await client.query(doomed.sql, doomed.parameters)).rowCount ?? 0;
    }, 'the invocation log (pruning)');
  }
}

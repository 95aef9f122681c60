/**
 * The invocation log's table over a plain collection, filtered in memory: what the lowdb store
 * (kept only for reading old workspaces and for tests) offers. The SQLite and PostgreSQL stores
 * have a real table with indexes (`sqlite-invocations.ts`, `postgres-invocations.ts`).
 */
import type { Collection, InvocationFilter, InvocationRow, InvocationSummary, InvocationTable } from '../kernel/store.js';

type Stored = InvocationRow & { seq: number };

const matches = (row: InvocationRow, filter: InvocationFilter) =>
  (filter.resource === undefined || row.resource === filter.resource) &&
  (filter.name === undefined || row.name === filter.name) &&
  (filter.operation === undefined || row.operation === filter.operation) &&
  (filter.principal === undefined || row.principal === filter.principal) &&
  (filter.status === undefined || row.status === filter.status) &&
  (filter.http_status === undefined || row.http_status === filter.http_status) &&
  (filter.since === undefined || row.started >= filter.since) &&
  (filter.until === undefined || row.started <= filter.until);

const oldestFirst = (a: Stored, b: Stored) => a.started - b.started || a.seq - b.seq;

export class CollectionInvocations implements InvocationTable {
  private seq = 0;

  constructor(private readonly rows: Collection<Stored>) {}

  private async sorted(filter: InvocationFilter): Promise<Stored[]> {
    return (await this.rows.list()).filter((row) => matches(row, filter)).sort(oldestFirst);
  }

  async insert(rows: readonly InvocationRow[]): Promise<void> {
    if (this.seq === 0) this.seq = Math.max(0, ...(await this.rows.list()).map((row) => row.seq));
    for (const row of rows) if (!(await this.rows.has(row.id))) await this.rows.put(row.id, { ...row, seq: ++this.seq });
  }

  async page(filter: InvocationFilter, limit: number, offset: number): Promise<{ items: unknown[]; total: number }> {
    const all = (await this.sorted(filter)).reverse();
    return { items: all.slice(offset, offset + limit).map((row) => row.value), total: all.length };
  }

  async get(id: string): Promise<unknown | undefined> {
    return (await this.rows.get(id))?.value;
  }

  async summaries(filter: InvocationFilter): Promise<InvocationSummary[]> {
    return (await this.sorted(filter)).map(({ value: _value, seq: _seq, ...columns }) => columns);
  }

  count(): Promise<number> {
    return this.rows.count();
  }

  async prune(keep: number): Promise<number> {
    const all = await this.sorted({});
    const doomed = new Set(all.slice(0, Math.max(0, all.length - keep)).map((row) => row.id));
    return this.rows.deleteWhere((_, id) => doomed.has(id));
  }
}

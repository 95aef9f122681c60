/**
 * The invocation log: one row per call in the store's `invocations` table (SQLite, or PostgreSQL
 * in team mode), its lists and analyses read from that table's indexes.
 *
 * Decisions the spec leaves open:
 * - Writes are batched behind the calls: a record describes a response already sent, so `record`
 *   only queues it, and everything queued in one turn of the event loop is written together, in
 *   one transaction, after the response. A crash (kill -9, power loss) loses at most that last
 *   batch; a stop writes it first. A read (a list, a record, an analysis) writes what is queued
 *   before it reads, so a caller always sees its own calls.
 * - A batch the store refuses (disk full, a read-only folder) is logged with how many records it
 *   held and dropped: the log must never hold back or fail the calls it records.
 * - Retention: at most `logs.retain` records. When the table grows 10% past it, the oldest are
 *   deleted in the background.
 * - A workspace's `.hangar/logs/invocations.jsonl` (the log's format before the store held it) is
 *   imported on the first start with history on: one transaction, a line with the count, and the
 *   file kept as `invocations.jsonl.imported-<time>`. A record already in the table is skipped, so
 *   putting the file back and starting again adds nothing.
 * - With `logs.enabled` off nothing is recorded and every /api/v1/logs route answers 501 with a
 *   detail naming the setting (as the task board does when it is off).
 * - The latest analysis is kept in the store (collection `log_analysis`) so it survives restarts.
 */

import { existsSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { fail } from '../kernel/errors.js';
import type { Logger } from '../kernel/log.js';
import type { Collection, InvocationFilter, InvocationRow, InvocationTable, Store } from '../kernel/store.js';
import { timeOrderedId } from '../storage/ids.js';
import { createRedactor, type Redactor } from './redact.js';
import type { Analysis, AnalyzeRequest, InvocationRecord, ListLogsQuery, LogPage } from './schemas.js';
import { analyze } from './summaries.js';
import type { InvocationEntry, InvocationRecorder } from './types.js';
import { windowMs } from './window.js';

export interface InvocationLogOptions {
  enabled: boolean;
  retain: number;
  maxFieldChars: number;
  /** Where the log's JSON Lines file of older versions is looked for (imported once). */
  dir: string;
  store: Store;
  log: Logger;
  knownSecrets?: () => string[];
}

/** The file older versions kept the log in. */
export const LEGACY_FILE = 'invocations.jsonl';

function rowOf(record: InvocationRecord): InvocationRow {
  return {
    id: record.id,
    started: Date.parse(record.started_at),
    resource: record.resource,
    name: record.name,
    operation: record.operation,
    principal: record.principal,
    status: record.status,
    http_status: record.http_status,
    duration_ms: record.duration_ms,
    error: record.error,
    value: record,
  };
}

export class InvocationLog implements InvocationRecorder {
  readonly enabled: boolean;
  private madeTable: InvocationTable | undefined;
  private readonly redactor: Redactor;
  private readonly analyses: Collection<Analysis>;
  private pending: InvocationRow[] = [];
  private flushQueued = false;
  /** Every write goes through this chain, so batches and prunes never interleave. */
  private writing: Promise<void>;
  /** Rows in the table, as far as this process knows (counted at start, then by its own writes). */
  private rows: number | undefined;

  constructor(private readonly options: InvocationLogOptions) {
    this.enabled = options.enabled;
    this.redactor = createRedactor({ maxChars: options.maxFieldChars, knownSecrets: options.knownSecrets });
    this.analyses = options.store.collection<Analysis>('log_analysis', { shards: 1 });
    this.writing = this.enabled ? this.guard(this.start()) : Promise.resolve();
  }

  /** Opened on first use, so a workspace with history off keeps no table for it. */
  private get table(): InvocationTable {
    this.madeTable ??= this.options.store.invocations();
    return this.madeTable;
  }

  /** The import of an older workspace's file, then the row count retention works from. */
  private async start(): Promise<void> {
    await this.importLegacyFile();
    this.rows = await this.table.count();
    await this.pruneIfDue();
  }

  private async importLegacyFile(): Promise<void> {
    const file = path.join(this.options.dir, LEGACY_FILE);
    if (!existsSync(file)) return;
    const rows: InvocationRow[] = [];
    let unreadable = 0;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line) continue;
      try {
        const record = JSON.parse(line) as InvocationRecord;
        if (typeof record?.id !== 'string' || Number.isNaN(Date.parse(record.started_at))) throw new Error('not a record');
        rows.push(rowOf(record));
      } catch {
        // A line cut by a crash mid-append (the old log's only failure): the rest is still good.
        unreadable++;
      }
    }
    rows.sort((a, b) => a.started - b.started);
    await this.table.insert(rows);
    const keptAs = `${file}.imported-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    renameSync(file, keptAs);
    this.options.log.info(
      `logs: imported ${rows.length} invocation record(s) from ${LEGACY_FILE}${unreadable ? ` (${unreadable} unreadable line(s) skipped)` : ''}; the file is kept as ${path.basename(keptAs)}`,
    );
  }

  /** Build, keep and persist one record. Never throws: logging must not break the call it logs. */
  record(entry: InvocationEntry): void {
    if (!this.enabled) return;
    try {
      this.add(this.toRecord(entry));
    } catch (err) {
      this.options.log.warn('could not record an invocation', { error: String(err) });
    }
  }

  /** The record as it will be stored (exported for the benchmark, which builds 100,000 of them). */
  toRecord(entry: InvocationEntry): InvocationRecord {
    const input = this.redactor.apply(entry.input);
    const output = this.redactor.apply(entry.output);
    let error = entry.error ? this.redactor.text(entry.error) : null;
    const errorCut = error !== null && error.length > this.options.maxFieldChars;
    if (errorCut) error = `${error!.slice(0, this.options.maxFieldChars)}…`;
    return {
      id: timeOrderedId(),
      resource: entry.resource,
      name: entry.name,
      operation: entry.operation,
      principal: entry.principal,
      started_at: new Date(entry.started).toISOString(),
      duration_ms: Math.round((entry.duration_ms ?? Date.now() - entry.started) * 100) / 100,
      status: entry.ok ? 'ok' : 'error',
      http_status: entry.http_status ?? null,
      input: input.value,
      output: output.value,
      truncated: input.truncated || output.truncated || errorCut,
      error,
      task_id: entry.task_id ?? null,
      usage: entry.usage ?? null,
    };
  }

  /** Queue a finished record; it is written with the rest of its batch behind the caller. */
  add(record: InvocationRecord): void {
    this.pending.push(rowOf(record));
    if (!this.flushQueued) {
      this.flushQueued = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushQueued = false;
    if (!this.pending.length) return;
    const batch = this.pending;
    this.pending = [];
    this.writing = this.writing.then(() =>
      this.guard(
        (async () => {
          await this.table.insert(batch);
          if (this.rows !== undefined) this.rows += batch.length;
          await this.pruneIfDue();
        })(),
        batch.length,
      ),
    );
  }

  private async pruneIfDue(): Promise<void> {
    const slack = Math.max(1, Math.floor(this.options.retain / 10));
    if (this.rows === undefined || this.rows <= this.options.retain + slack) return;
    await this.table.prune(this.options.retain);
    this.rows = this.options.retain;
  }

  /** A failed write is logged, never thrown: the log must not fail the calls it records. */
  private guard(write: Promise<void>, records?: number): Promise<void> {
    return write.catch((err: unknown) =>
      this.options.log.error(records ? `invocation log: ${records} record(s) could not be written` : 'invocation log: start failed', {
        error: String(err instanceof Error ? err.message : err),
      }),
    );
  }

  /** Resolves when every record so far is written. */
  async drain(): Promise<void> {
    this.flush();
    await this.writing;
  }

  private assertEnabled(): void {
    if (!this.enabled) throw fail('HANGAR_LOG_DISABLED', {});
  }

  private filterOf(query: Pick<ListLogsQuery, 'resource' | 'name' | 'operation' | 'principal' | 'status' | 'since' | 'until'>) {
    const filter: InvocationFilter = {};
    for (const field of ['resource', 'name', 'operation', 'principal', 'since', 'until'] as const) {
      if (query[field] !== undefined) (filter as Record<string, unknown>)[field] = query[field];
    }
    const status = query.status;
    if (status === 'ok' || status === 'error') filter.status = status;
    else if (status !== undefined) filter.http_status = Number(status);
    return filter;
  }

  /** Newest first. */
  async list(query: ListLogsQuery): Promise<LogPage> {
    this.assertEnabled();
    await this.drain();
    const { items, total } = await this.table.page(this.filterOf(query), query.limit, query.offset);
    const logs = items as InvocationRecord[];
    const next = query.offset + logs.length;
    return { logs, total, limit: query.limit, offset: query.offset, next_offset: next < total ? next : null };
  }

  async get(id: string): Promise<InvocationRecord> {
    this.assertEnabled();
    await this.drain();
    const record = (await this.table.get(id)) as InvocationRecord | undefined;
    if (!record) throw fail('HANGAR_LOG_NOT_FOUND', { id });
    return record;
  }

  /** Compute an analysis over a window and keep it as the latest (stored before it is returned). */
  async analyze(request: AnalyzeRequest): Promise<Analysis> {
    this.assertEnabled();
    await this.drain();
    const until = request.until ?? Date.now();
    const since = request.since ?? until - windowMs(request.window);
    const rows = await this.table.summaries(this.filterOf({ since, until, resource: request.resource, name: request.name }));
    const analysis = analyze(rows, { since, until, top: request.top });
    await this.analyses.put('latest', analysis);
    return analysis;
  }

  async latestAnalysis(): Promise<Analysis> {
    this.assertEnabled();
    const latest = await this.analyses.get('latest');
    if (!latest) throw fail('HANGAR_LOG_NO_ANALYSIS', {});
    return latest;
  }
}

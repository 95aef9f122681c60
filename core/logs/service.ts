/**
 * The invocation log: records kept in memory in start order (queries and analyses are scans of an
 * array) and on disk as JSON Lines in `.hangar/logs/invocations.jsonl`.
 *
 * Decisions the spec leaves open:
 * - Storage is an append-only JSONL file rather than a store collection: a call appends one line
 *   (O(1)), where a lowdb shard would rewrite thousands of records per call. Appends made in one
 *   turn of the event loop are written together. Records are written behind the call — a log
 *   record describes a response already sent, so a crash can lose the last few milliseconds.
 * - Retention: at most `logs.retain` records. When the log grows 10% past it, the oldest are
 *   dropped and the file is rewritten (temp file + rename, so it is never half-written).
 * - With `logs.enabled` off nothing is recorded and every /api/v1/logs route answers 501 with a
 *   detail naming the setting (as the task board does when it is off).
 * - The latest analysis is kept in the store (collection `log_analysis`) so it survives restarts.
 */

import { existsSync, readFileSync } from 'node:fs';
import { appendFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fail } from '../kernel/errors.js';
import type { Logger } from '../kernel/log.js';
import type { Collection, Store } from '../kernel/store.js';
import { timeOrderedId } from '../storage/ids.js';
import { createRedactor, type Redactor } from './redact.js';
import type { Analysis, AnalyzeRequest, InvocationRecord, ListLogsQuery, LogPage } from './schemas.js';
import { windowMs } from './schemas.js';
import { analyze } from './summaries.js';
import type { InvocationEntry, InvocationRecorder } from './types.js';

export interface InvocationLogOptions {
  enabled: boolean;
  retain: number;
  maxFieldChars: number;
  dir: string;
  store: Store;
  log: Logger;
  knownSecrets?: () => string[];
}

export class InvocationLog implements InvocationRecorder {
  readonly enabled: boolean;
  private readonly file: string;
  private readonly records: InvocationRecord[] = [];
  /** Start times in epoch ms, parallel to `records` (kept sorted). */
  private readonly starts: number[] = [];
  private readonly byId = new Map<string, InvocationRecord>();
  private readonly redactor: Redactor;
  private readonly analyses: Collection<Analysis>;
  private pending: string[] = [];
  private flushQueued = false;
  /** Every disk write goes through this chain: appends and compactions never interleave. */
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly options: InvocationLogOptions) {
    this.enabled = options.enabled;
    this.file = path.join(options.dir, 'invocations.jsonl');
    this.redactor = createRedactor({ maxChars: options.maxFieldChars, knownSecrets: options.knownSecrets });
    this.analyses = options.store.collection<Analysis>('log_analysis', { shards: 1 });
    if (this.enabled) this.loadFile();
  }

  private loadFile(): void {
    if (!existsSync(this.file)) return;
    const loaded: InvocationRecord[] = [];
    for (const line of readFileSync(this.file, 'utf8').split('\n')) {
      if (!line) continue;
      try {
        loaded.push(JSON.parse(line) as InvocationRecord);
      } catch {
        // A line cut by a crash mid-append: the rest of the file is still good.
      }
    }
    loaded.sort((a, b) => Date.parse(a.started_at) - Date.parse(b.started_at));
    for (const r of loaded.slice(-this.options.retain)) this.insert(r);
  }

  private insert(record: InvocationRecord): void {
    const t = Date.parse(record.started_at);
    // Calls finish out of order; a record usually belongs at (or near) the end.
    let i = this.starts.length;
    while (i > 0 && this.starts[i - 1]! > t) i--;
    this.records.splice(i, 0, record);
    this.starts.splice(i, 0, t);
    this.byId.set(record.id, record);
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

  /** Keep a finished record (in memory, then on disk behind the caller). */
  add(record: InvocationRecord, persist = true): void {
    this.insert(record);
    if (persist) {
      this.pending.push(JSON.stringify(record));
      if (!this.flushQueued) {
        this.flushQueued = true;
        setImmediate(() => this.flush());
      }
    }
    const slack = Math.max(1, Math.floor(this.options.retain / 10));
    if (this.records.length > this.options.retain + slack) this.compact();
  }

  private flush(): void {
    this.flushQueued = false;
    if (!this.pending.length) return;
    const text = this.pending.join('\n') + '\n';
    this.pending = [];
    this.enqueue(() => appendFile(this.file, text));
  }

  private compact(): void {
    const drop = this.records.length - this.options.retain;
    for (const r of this.records.splice(0, drop)) this.byId.delete(r.id);
    this.starts.splice(0, drop);
    // Lines still pending are part of the snapshot; clear them so they are not appended twice.
    this.pending = [];
    const snapshot = this.records.map((r) => JSON.stringify(r)).join('\n') + '\n';
    const tmp = `${this.file}.${process.pid}.tmp`;
    this.enqueue(async () => {
      await writeFile(tmp, snapshot);
      await rename(tmp, this.file);
    });
  }

  private enqueue(write: () => Promise<unknown>): void {
    this.writing = this.writing.then(write).then(
      () => {},
      (err: unknown) => this.options.log.error('invocation log write failed', { error: String(err) }),
    );
  }

  /** Resolves when every record so far is on disk. */
  async drain(): Promise<void> {
    this.flush();
    await this.writing;
  }

  private assertEnabled(): void {
    if (!this.enabled) throw fail('HANGAR_LOG_DISABLED', {});
  }

  get size(): number {
    return this.records.length;
  }

  /** Newest first. */
  list(query: ListLogsQuery): LogPage {
    this.assertEnabled();
    const matches: InvocationRecord[] = [];
    const status = query.status;
    for (let i = this.records.length - 1; i >= 0; i--) {
      const r = this.records[i]!;
      const t = this.starts[i]!;
      if (query.until !== undefined && t > query.until) continue;
      if (query.since !== undefined && t < query.since) break;
      if (query.resource && r.resource !== query.resource) continue;
      if (query.name && r.name !== query.name) continue;
      if (query.operation && r.operation !== query.operation) continue;
      if (query.principal && r.principal !== query.principal) continue;
      if (status && (status === 'ok' || status === 'error' ? r.status !== status : String(r.http_status) !== status)) continue;
      matches.push(r);
    }
    const logs = matches.slice(query.offset, query.offset + query.limit);
    const next = query.offset + logs.length;
    return { logs, total: matches.length, limit: query.limit, offset: query.offset, next_offset: next < matches.length ? next : null };
  }

  get(id: string): InvocationRecord {
    this.assertEnabled();
    const record = this.byId.get(id);
    if (!record) throw fail('HANGAR_LOG_NOT_FOUND', { id });
    return record;
  }

  /** Compute an analysis over a window and keep it as the latest (on disk before it is returned). */
  async analyze(request: AnalyzeRequest): Promise<Analysis> {
    this.assertEnabled();
    const until = request.until ?? Date.now();
    const since = request.since ?? until - windowMs(request.window);
    const analysis = analyze(this.records, this.starts, { since, until, resource: request.resource, name: request.name, top: request.top });
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

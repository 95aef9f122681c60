/**
 * Summaries of invocation records: counts, error rate, latency percentiles, slowest calls and top
 * errors per resource. Pure functions over the columns of a window's rows (the store reads them from
 * the invocation table's time index), so they are measured alone (bench/ml.bench.ts: 100,000 records
 * well under a second — one pass to group, one sort of durations per group).
 */
import { randomUUID } from 'node:crypto';
import type { InvocationSummary } from '../kernel/store.js';
import type { Analysis, Latency } from './schemas.js';

/** What an analysis reads of a call. */
type Call = InvocationSummary;

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: Float64Array | number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1]!;
}

function latency(durations: number[]): Latency {
  if (durations.length === 0) return { p50: 0, p95: 0, p99: 0, mean: 0, max: 0 };
  const sorted = Float64Array.from(durations).sort();
  let sum = 0;
  for (const d of sorted) sum += d;
  const round = (v: number) => Math.round(v * 100) / 100;
  return {
    p50: round(percentile(sorted, 50)),
    p95: round(percentile(sorted, 95)),
    p99: round(percentile(sorted, 99)),
    mean: round(sum / sorted.length),
    max: round(sorted[sorted.length - 1]!),
  };
}

/** Errors that differ only in ids, numbers or quoted values are one error. */
export function errorSignature(message: string): string {
  return message
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<id>')
    .replace(/\b\d+(\.\d+)?\b/g, '<n>')
    .slice(0, 300);
}

interface Group {
  count: number;
  errors: number;
  durations: number[];
  /** Kept sorted descending, at most `top` long. */
  slowest: Call[];
  errorsBySignature: Map<string, { error: string; count: number; last_seen: number; names: Set<string> }>;
  names: Map<string, { count: number; errors: number; durations: number[] }>;
}

function keepSlowest(list: Call[], record: Call, top: number): void {
  if (list.length === top && list[top - 1]!.duration_ms >= record.duration_ms) return;
  let i = list.length;
  while (i > 0 && list[i - 1]!.duration_ms < record.duration_ms) i--;
  list.splice(i, 0, record);
  if (list.length > top) list.pop();
}

export interface AnalyzeOptions {
  /** The window the calls were read from (epoch ms), reported with the analysis. */
  since: number;
  until: number;
  resource?: string;
  name?: string;
  top: number;
}

/** `calls` are the window's calls (already filtered), in start order. */
export function analyze(calls: readonly Call[], options: AnalyzeOptions): Analysis {
  const began = performance.now();
  const groups = new Map<string, Group>();
  const all: number[] = [];
  let errors = 0;
  for (const r of calls) {
    let g = groups.get(r.resource);
    if (!g)
      groups.set(r.resource, (g = { count: 0, errors: 0, durations: [], slowest: [], errorsBySignature: new Map(), names: new Map() }));
    g.count++;
    g.durations.push(r.duration_ms);
    all.push(r.duration_ms);
    keepSlowest(g.slowest, r, options.top);
    let n = g.names.get(r.name);
    if (!n) g.names.set(r.name, (n = { count: 0, errors: 0, durations: [] }));
    n.count++;
    n.durations.push(r.duration_ms);
    if (r.status === 'error') {
      g.errors++;
      n.errors++;
      errors++;
      const message = r.error ?? `HTTP ${r.http_status ?? '?'}`;
      const signature = errorSignature(message);
      let e = g.errorsBySignature.get(signature);
      if (!e) g.errorsBySignature.set(signature, (e = { error: message, count: 0, last_seen: r.started, names: new Set() }));
      e.count++;
      if (r.started > e.last_seen) e.last_seen = r.started;
      e.names.add(r.name);
    }
  }
  const rate = (e: number, c: number) => (c ? Math.round((e / c) * 10_000) / 10_000 : 0);
  const resources = [...groups.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([resource, g]) => ({
      resource: resource as Analysis['resources'][number]['resource'],
      count: g.count,
      errors: g.errors,
      error_rate: rate(g.errors, g.count),
      latency_ms: latency(g.durations),
      slowest: g.slowest.map((r) => ({
        id: r.id,
        name: r.name,
        operation: r.operation,
        duration_ms: r.duration_ms,
        started_at: new Date(r.started).toISOString(),
        status: r.status as 'ok' | 'error',
      })),
      top_errors: [...g.errorsBySignature.values()]
        .sort((a, b) => b.count - a.count || b.last_seen - a.last_seen)
        .slice(0, options.top)
        .map((e) => ({ error: e.error, count: e.count, last_seen: new Date(e.last_seen).toISOString(), names: [...e.names].sort() })),
      names: [...g.names.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, n]) => ({
          name,
          count: n.count,
          errors: n.errors,
          error_rate: rate(n.errors, n.count),
          latency_ms: latency(n.durations),
        })),
    }));
  return {
    id: randomUUID(),
    created_at: new Date().toISOString(),
    window: { since: new Date(options.since).toISOString(), until: new Date(options.until).toISOString() },
    filters: { resource: options.resource ?? null, name: options.name ?? null },
    total: all.length,
    errors,
    error_rate: rate(errors, all.length),
    latency_ms: latency(all),
    resources,
    compute_ms: Math.round((performance.now() - began) * 100) / 100,
  };
}

/**
 * Summaries of invocation records: counts, error rate, latency percentiles, slowest calls and top
 * errors per resource. Pure functions over an array, so they are measured alone (bench/ml.bench.ts:
 * 100,000 records well under a second — one pass to group, one sort of durations per group).
 */
import { randomUUID } from 'node:crypto';
import type { Analysis, InvocationRecord, Latency } from './schemas.js';

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
  slowest: InvocationRecord[];
  errorsBySignature: Map<string, { error: string; count: number; last_seen: string; names: Set<string> }>;
  names: Map<string, { count: number; errors: number; durations: number[] }>;
}

function keepSlowest(list: InvocationRecord[], record: InvocationRecord, top: number): void {
  if (list.length === top && list[top - 1]!.duration_ms >= record.duration_ms) return;
  let i = list.length;
  while (i > 0 && list[i - 1]!.duration_ms < record.duration_ms) i--;
  list.splice(i, 0, record);
  if (list.length > top) list.pop();
}

export interface AnalyzeOptions {
  since: number;
  until: number;
  resource?: string;
  name?: string;
  top: number;
}

/** `records` must be in start order (the log keeps them so); the window is cut by binary search. */
export function analyze(records: readonly InvocationRecord[], startMs: readonly number[], options: AnalyzeOptions): Analysis {
  const began = performance.now();
  const lower = (t: number) => {
    let lo = 0;
    let hi = startMs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (startMs[mid]! < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const from = lower(options.since);
  const to = lower(options.until + 1);
  const groups = new Map<string, Group>();
  const all: number[] = [];
  let errors = 0;
  for (let i = from; i < to; i++) {
    const r = records[i]!;
    if (options.resource && r.resource !== options.resource) continue;
    if (options.name && r.name !== options.name) continue;
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
      if (!e) g.errorsBySignature.set(signature, (e = { error: message, count: 0, last_seen: r.started_at, names: new Set() }));
      e.count++;
      if (r.started_at > e.last_seen) e.last_seen = r.started_at;
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
        started_at: r.started_at,
        status: r.status,
      })),
      top_errors: [...g.errorsBySignature.values()]
        .sort((a, b) => b.count - a.count || (a.last_seen < b.last_seen ? 1 : -1))
        .slice(0, options.top)
        .map((e) => ({ error: e.error, count: e.count, last_seen: e.last_seen, names: [...e.names].sort() })),
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

/**
 * Reading the Prometheus text format of /metrics for the status view's "at a glance" figures.
 * Only what the view needs: samples with their labels and values; HELP/TYPE lines are skipped.
 * Label values may hold escaped quotes and commas (route patterns do), hence the small scanner.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, raw] of (match[2] ?? '').matchAll(LABEL)) {
      labels[key!] = raw!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    const value = Number(match[3]);
    if (!Number.isNaN(value)) samples.push({ name: match[1]!, labels, value });
  }
  return samples;
}

/** Sum of a metric's samples, optionally only those whose labels pass `where`. */
export function total(samples: Sample[], name: string, where: (labels: Record<string, string>) => boolean = () => true): number {
  let sum = 0;
  for (const s of samples) if (s.name === name && where(s.labels)) sum += s.value;
  return sum;
}

/** The figures the status view shows, from one scrape. */
export interface Glance {
  requests: number;
  serverErrors: number;
  meanLatencyMs: number | null;
  invocations: number;
  reloads: number;
  failedReloads: number;
  residentMemoryMb: number | null;
  eventLoopLagMs: number | null;
}

export function glance(samples: Sample[]): Glance {
  const count = total(samples, 'http_request_duration_seconds_count');
  const has = (name: string) => samples.some((s) => s.name === name);
  return {
    requests: total(samples, 'http_requests_total'),
    serverErrors: total(samples, 'http_requests_total', (l) => (l.status ?? '').startsWith('5')),
    meanLatencyMs: count > 0 ? (total(samples, 'http_request_duration_seconds_sum') / count) * 1000 : null,
    invocations: total(samples, 'agent_invocations_total'),
    reloads: total(samples, 'dropin_reloads_total'),
    failedReloads: total(samples, 'dropin_reloads_total', (l) => l.outcome === 'error'),
    residentMemoryMb: has('hangar_process_resident_memory_bytes') ? total(samples, 'hangar_process_resident_memory_bytes') / 1048576 : null,
    eventLoopLagMs: has('hangar_nodejs_eventloop_lag_seconds') ? total(samples, 'hangar_nodejs_eventloop_lag_seconds') * 1000 : null,
  };
}

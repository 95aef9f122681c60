/**
 * Prometheus metrics of custom endpoints (spec: Limits). The registry is a parameter — the platform
 * passes the one it serves on /metrics, and tests pass a fresh one — so nothing here touches
 * prom-client's global registry.
 *
 * Every label value comes from a closed set or a validated literal name (endpoint and upstream
 * names cannot contain `${ENV}`), so no request text or secret can reach a label.
 */
import { CheapCounter, CheapHistogram } from '../kernel/metrics.js';
import type { Registry } from '../lib/prom.js';

const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Outcome label of `platform_endpoint_*`. */
export type EndpointOutcome = 'success' | 'invalid_input' | 'upstream_failure' | 'handler_error' | 'timeout' | 'cancelled';

/**
 * Counted as prom-client's would be, without its per-call label hashing and checks: a fan-out pays
 * six of these per request over three upstreams (`CheapCounter`, `CheapHistogram`; #27).
 */
export interface EndpointMetrics {
  endpointCalls: CheapCounter<'endpoint' | 'method' | 'outcome'>;
  endpointDuration: CheapHistogram<'endpoint' | 'method' | 'outcome'>;
  upstreamCalls: CheapCounter<'endpoint' | 'upstream' | 'method' | 'outcome'>;
  upstreamDuration: CheapHistogram<'endpoint' | 'upstream' | 'method' | 'outcome'>;
  upstreamRetries: CheapCounter<'endpoint' | 'upstream' | 'method'>;
  tokenRequests: CheapCounter<'endpoint' | 'upstream' | 'outcome'>;
}

/** The endpoint metrics made on each registry: two services sharing the platform registry share them. */
const made = new WeakMap<Registry, EndpointMetrics>();

/**
 * Create (or, when this registry already has them, reuse) the endpoint metrics. Reuse matters
 * because two services may share the platform registry, and prom-client refuses a second metric
 * with the same name.
 */
export function endpointMetrics(registry: Registry): EndpointMetrics {
  let metrics = made.get(registry);
  if (metrics) return metrics;
  const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
    new CheapCounter<L>(registry, { name, help, labelNames });
  const histogram = <L extends string>(name: string, help: string, labelNames: L[]) =>
    new CheapHistogram<L>(registry, { name, help, labelNames, buckets: SECONDS_BUCKETS });
  metrics = {
    endpointCalls: counter('platform_endpoint_calls_total', 'Custom endpoint calls', ['endpoint', 'method', 'outcome']),
    endpointDuration: histogram(
      'platform_endpoint_duration_seconds',
      'Custom endpoint call duration, from validated input to aggregated answer',
      ['endpoint', 'method', 'outcome'],
    ),
    upstreamCalls: counter(
      'platform_upstream_calls_total',
      'Upstream calls made by custom endpoints (one per logical call, retries included)',
      ['endpoint', 'upstream', 'method', 'outcome'],
    ),
    upstreamDuration: histogram('platform_upstream_duration_seconds', 'Upstream call duration including retries and backoff', [
      'endpoint',
      'upstream',
      'method',
      'outcome',
    ]),
    upstreamRetries: counter('platform_upstream_retries_total', 'Upstream retry attempts', ['endpoint', 'upstream', 'method']),
    tokenRequests: counter(
      'platform_upstream_token_requests_total',
      'OAuth2 token requests made for upstreams (cache misses and refreshes)',
      ['endpoint', 'upstream', 'outcome'],
    ),
  };
  made.set(registry, metrics);
  return metrics;
}

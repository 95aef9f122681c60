/**
 * Prometheus metrics of custom endpoints (spec: Limits). The registry is a parameter — the platform
 * passes the one it serves on /metrics, and tests pass a fresh one — so nothing here touches
 * prom-client's global registry.
 *
 * Every label value comes from a closed set or a validated literal name (endpoint and upstream
 * names cannot contain `${ENV}`), so no request text or secret can reach a label.
 */
import { Counter, Histogram, type Registry } from 'prom-client';

const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Outcome label of `platform_endpoint_*`. */
export type EndpointOutcome = 'success' | 'invalid_input' | 'upstream_failure' | 'handler_error' | 'timeout' | 'cancelled';

export interface EndpointMetrics {
  endpointCalls: Counter<'endpoint' | 'method' | 'outcome'>;
  endpointDuration: Histogram<'endpoint' | 'method' | 'outcome'>;
  upstreamCalls: Counter<'endpoint' | 'upstream' | 'method' | 'outcome'>;
  upstreamDuration: Histogram<'endpoint' | 'upstream' | 'method' | 'outcome'>;
  upstreamRetries: Counter<'endpoint' | 'upstream' | 'method'>;
  tokenRequests: Counter<'endpoint' | 'upstream' | 'outcome'>;
}

/**
 * Create (or, when this registry already has them, reuse) the endpoint metrics. Reuse matters
 * because two services may share the platform registry, and prom-client refuses a second metric
 * with the same name.
 */
export function endpointMetrics(registry: Registry): EndpointMetrics {
  function counter<L extends string>(name: string, help: string, labelNames: L[]): Counter<L> {
    const existing = registry.getSingleMetric(name);
    if (existing) return existing as Counter<L>;
    return new Counter({ name, help, labelNames, registers: [registry] });
  }
  function histogram<L extends string>(name: string, help: string, labelNames: L[]): Histogram<L> {
    const existing = registry.getSingleMetric(name);
    if (existing) return existing as Histogram<L>;
    return new Histogram({ name, help, labelNames, buckets: SECONDS_BUCKETS, registers: [registry] });
  }
  return {
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
}

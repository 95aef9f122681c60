import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CheapCounter, CheapHistogram, Metrics } from '../../core/kernel/metrics.js';

const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const SAMPLES = [
  ['GET', '/api/v1/:agent/health', 200, 0.0004],
  ['GET', '/api/v1/:agent/health', 200, 0.003],
  ['GET', '/api/v1/:agent/health', 404, 0.01],
  ['POST', '/api/v1/:agent/invoke', 200, 20],
  ['POST', '/api/v1/:agent/invoke', 200, 0.3],
] as const;

describe('HTTP metrics counted per response and computed when read', () => {
  it('read as prom-client histogram and counter would have recorded the same responses', async () => {
    const metrics = new Metrics();
    const registry = new Registry();
    const labelNames = ['method', 'route', 'status'];
    const duration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration by route pattern and status',
      labelNames,
      buckets: BUCKETS,
      registers: [registry],
    });
    for (const [method, route, status, seconds] of SAMPLES) {
      metrics.recordHttp(method, route, status, seconds);
      duration.observe({ method, route, status: String(status) }, seconds);
    }
    expect(await metrics.registry.getSingleMetricAsString('http_request_duration_seconds')).toBe(
      await registry.getSingleMetricAsString('http_request_duration_seconds'),
    );
    const json = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === 'http_request_duration_seconds');
    expect(json).toEqual(await duration.get());
    expect(await metrics.registry.getSingleMetricAsString('http_requests_total')).toBe(
      [
        '# HELP http_requests_total HTTP requests by route pattern and status',
        '# TYPE http_requests_total counter',
        'http_requests_total{method="GET",route="/api/v1/:agent/health",status="200"} 2',
        'http_requests_total{method="GET",route="/api/v1/:agent/health",status="404"} 1',
        'http_requests_total{method="POST",route="/api/v1/:agent/invoke",status="200"} 2',
      ].join('\n'),
    );
  });

  it('count responses recorded after a read on top of those before it', async () => {
    const metrics = new Metrics();
    metrics.recordHttp('GET', '/health', 200, 0.002);
    expect((await metrics.httpRequests.get()).values.map((v) => v.value)).toEqual([1]);
    metrics.recordHttp('GET', '/health', 200, 0.002);
    expect((await metrics.httpRequests.get()).values.map((v) => v.value)).toEqual([2]);
  });

  it('agent_invocations_total reads as a prom-client counter incremented the same way', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const options = { name: 'agent_invocations_total', help: 'Agent invocations', labelNames: ['agent', 'route', 'outcome'] as const };
    const cheap = new CheapCounter(ours, options);
    const counter = new Counter({ ...options, labelNames: [...options.labelNames], registers: [theirs] });
    const calls = [
      { agent: 'a', route: 'invoke', outcome: 'completed' },
      { agent: 'b', route: 'chat', outcome: 'completed' },
      { agent: 'a', route: 'invoke', outcome: 'completed' },
      { agent: 'a', route: 'invoke', outcome: 'timeout' },
    ];
    for (const labels of calls) {
      cheap.inc(labels);
      counter.inc(labels);
    }
    cheap.inc(calls[1]!, 3);
    counter.inc(calls[1]!, 3);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  it('a cheap histogram reads as a prom-client histogram observed the same way, values on a bound included, and resets', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const options = {
      name: 'platform_upstream_duration_seconds',
      help: 'Upstream call duration',
      labelNames: ['endpoint', 'upstream', 'outcome'] as const,
      buckets: [0.005, 0.01, 0.025, 1],
    };
    const cheap = new CheapHistogram(ours, options);
    const histogram = new Histogram({ ...options, labelNames: [...options.labelNames], registers: [theirs] });
    const observations: Array<[Record<'endpoint' | 'upstream' | 'outcome', string>, number]> = [
      [{ endpoint: 'fx', upstream: 'a', outcome: 'success' }, 0.004],
      [{ endpoint: 'fx', upstream: 'b', outcome: 'success' }, 0.01],
      [{ endpoint: 'fx', upstream: 'a', outcome: 'success' }, 0.0100001],
      [{ endpoint: 'fx', upstream: 'a', outcome: 'timeout' }, 30],
      [{ endpoint: 'other', upstream: 'a', outcome: 'success' }, 0],
    ];
    for (const [labels, value] of observations) {
      cheap.observe(labels, value);
      histogram.observe(labels, value);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
    ours.resetMetrics();
    theirs.resetMetrics();
    cheap.observe(observations[1]![0], 0.02);
    histogram.observe(observations[1]![0], 0.02);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});

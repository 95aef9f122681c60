import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry as PromRegistry } from 'prom-client';

/**
 * Prometheus metrics for one server instance. Each server owns its own prom-client registry
 * (never the global one), so several servers in one process — tests, benchmarks — stay separate.
 * Subsystems register their own metrics on `registry`.
 */
export class Metrics {
  readonly registry = new PromRegistry();
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly agentInvocations: Counter<'agent' | 'route' | 'outcome'>;
  readonly modelTokens: Counter<'agent' | 'model' | 'kind'>;
  readonly dropinReloads: Counter<'kind' | 'outcome'>;
  readonly dropinErrors: Gauge<'kind'>;
  readonly dropinHostRestarts: Counter<'kind' | 'name' | 'reason'>;

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'hangar_' });
    this.httpRequests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests by route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.httpDuration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration by route pattern and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [this.registry],
    });
    this.agentInvocations = new Counter({
      name: 'agent_invocations_total',
      help: 'Agent invocations by agent, route and outcome',
      labelNames: ['agent', 'route', 'outcome'],
      registers: [this.registry],
    });
    this.modelTokens = new Counter({
      name: 'model_tokens_total',
      help: 'Model tokens spent by agent runs, by agent, model and kind (prompt, completion), as the model endpoint reported them',
      labelNames: ['agent', 'model', 'kind'],
      registers: [this.registry],
    });
    this.dropinReloads = new Counter({
      name: 'dropin_reloads_total',
      help: 'Drop-in loads and reloads by kind and outcome (ok, error)',
      labelNames: ['kind', 'outcome'],
      registers: [this.registry],
    });
    this.dropinErrors = new Gauge({
      name: 'dropin_errors',
      help: 'Drop-ins currently failing to load, by kind',
      labelNames: ['kind'],
      registers: [this.registry],
    });
    this.dropinHostRestarts = new Counter({
      name: 'dropin_host_restarts_total',
      help: 'Supervised drop-in hosts restarted, by kind, name and reason (out_of_memory, unresponsive, stopped)',
      labelNames: ['kind', 'name', 'reason'],
      registers: [this.registry],
    });
  }
}

import { Counter, collectDefaultMetrics, Gauge, type Metric, type MetricValue, Registry as PromRegistry } from '../lib/prom.js';

/** `http_request_duration_seconds`'s upper bounds, in seconds. */
const HTTP_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type HttpLabels = { method: string; route: string; status: string };

/** One series of a histogram counted here (`recordHttp`, `CheapHistogram`): what it observed since the start. */
interface HistogramSeries<Labels extends Record<string, string> = Record<string, string>> {
  labels: Labels;
  count: number;
  sum: number;
  /** Observations per bucket, not cumulative; the last one past the largest bound (`+Inf` only). */
  buckets: Float64Array;
}
type HttpSeries = HistogramSeries<HttpLabels>;

/** The bucket an observation falls in: the first whose upper bound it does not pass (prom-client's `le`). */
function bucketOf(bounds: readonly number[], value: number): number {
  let bucket = 0;
  while (bucket < bounds.length && value > bounds[bucket]!) bucket++;
  return bucket;
}

/**
 * How often the event-loop lag histogram (`nodejs_eventloop_lag_*`, prom-client's use of
 * `monitorEventLoopDelay`) samples. prom-client's default, 10 ms, woke an idle server's event loop
 * ~100 times a second (108 voluntary context switches a second on its main thread, against 11 at
 * 100 ms): a desktop app's battery and a laptop's idle CPU, for a metric read at a scrape. A stall
 * that spans a sample still shows in full; stalls shorter than 100 ms are caught less often.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * Prometheus metrics for one server instance. Each server owns its own prom-client registry
 * (never the global one), so several servers in one process — tests, benchmarks — stay separate.
 * Subsystems register their own metrics on `registry`.
 */
export class Metrics {
  readonly registry = new PromRegistry();
  /** Computed from `recordHttp`'s counts when read (a scrape, the status page). */
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  /** Counted on every run; `agent_invocations_total` is computed from its counts when read. */
  readonly agentInvocations: CheapCounter<'agent' | 'route' | 'outcome'>;
  readonly modelTokens: Counter<'agent' | 'model' | 'kind'>;
  readonly dropinReloads: Counter<'kind' | 'outcome'>;
  readonly dropinErrors: Gauge<'kind'>;
  readonly dropinHostRestarts: Counter<'kind' | 'name' | 'reason'>;
  /** route → method → status → series (`recordHttp`). */
  readonly #http = new Map<string, Map<string, Map<number, HttpSeries>>>();

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'hangar_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    const http = this.#http;
    const httpRequests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests by route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
      collect() {
        httpRequests.reset();
        for (const series of seriesOf(http)) httpRequests.inc(series.labels, series.count);
      },
    });
    this.httpRequests = httpRequests;
    this.registry.registerMetric(
      scrapedHistogram(
        'http_request_duration_seconds',
        'HTTP request duration by route pattern and status',
        HTTP_BUCKETS,
        () => seriesOf(http),
        () => http.clear(),
      ) as unknown as Metric,
    );
    this.agentInvocations = new CheapCounter(this.registry, {
      name: 'agent_invocations_total',
      help: 'Agent invocations by agent, route and outcome',
      labelNames: ['agent', 'route', 'outcome'],
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

  /**
   * Count one answered request for `http_requests_total` and `http_request_duration_seconds`.
   * Every response pays this, so it is a few map lookups and additions: prom-client's `inc` and
   * `observe` hash and check the labels on every call (about 2 % of a no-op /invoke's main thread,
   * #27); the series are turned into metrics when read.
   */
  recordHttp(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.#http.get(route);
    if (!byMethod) this.#http.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let series = byStatus.get(status);
    if (!series) {
      series = { labels: { method, route, status: String(status) }, count: 0, sum: 0, buckets: new Float64Array(HTTP_BUCKETS.length + 1) };
      byStatus.set(status, series);
    }
    series.count++;
    series.sum += seconds;
    series.buckets[bucketOf(HTTP_BUCKETS, seconds)]!++;
  }
}

/**
 * Series by their label values, one map level per label in `labelNames` order: what a metric that
 * every request or run pays looks up, where prom-client hashes and checks the labels on each call.
 */
class LabelTree<L extends string, S> {
  readonly #labelNames: readonly L[];
  readonly #root = new Map<string, unknown>();
  readonly #make: (labels: Record<L, string>) => S;
  /** Every series, in the order first seen (the order prom-client lists them in). */
  readonly series: S[] = [];

  constructor(labelNames: readonly L[], make: (labels: Record<L, string>) => S) {
    this.#labelNames = labelNames;
    this.#make = make;
  }

  get(labels: Record<L, string>): S {
    let level = this.#root;
    const names = this.#labelNames;
    const last = names.length - 1;
    for (let i = 0; i < last; i++) {
      const key = labels[names[i]!];
      let next = level.get(key) as Map<string, unknown> | undefined;
      if (!next) level.set(key, (next = new Map()));
      level = next;
    }
    const key = labels[names[last]!];
    let one = level.get(key) as S | undefined;
    if (one === undefined) {
      one = this.#make({ ...labels });
      level.set(key, one);
      this.series.push(one);
    }
    return one;
  }

  clear(): void {
    this.#root.clear();
    this.series.length = 0;
  }
}

/**
 * A counter incremented as prom-client's is (`inc(labels, value)`), for one every request or run
 * pays (see `LabelTree`). The prom-client counter registered under its name is filled from these
 * counts when read.
 */
export class CheapCounter<L extends string> {
  readonly #series: LabelTree<L, { labels: Record<L, string>; value: number }>;

  constructor(registry: PromRegistry, options: { name: string; help: string; labelNames: readonly L[] }) {
    const series = (this.#series = new LabelTree(options.labelNames, (labels) => ({ labels, value: 0 })));
    const counter: Counter<L> = new Counter<L>({
      name: options.name,
      help: options.help,
      labelNames: options.labelNames,
      registers: [registry],
      collect() {
        counter.reset();
        for (const one of series.series) counter.inc(one.labels, one.value);
      },
    });
  }

  inc(labels: Record<L, string>, value = 1): void {
    this.#series.get(labels).value += value;
  }
}

/**
 * A histogram observed as prom-client's is (`observe(labels, value)`), for one every request pays:
 * a label lookup (`LabelTree`), a bucket and two additions. It reads as prom-client's `Histogram`.
 */
export class CheapHistogram<L extends string> {
  readonly #bounds: readonly number[];
  readonly #series: LabelTree<L, HistogramSeries<Record<L, string>>>;

  constructor(registry: PromRegistry, options: { name: string; help: string; labelNames: readonly L[]; buckets: readonly number[] }) {
    const bounds = (this.#bounds = options.buckets);
    const series = (this.#series = new LabelTree(options.labelNames, (labels) => ({
      labels,
      count: 0,
      sum: 0,
      buckets: new Float64Array(bounds.length + 1),
    })));
    registry.registerMetric(
      scrapedHistogram(
        options.name,
        options.help,
        bounds,
        () => series.series,
        () => series.clear(),
      ) as unknown as Metric,
    );
  }

  observe(labels: Record<L, string>, value: number): void {
    const series = this.#series.get(labels);
    series.count++;
    series.sum += value;
    series.buckets[bucketOf(this.#bounds, value)]!++;
  }
}

function* seriesOf(http: Map<string, Map<string, Map<number, HttpSeries>>>): Generator<HttpSeries> {
  for (const byMethod of http.values()) for (const byStatus of byMethod.values()) yield* byStatus.values();
}

/**
 * A histogram over series counted here, registered as prom-client's own are: the values it
 * answers (`get` for JSON, `getForPromString` for the text format) are shaped as prom-client's
 * `Histogram` shapes them, so `/metrics` reads as it would had each observation called `observe`.
 */
function scrapedHistogram(
  name: string,
  help: string,
  bounds: readonly number[],
  seriesList: () => Iterable<HistogramSeries>,
  reset: () => void,
) {
  const values = () => {
    const out: Array<MetricValue<string> & { metricName: string; sharedLabels: Record<string, string>; exemplar?: null }> = [];
    for (const series of seriesList()) {
      let cumulative = 0;
      for (let i = 0; i < bounds.length; i++) {
        cumulative += series.buckets[i]!;
        out.push({
          labels: { le: bounds[i]! },
          sharedLabels: series.labels,
          value: cumulative,
          metricName: `${name}_bucket`,
          exemplar: null,
        });
      }
      out.push({ labels: { le: '+Inf' }, sharedLabels: series.labels, value: series.count, metricName: `${name}_bucket`, exemplar: null });
      out.push({ labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${name}_sum` });
      out.push({ labels: {}, sharedLabels: series.labels, value: series.count, metricName: `${name}_count` });
    }
    return out;
  };
  const shape = (items: unknown[]) => ({ name, help, type: 'histogram', values: items, aggregator: 'sum' });
  return {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    getForPromString: async () => shape(values()),
    get: async () => shape(values().map(({ sharedLabels, labels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } }))),
    reset,
  };
}

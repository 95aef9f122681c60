/**
 * The parts of prom-client Hangar uses, each imported from its own file. prom-client's index also
 * loads its Pushgateway (which requires node:https and node:zlib), its cluster aggregator and
 * Summary (tdigest): a start needs none of them, and node:zlib alone was ~4 ms of every start
 * (test/kernel/start-loads.test.ts checks a start does not load it). The types are the package's own.
 */

export type { Metric, MetricValue } from 'prom-client';
export { default as Counter } from 'prom-client/lib/counter.js';
export { default as collectDefaultMetrics } from 'prom-client/lib/defaultMetrics.js';
export { default as Gauge } from 'prom-client/lib/gauge.js';
export { default as Histogram } from 'prom-client/lib/histogram.js';
export { default as Registry } from 'prom-client/lib/registry.js';

/**
 * The parts of prom-client Hangar uses, each imported from its own file. prom-client's index also
 * loads its Pushgateway (which requires node:https and node:zlib), its cluster aggregator and
 * Summary (tdigest): a start needs none of them, and node:zlib alone was ~4 ms of every start
 * (test/kernel/start-loads.test.ts checks a start does not load it). The types are the package's own.
 */
import type * as Prom from 'prom-client';
import CounterClass from 'prom-client/lib/counter.js';
import collectDefault from 'prom-client/lib/defaultMetrics.js';
import GaugeClass from 'prom-client/lib/gauge.js';
import HistogramClass from 'prom-client/lib/histogram.js';
import RegistryClass from 'prom-client/lib/registry.js';

export type { Metric, MetricValue } from 'prom-client';

export const Counter = CounterClass as typeof Prom.Counter;
export type Counter<T extends string = string> = Prom.Counter<T>;
export const Gauge = GaugeClass as typeof Prom.Gauge;
export type Gauge<T extends string = string> = Prom.Gauge<T>;
export const Histogram = HistogramClass as typeof Prom.Histogram;
export type Histogram<T extends string = string> = Prom.Histogram<T>;
export const Registry = RegistryClass as typeof Prom.Registry;
export type Registry = Prom.Registry;
export const collectDefaultMetrics = collectDefault as typeof Prom.collectDefaultMetrics;

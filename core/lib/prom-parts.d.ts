// prom-client ships declarations for its index only; its files, as core/lib/prom.ts imports them.
declare module 'prom-client/lib/counter.js' {
  const Counter: unknown;
  export default Counter;
}
declare module 'prom-client/lib/gauge.js' {
  const Gauge: unknown;
  export default Gauge;
}
declare module 'prom-client/lib/histogram.js' {
  const Histogram: unknown;
  export default Histogram;
}
declare module 'prom-client/lib/registry.js' {
  const Registry: unknown;
  export default Registry;
}
declare module 'prom-client/lib/defaultMetrics.js' {
  const collectDefaultMetrics: unknown;
  export default collectDefaultMetrics;
}

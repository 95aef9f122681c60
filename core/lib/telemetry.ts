/**
 * Traces over OTLP/HTTP with the official OpenTelemetry SDK, or nothing at all.
 *
 * Off unless an endpoint is given: then `NO_TRACING` hands out one shared no-op span, so code
 * that traces costs a property read and nothing leaves the machine. With an endpoint, the SDK
 * and exporter are imported on first start (start-up never pays for them otherwise), spans are
 * batched and sent to `<endpoint>/v1/traces` (an endpoint already ending in `/v1/traces` is used
 * as is, as OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is), and `shutdown` flushes what is left.
 *
 * Parents are passed explicitly (`span.child(...)`), not through a global context manager: the
 * spans of concurrent runs never cross, and nothing global is registered.
 */

export type SpanAttributes = Record<string, string | number | boolean | string[] | undefined | null>;

export interface TraceSpan {
  /** Attributes with a null or undefined value are left out. */
  set(attributes: SpanAttributes): void;
  /** Marks the span failed with the error's message (`error.type` as the GenAI conventions ask). */
  fail(error: unknown, type?: string): void;
  end(): void;
  /** A span inside this one; `kind: 'client'` for calls that leave the process (model calls). */
  child(name: string, attributes?: SpanAttributes, kind?: 'internal' | 'client'): TraceSpan;
}

export interface Tracing {
  readonly enabled: boolean;
  /** A root span (a run that no other span contains). */
  start(name: string, attributes?: SpanAttributes, kind?: 'internal' | 'client'): TraceSpan;
  /** Sends every finished span now. */
  flush(): Promise<void>;
  /** Flushes and stops exporting. */
  shutdown(): Promise<void>;
}

const NOOP_SPAN: TraceSpan = {
  set() {},
  fail() {},
  end() {},
  child: () => NOOP_SPAN,
};

export const NO_TRACING: Tracing = {
  enabled: false,
  start: () => NOOP_SPAN,
  flush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
};

export interface OtlpOptions {
  endpoint: string;
  /** `http/protobuf` (the OTLP default, which every backend takes) or `http/json`. */
  protocol: 'http/protobuf' | 'http/json';
  headers: Record<string, string>;
  serviceName: string;
  serviceVersion?: string;
  /** Most milliseconds a finished span waits before its batch is sent (the SDK's default is 5 s). */
  batchDelayMs?: number;
}

/** The URL spans are posted to: the endpoint as a base, unless it names the traces path itself. */
export function tracesUrl(endpoint: string): string {
  const trimmed = endpoint.replace(/\/+$/, '');
  return trimmed.endsWith('/v1/traces') ? trimmed : `${trimmed}/v1/traces`;
}

export async function startTracing(options: OtlpOptions): Promise<Tracing> {
  const [api, sdk, resources] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
  ]);
  const { OTLPTraceExporter } =
    options.protocol === 'http/json'
      ? await import('@opentelemetry/exporter-trace-otlp-http')
      : await import('@opentelemetry/exporter-trace-otlp-proto');
  const exporter = new OTLPTraceExporter({ url: tracesUrl(options.endpoint), headers: options.headers });
  const provider = new sdk.TracerProvider({
    resource: resources.resourceFromAttributes({
      'service.name': options.serviceName,
      ...(options.serviceVersion ? { 'service.version': options.serviceVersion } : {}),
    }),
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter, scheduledDelayMillis: options.batchDelayMs ?? 5000 })],
  });
  const tracer = provider.getTracer('hangar');
  const kindOf = (kind: 'internal' | 'client' | undefined) => (kind === 'client' ? api.SpanKind.CLIENT : api.SpanKind.INTERNAL);

  const clean = (attributes: SpanAttributes | undefined) => {
    const out: Record<string, string | number | boolean | string[]> = {};
    if (attributes) for (const [key, value] of Object.entries(attributes)) if (value !== undefined && value !== null) out[key] = value;
    return out;
  };

  const wrap = (span: import('@opentelemetry/api').Span): TraceSpan => ({
    set: (attributes) => void span.setAttributes(clean(attributes)),
    fail(error, type) {
      const message = error instanceof Error ? error.message : String(error);
      span.setStatus({ code: api.SpanStatusCode.ERROR, message });
      span.setAttribute('error.type', type ?? (error instanceof Error ? error.name : 'error'));
    },
    end: () => span.end(),
    child: (name, attributes, kind) =>
      wrap(tracer.startSpan(name, { kind: kindOf(kind), attributes: clean(attributes) }, api.trace.setSpan(api.ROOT_CONTEXT, span))),
  });

  return {
    enabled: true,
    start: (name, attributes, kind) =>
      wrap(tracer.startSpan(name, { kind: kindOf(kind), attributes: clean(attributes) }, api.ROOT_CONTEXT)),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

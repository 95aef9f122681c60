/**
 * Result types shared by the fan-out, the routes, custom handlers and pipelines.
 */
import type { HttpMethod } from './schemas.js';

/**
 * How one upstream call ended. Also the `outcome` label of `platform_upstream_*` metrics, so the
 * set is closed: a label value can never carry text from a request or a secret.
 */
export type UpstreamOutcome = 'success' | 'http_error' | 'timeout' | 'network_error' | 'invalid_response' | 'config_error' | 'cancelled';

/** One upstream's part in a call: what the route returns in `upstreams` (never any data or secret). */
export interface UpstreamResult {
  name: string;
  /** True when the answer was 2xx, valid JSON and passed the response model. */
  ok: boolean;
  outcome: UpstreamOutcome;
  /** HTTP status of the last attempt; null when no answer arrived (timeout, refused, cancelled). */
  status: number | null;
  duration_ms: number;
  /** Attempts made (1 + retries). 0 when the call never started (config error, cancelled early). */
  attempts: number;
  /** Why it failed, secrets redacted; null on success. */
  error: string | null;
}

/** What an upstream call yields internally: the public result plus the validated data. */
export interface UpstreamCallResult extends UpstreamResult {
  data?: unknown;
}

/** The fan-out's three things (spec: success flag, aggregated value, per-upstream results). */
export interface FanOutResult<T = unknown> {
  success: boolean;
  /** null when the aggregation failed. */
  aggregated: T | null;
  upstreams: UpstreamResult[];
}

/** Options of `ctx.call` in a custom handler. */
export interface UpstreamCallOptions {
  /** Sent as the JSON body (write methods) or query parameters (GET/HEAD). Default: the endpoint's input. */
  input?: unknown;
  /** Overrides the upstream's method for this call. */
  method?: HttpMethod;
  /** Replaces the upstream's `path` for this call (may use `${NAME}`). */
  path?: string;
}

/** What a custom handler receives beside its validated input. */
export interface EndpointContext {
  readonly endpoint: string;
  /** The method the endpoint was called with. */
  readonly method: HttpMethod;
  /** Declared upstream names, in declaration order. */
  readonly upstreams: readonly string[];
  /** Aborted when the caller goes away. */
  readonly signal: AbortSignal;
  /**
   * Call one upstream (with its auth, timeout and retries) and return its validated JSON.
   * Throws `UpstreamCallError` when it fails; left uncaught, that becomes a 502 naming it.
   */
  call<T = unknown>(upstream: string, options?: UpstreamCallOptions): Promise<T>;
  /** Run the endpoint's own aggregation over every upstream (or the named ones); never throws. */
  fanOut<T = unknown>(input?: unknown, only?: readonly string[]): Promise<FanOutResult<T>>;
}

/** Thrown by `ctx.call` when the upstream failed; carries the public result. */
export class UpstreamCallError extends Error {
  readonly result: UpstreamResult;
  constructor(result: UpstreamResult) {
    super(`upstream '${result.name}' failed: ${result.error ?? result.outcome}`);
    this.name = 'UpstreamCallError';
    this.result = result;
  }
}

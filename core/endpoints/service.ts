/**
 * Custom endpoints as a service (no HTTP here): the catalogue of endpoints, the call of one endpoint
 * (validate input → custom handler or default fan-out → validate output), `/health` and `/info`.
 * Routes, pipelines and the task board all call `invoke`.
 * A custom handler's call is `handler.ts`; what an endpoint shows of itself (list, /info, OpenAPI
 * models, masked upstreams) is `describe.ts`.
 *
 * Where endpoints come from: drop-ins found by discovery (through `catalog`, which reads the
 * kernel's registry on every call, so a hot reload is seen by the next request) and definitions
 * registered in code with `register`. A code registration wins over a drop-in of the same name.
 *
 * Failure contract (spec: "not shown", decided here):
 * - input failing the request model → 422 naming the field (`query.days: …` for GET/HEAD);
 * - aggregation failed (ALL: any upstream failed; FIRST_SUCCESS/MAJORITY: none succeeded) → 502
 *   with body `{detail, success: false, aggregated: null, upstreams: [...]}`; `detail` names each
 *   failed upstream and why; every text is redacted of the secrets resolved during the call;
 *   504 with the same body when every upstream that failed timed out (gateways answer a silent
 *   upstream so: retrying later may help, unlike a wrong answer);
 * - an unknown endpoint → 404, a method it does not declare → 405 with `Allow`;
 * - a custom handler that lets an `UpstreamCallError` escape → the same 502; that throws an
 *   `HangarError` → that error; that throws anything else, or returns a value failing its `output`
 *   model → 500 (a bug in the handler, not in an upstream).
 */

import { performance } from 'node:perf_hooks';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { formatIssues, parseInput } from '../http/validate.js';
import { dropInUnavailable, fail, HangarError } from '../kernel/errors.js';
import type { DropInProblem } from '../kernel/registry.js';
import { PARSE_ONCE } from '../lib/parse-once.js';
import { Registry as PromRegistry } from '../lib/prom.js';
import { runAggregation } from './aggregate.js';
import { TokenCache } from './auth.js';
import {
  describeEndpoint,
  ENDPOINTS_PREFIX,
  endpointInfo,
  envelopeModelOf,
  outputModelOf,
  requiredVariables,
  routePath,
} from './describe.js';
import { runHandler } from './handler.js';
import type { EndpointHosts } from './hosts.js';
import { type Env, Redactor } from './interpolation.js';
import { type EndpointMetrics, type EndpointOutcome, endpointMetrics } from './metrics.js';
import { forwardToRouter, type RouterEndpoint, type RouterOutcome } from './router.js';
import { type EndpointConfig, EndpointDefinitionSchema, HTTP_METHODS, type HttpMethod, type UpstreamDefinition } from './schemas.js';
import type { FanOutResult, UpstreamCallOptions, UpstreamResult } from './types.js';
import { callUpstream, probeUpstream, type UpstreamDeps } from './upstream.js';

/** Definitions are frozen, so what they allow is worked out once per definition (see `allowedMethods`). */
const allowedByConfig = new WeakMap<EndpointConfig, readonly HttpMethod[]>();

/** Validate a definition (from a drop-in or code). Throws an Error naming the first bad fields. */
export function parseEndpointDefinition(definition: unknown): EndpointConfig {
  const result = EndpointDefinitionSchema.safeParse(definition, PARSE_ONCE);
  if (!result.success) throw new Error(formatIssues(result.error.issues, ''));
  return Object.freeze(result.data) as EndpointConfig;
}

/** Where drop-in endpoints are read from; the kernel's registry in the server. */
export interface EndpointCatalog {
  get(name: string): EndpointConfig | undefined;
  list(): EndpointConfig[];
  /** The load error of an endpoint whose file does not load, when the catalog knows it. */
  problem?(name: string): DropInProblem | undefined;
  /** Endpoint drop-ins that are express routers (router.ts); `get` and `list` never return them. */
  router?(name: string): RouterEndpoint | undefined;
  routers?(): RouterEndpoint[];
}

export interface EndpointLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
}

export interface EndpointServiceOptions {
  /** Where the endpoint metrics are registered (the server's /metrics registry). */
  metrics?: PromRegistry;
  catalog?: EndpointCatalog;
  /** Read on every call, never cached, so a rotated secret applies to the next request. */
  env?: () => Env;
  log?: EndpointLogger;
  /** Shared across endpoints: two upstreams with the same credentials share one token. */
  tokens?: TokenCache;
  /** Called after `register`/`unregister` (the server invalidates its OpenAPI document). */
  onChange?: () => void;
  /** Where drop-in handlers run (hosts.ts); without it every handler runs on this thread. */
  hosts?: EndpointHosts;
  /** `endpoints.timeoutMs`: a handler call's deadline unless the endpoint sets `timeout_ms`. Default 60 s. */
  timeoutMs?: number;
}

export interface InvokeOptions {
  /** Where the input came from; prefixes the field named in a 422. Default 'body'. */
  source?: 'body' | 'query';
  signal?: AbortSignal;
  /** Sent to every upstream as `X-Request-Id` (unless the upstream's own headers set one). */
  requestId?: string;
}

export interface EndpointSummary {
  name: string;
  description: string;
  version: string;
  path: string;
  /** Empty for a router: its routes are its own, not declared to Hangar. */
  methods: HttpMethod[];
  /** null for a router. */
  aggregation: EndpointConfig['aggregation'] | null;
  custom_handler: boolean;
  upstreams: string[];
  url: string;
  /** An express Router/app drop-in serving everything under `url` (router.ts). */
  router: boolean;
}

export interface UpstreamHealth {
  name: string;
  ready: boolean;
  status: number | null;
  duration_ms: number;
  error: string | null;
}

export interface EndpointHealth {
  name: string;
  ready: boolean;
  /** What `ready` required for this endpoint, in words (see `health`). */
  rule: string;
  checked_at: string;
  upstreams: UpstreamHealth[];
}

/**
 * Why a call failed past its input: the aggregation's rule and each failed upstream's reason
 * (already redacted), or the output model's complaint about the aggregated answer.
 */
export type FailureCause = { endpoint: string; rule: string; reasons: string } | { endpoint: string; problems: string };

/**
 * A 502 whose body also carries the per-upstream results; 504 when every upstream that failed
 * timed out (no answer in time, as a gateway reports it) rather than answering wrong.
 */
export class EndpointFailure extends HangarError {
  override name = 'EndpointFailure';
  readonly upstreams: UpstreamResult[];
  constructor(cause: FailureCause, upstreams: UpstreamResult[]) {
    const failed = upstreams.filter((u) => !u.ok && u.outcome !== 'cancelled');
    const timedOut = failed.length > 0 && failed.every((u) => u.outcome === 'timeout');
    const { status, detail, code } =
      'problems' in cause
        ? fail('HANGAR_ENDPOINT_OUTPUT_INVALID', cause)
        : fail(timedOut ? 'HANGAR_ENDPOINT_UPSTREAM_TIMEOUT' : 'HANGAR_ENDPOINT_UPSTREAM_FAILED', cause);
    super(status, detail, {}, { success: false, aggregated: null, upstreams }, code);
    this.upstreams = upstreams;
  }
}

export class EndpointService {
  readonly #own = new Map<string, EndpointConfig>();
  readonly #catalog?: EndpointCatalog;
  readonly #env: () => Env;
  readonly #log?: EndpointLogger;
  readonly #tokens: TokenCache;
  readonly #metrics: EndpointMetrics;
  readonly #onChange?: () => void;
  readonly #hosts?: EndpointHosts;
  readonly #timeoutMs: number;

  constructor(options: EndpointServiceOptions = {}) {
    this.#catalog = options.catalog;
    this.#hosts = options.hosts;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#onChange = options.onChange;
    this.#env = options.env ?? (() => process.env);
    this.#log = options.log;
    this.#tokens = options.tokens ?? new TokenCache();
    this.#metrics = endpointMetrics(options.metrics ?? new PromRegistry());
  }

  /** Register an endpoint in code. A second registration of a name needs `replace: true`. */
  register(definition: unknown, options: { replace?: boolean } = {}): EndpointConfig {
    const config = parseEndpointDefinition(definition);
    if (this.#own.has(config.name) && !options.replace) {
      throw new Error(`endpoint '${config.name}' is already registered`);
    }
    this.#own.set(config.name, config);
    this.#onChange?.();
    return config;
  }

  unregister(name: string): boolean {
    const removed = this.#own.delete(name);
    if (removed) this.#onChange?.();
    return removed;
  }

  get(name: string): EndpointConfig | undefined {
    return this.#own.get(name) ?? this.#catalog?.get(name);
  }

  /** Every endpoint, sorted by name. */
  all(): EndpointConfig[] {
    const byName = new Map<string, EndpointConfig>();
    for (const config of this.#catalog?.list() ?? []) byName.set(config.name, config);
    for (const config of this.#own.values()) byName.set(config.name, config);
    return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  list(): EndpointSummary[] {
    const summaries: EndpointSummary[] = this.all().map((config) => ({
      ...describeEndpoint(config),
      upstreams: config.upstreams.map((u) => u.name),
      url: routePath(config),
      router: false,
    }));
    for (const found of this.#catalog?.routers?.() ?? []) {
      // A code registration of the same name wins, as it does over a drop-in definition.
      if (this.#own.has(found.name)) continue;
      summaries.push({
        name: found.name,
        description: '',
        version: '',
        path: '/',
        methods: [],
        aggregation: null,
        custom_handler: true,
        upstreams: [],
        url: `${ENDPOINTS_PREFIX}/${found.name}`,
        router: true,
      });
    }
    return summaries.sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * The express router serving endpoint `name`, when that endpoint is a router drop-in (and no
   * code registration of the name overrides it).
   */
  router(name: string): RouterEndpoint | undefined {
    return this.#own.has(name) ? undefined : this.#catalog?.router?.(name);
  }

  /** Every router endpoint not overridden by a code registration, sorted by name. */
  routers(): RouterEndpoint[] {
    return (this.#catalog?.routers?.() ?? []).filter((found) => !this.#own.has(found.name)).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Count a router call in the endpoint metrics, as a declared endpoint's call is counted. */
  /**
   * Serve one request of an express-router endpoint: in its host (router-host.ts), or on this
   * thread when it is not a loaded drop-in or asks for `isolation: 'inline'` (router.ts).
   */
  serveRouter(router: RouterEndpoint, req: FastifyRequest, reply: FastifyReply, onDone: (outcome: RouterOutcome) => void): Promise<void> {
    const hosts = this.#hosts?.routers;
    if (hosts?.supervises(router)) return hosts.serve(router, req, reply, router.timeout_ms ?? this.#timeoutMs, onDone);
    return forwardToRouter(router, req, reply, onDone);
  }

  observeRouterCall(name: string, method: string, outcome: RouterOutcome, seconds: number): void {
    const labels = { endpoint: name, method: method.toUpperCase(), outcome };
    this.#metrics.endpointCalls.inc(labels);
    this.#metrics.endpointDuration.observe(labels, seconds);
  }

  /**
   * The endpoint; a 503 with the load error when its file does not load; a 409 when it is an
   * express router (reachable over HTTP only: there is no input model to call it with from a
   * pipeline, a task or /health); else a 404 naming it.
   */
  require(name: string): EndpointConfig {
    const config = this.get(name);
    if (!config) {
      if (this.router(name)) throw fail('HANGAR_ENDPOINT_IS_ROUTER', { endpoint: name, url: `${ENDPOINTS_PREFIX}/${name}` });
      const problem = this.#catalog?.problem?.(name);
      throw problem ? dropInUnavailable(problem) : fail('HANGAR_ENDPOINT_NOT_FOUND', { endpoint: name });
    }
    return config;
  }

  /** Validate `raw` against the endpoint's request model without calling it (422 naming the field). */
  checkInput(name: string, raw: unknown, where: string): void {
    const config = this.require(name);
    if (config.request) parseInput(config.request, raw, where);
  }

  /**
   * Methods the main route answers: the declared ones, plus HEAD wherever GET is declared (HTTP
   * semantics: a HEAD is a GET without the body, RFC 9110 §9.3.2).
   */
  allowedMethods(config: EndpointConfig): readonly HttpMethod[] {
    let allowed = allowedByConfig.get(config);
    if (!allowed) {
      const methods = new Set(config.methods);
      if (methods.has('GET')) methods.add('HEAD');
      allowed = Object.freeze(HTTP_METHODS.filter((m) => methods.has(m)));
      allowedByConfig.set(config, allowed);
    }
    return allowed;
  }

  /**
   * Call endpoint `name` with `rawInput` (a parsed JSON body, or the coerced query object).
   * Resolves with the fan-out result on success; throws the errors described at the top.
   */
  async invoke(name: string, method: string, rawInput: unknown, options: InvokeOptions = {}): Promise<FanOutResult> {
    const config = this.require(name);
    const verb = method.toUpperCase() as HttpMethod;
    const allowed = this.allowedMethods(config);
    if (!allowed.includes(verb)) {
      throw fail(
        'HANGAR_ENDPOINT_METHOD_NOT_ALLOWED',
        { endpoint: name, method: verb, allowed: allowed.join(', ') },
        { headers: { Allow: allowed.join(', ') } },
      );
    }
    const started = performance.now();
    const observe = (outcome: EndpointOutcome) => {
      const labels = { endpoint: name, method: verb, outcome };
      this.#metrics.endpointCalls.inc(labels);
      this.#metrics.endpointDuration.observe(labels, (performance.now() - started) / 1000);
    };

    let input: unknown;
    try {
      input = config.request ? parseInput(config.request, rawInput, options.source ?? 'body') : rawInput;
    } catch (err) {
      observe('invalid_input');
      throw err;
    }

    const env = this.#env();
    const redactor = this.#redactorFor(config, env);
    const deps: UpstreamDeps = { env, tokens: this.#tokens, metrics: this.#metrics, redactor };
    const signal = options.signal ?? new AbortController().signal;
    const call = (upstream: UpstreamDefinition, callSignal: AbortSignal, callInput: unknown, extra: UpstreamCallOptions = {}) =>
      callUpstream(
        {
          endpoint: name,
          upstream,
          // HEAD upstream would leave nothing to aggregate, so a HEAD call reads with GET.
          method: extra.method ?? upstream.method ?? (verb === 'HEAD' ? 'GET' : verb),
          input: callInput,
          path: extra.path,
          requestId: options.requestId,
          responseModel: upstream.response ?? config.response,
          signal: callSignal,
        },
        deps,
      );

    if (config.handler) {
      return runHandler(
        config,
        verb,
        input,
        signal,
        call,
        redactor,
        {
          observe,
          clientGone: () => this.#clientGone(observe),
          upstreamFailure: (recorded) => this.#failure(config, verb, recorded, options.requestId),
        },
        { deadlineMs: config.timeout_ms ?? this.#timeoutMs, hosts: this.#hosts },
      );
    }

    const result = await runAggregation(config.aggregation, config.upstreams, (u, s) => call(u, s, input), signal);
    if (signal.aborted) throw this.#clientGone(observe);
    if (!result.success) {
      observe('upstream_failure');
      throw this.#failure(config, verb, result.upstreams, options.requestId);
    }
    if (config.output) {
      const checked = config.output.safeParse(result.aggregated);
      if (!checked.success) {
        observe('upstream_failure');
        throw new EndpointFailure(
          { endpoint: name, problems: redactor.redact(formatIssues(checked.error.issues, 'aggregated')) },
          result.upstreams,
        );
      }
      result.aggregated = checked.data;
    }
    observe('success');
    return result;
  }

  /**
   * The caller went away mid-call (its signal aborted the upstream calls). Nobody will read an
   * answer, and the cancelled upstreams are not a failure worth a 502 and an error log line:
   * nginx's 499 "client closed request" says what happened and stays below the 5xx alarms.
   */
  #clientGone(observe: (outcome: EndpointOutcome) => void): HangarError {
    observe('cancelled');
    return fail('HANGAR_ENDPOINT_CLIENT_GONE', {});
  }

  /** A call's redactor, which knows the value of every `${NAME}` the endpoint references from the start. */
  #redactorFor(config: EndpointConfig, env: Env): Redactor {
    return new Redactor(() => requiredVariables(config).map((name) => env[name]));
  }

  #failure(config: EndpointConfig, verb: HttpMethod, upstreams: UpstreamResult[], requestId: string | undefined): EndpointFailure {
    const failed = upstreams.filter((u) => !u.ok && u.outcome !== 'cancelled');
    const reasons = failed.map((u) => `upstream '${u.name}' ${u.outcome}: ${u.error}`).join('; ');
    const rule =
      config.handler !== undefined
        ? 'custom handler: an upstream call failed'
        : config.aggregation === 'ALL'
          ? 'ALL needs every upstream'
          : `${config.aggregation} found no successful upstream`;
    const failure = new EndpointFailure({ endpoint: config.name, rule, reasons: reasons || 'no upstream answered' }, upstreams);
    // Already redacted per upstream; the log gets exactly what the client gets.
    this.#log?.warn('endpoint call failed', { endpoint: config.name, method: verb, request_id: requestId, detail: failure.detail });
    return failure;
  }

  /**
   * Readiness of an endpoint. Each upstream is probed (see `probeUpstream`: variables resolve,
   * credentials obtainable, the host answers within min(timeout_ms, 5 s)). The endpoint is ready
   * when the probes would let its aggregation succeed: ALL needs every upstream ready;
   * FIRST_SUCCESS and MAJORITY need at least one. An endpoint without upstreams (a handler doing
   * local work) is always ready.
   */
  async health(name: string, signal: AbortSignal = new AbortController().signal): Promise<EndpointHealth> {
    const config = this.require(name);
    const env = this.#env();
    const deps: UpstreamDeps = { env, tokens: this.#tokens, metrics: this.#metrics, redactor: this.#redactorFor(config, env) };
    const upstreams = await Promise.all(config.upstreams.map((u) => probeUpstream(name, u, deps, signal)));
    const readyCount = upstreams.filter((u) => u.ready).length;
    let ready: boolean;
    let rule: string;
    if (upstreams.length === 0) {
      ready = true;
      rule = 'no upstreams: always ready';
    } else if (config.aggregation === 'ALL') {
      ready = readyCount === upstreams.length;
      rule = 'ALL: every upstream must be ready';
    } else {
      ready = readyCount > 0;
      rule = `${config.aggregation}: at least one upstream must be ready`;
    }
    return { name, ready, rule, checked_at: new Date().toISOString(), upstreams };
  }

  /** The supervised hosts of drop-in handlers, as `/api/v1/status` lists them. */
  hostStatus() {
    return this.#hosts?.status() ?? [];
  }

  /** Stop the handlers' host threads (the server is closing). */
  async close(): Promise<void> {
    await this.#hosts?.close();
  }

  /** Metadata for `/info` (see `endpointInfo`). */
  info(name: string): Record<string, unknown> {
    return endpointInfo(this.require(name));
  }

  /** The model of `aggregated` (see `outputModelOf`). */
  outputModel(config: EndpointConfig): z.ZodType {
    return outputModelOf(config);
  }

  /** The route's response body: the fan-out envelope around the output model. */
  envelopeModel(config: EndpointConfig): z.ZodType {
    return envelopeModelOf(config);
  }
}

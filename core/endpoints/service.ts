/**
 * Custom endpoints as a service (no HTTP here): the catalogue of endpoints, the call of one endpoint
 * (validate input → custom handler or default fan-out → validate output), `/health` and `/info`.
 * Routes, pipelines and the task board all call `invoke`.
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
 *   `HttpError` → that error; that throws anything else, or returns a value failing its `output`
 *   model → 500 (a bug in the handler, not in an upstream).
 */
import { performance } from 'node:perf_hooks';
import { Registry as PromRegistry } from 'prom-client';
import { z } from 'zod';
import { dropInUnavailable, HttpError, errorMessage, internalError, notFound } from '../http/errors.js';
import type { DropInProblem } from '../kernel/registry.js';
import { runErrorFields } from '../kernel/stack.js';
import { formatIssues, parseInput } from '../http/validate.js';
import { publicResult, runAggregation } from './aggregate.js';
import { TokenCache } from './auth.js';
import { Redactor, referencedVariables, type Env } from './interpolation.js';
import { endpointMetrics, type EndpointMetrics, type EndpointOutcome } from './metrics.js';
import { EndpointDefinitionSchema, HTTP_METHODS, type EndpointConfig, type HttpMethod, type UpstreamDefinition } from './schemas.js';
import type { RouterEndpoint, RouterOutcome } from './router.js';
import { callUpstream, probeUpstream, type UpstreamDeps } from './upstream.js';
import {
  UpstreamCallError,
  type EndpointContext,
  type FanOutResult,
  type UpstreamCallOptions,
  type UpstreamCallResult,
  type UpstreamResult,
} from './types.js';

export const ENDPOINTS_PREFIX = '/api/v1/endpoints';

/** Definitions are frozen, so what they allow is worked out once per definition (see `allowedMethods`). */
const allowedByConfig = new WeakMap<EndpointConfig, readonly HttpMethod[]>();

/** Validate a definition (from a drop-in or code). Throws an Error naming the first bad fields. */
export function parseEndpointDefinition(definition: unknown): EndpointConfig {
  const result = EndpointDefinitionSchema.safeParse(definition);
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

/** What an endpoint is, as the list and `/info` both show it. */
function describeEndpoint(config: EndpointConfig) {
  return {
    name: config.name,
    description: config.description,
    version: config.version,
    path: config.path,
    methods: config.methods,
    aggregation: config.aggregation,
    custom_handler: config.handler !== undefined,
  };
}

/**
 * A 502 whose body also carries the per-upstream results; 504 when every upstream that failed
 * timed out (no answer in time, as a gateway reports it) rather than answering wrong.
 */
export class EndpointFailure extends HttpError {
  readonly upstreams: UpstreamResult[];
  constructor(detail: string, upstreams: UpstreamResult[]) {
    const failed = upstreams.filter((u) => !u.ok && u.outcome !== 'cancelled');
    super(failed.length > 0 && failed.every((u) => u.outcome === 'timeout') ? 504 : 502, detail);
    this.name = 'EndpointFailure';
    this.upstreams = upstreams;
  }
  override toBody(): { detail: string; success: false; aggregated: null; upstreams: UpstreamResult[] } {
    return { detail: this.detail as string, success: false, aggregated: null, upstreams: this.upstreams };
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

  constructor(options: EndpointServiceOptions = {}) {
    this.#catalog = options.catalog;
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
      if (this.router(name)) {
        throw new HttpError(409, `endpoint '${name}' is an express router: call its routes over HTTP (${ENDPOINTS_PREFIX}/${name}/…)`);
      }
      const problem = this.#catalog?.problem?.(name);
      throw problem ? dropInUnavailable(problem) : notFound(`endpoint '${name}' not found`);
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
   * Resolves with the fan-out result on success; throws the HttpErrors described at the top.
   */
  async invoke(name: string, method: string, rawInput: unknown, options: InvokeOptions = {}): Promise<FanOutResult> {
    const config = this.require(name);
    const verb = method.toUpperCase() as HttpMethod;
    const allowed = this.allowedMethods(config);
    if (!allowed.includes(verb)) {
      throw new HttpError(405, `endpoint '${name}' does not accept ${verb}; allowed: ${allowed.join(', ')}`, {
        Allow: allowed.join(', '),
      });
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

    if (config.handler) return this.#runHandler(config, verb, input, signal, call, redactor, observe, options.requestId);

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
          redactor.redact(`endpoint '${name}': aggregated answer fails the output model: ${formatIssues(checked.error.issues, 'aggregated')}`),
          result.upstreams,
        );
      }
      result.aggregated = checked.data;
    }
    observe('success');
    return result;
  }

  async #runHandler(
    config: EndpointConfig,
    verb: HttpMethod,
    input: unknown,
    signal: AbortSignal,
    call: (u: UpstreamDefinition, s: AbortSignal, i: unknown, extra?: UpstreamCallOptions) => Promise<UpstreamCallResult>,
    redactor: Redactor,
    observe: (outcome: EndpointOutcome) => void,
    requestId: string | undefined,
  ): Promise<FanOutResult> {
    // Results of every upstream call the handler makes, in the order they finish.
    const recorded: UpstreamResult[] = [];
    const find = (upstream: string) => {
      const found = config.upstreams.find((u) => u.name === upstream);
      if (!found) {
        throw new Error(`unknown upstream '${upstream}' (declared: ${config.upstreams.map((u) => u.name).join(', ') || 'none'})`);
      }
      return found;
    };
    const ctx: EndpointContext = {
      endpoint: config.name,
      method: verb,
      upstreams: config.upstreams.map((u) => u.name),
      signal,
      call: async <T>(upstream: string, options: UpstreamCallOptions = {}): Promise<T> => {
        const result = await call(find(upstream), signal, 'input' in options ? options.input : input, options);
        recorded.push(publicResult(result));
        if (!result.ok) throw new UpstreamCallError(publicResult(result));
        return result.data as T;
      },
      fanOut: async <T>(fanInput: unknown = input, only?: readonly string[]): Promise<FanOutResult<T>> => {
        const upstreams = only ? only.map(find) : config.upstreams;
        const result = await runAggregation(config.aggregation, upstreams, (u, s) => call(u, s, fanInput), signal);
        recorded.push(...result.upstreams);
        return result as FanOutResult<T>;
      },
    };
    let value: unknown;
    try {
      value = await config.handler!(input as never, ctx as never);
    } catch (err) {
      if (signal.aborted) throw this.#clientGone(observe);
      if (err instanceof UpstreamCallError) {
        observe('upstream_failure');
        throw this.#failure(config, verb, recorded, requestId);
      }
      observe('handler_error');
      if (err instanceof HttpError) throw redactedHttpError(err, redactor);
      // Where the handler threw, mapped to the person's file (core/kernel/stack.ts), as agent runs answer.
      throw new HttpError(500, redactor.redact(`endpoint '${config.name}' handler failed: ${errorMessage(err)}`), {}, {
        error: redactor.redact(errorMessage(err)),
        ...runErrorFields(err),
      });
    }
    if (config.output) {
      const checked = config.output.safeParse(value);
      if (!checked.success) {
        observe('handler_error');
        throw internalError(
          redactor.redact(`endpoint '${config.name}' handler returned a value failing its output model: ${formatIssues(checked.error.issues, 'output')}`),
        );
      }
      value = checked.data;
    }
    observe('success');
    return { success: true, aggregated: value ?? null, upstreams: recorded };
  }

  /**
   * The caller went away mid-call (its signal aborted the upstream calls). Nobody will read an
   * answer, and the cancelled upstreams are not a failure worth a 502 and an error log line:
   * nginx's 499 "client closed request" says what happened and stays below the 5xx alarms.
   */
  #clientGone(observe: (outcome: EndpointOutcome) => void): HttpError {
    observe('cancelled');
    return new HttpError(499, 'client closed the request');
  }

  /** A call's redactor, which knows the value of every `${NAME}` the endpoint references from the start. */
  #redactorFor(config: EndpointConfig, env: Env): Redactor {
    return new Redactor(() => requiredVariables(config).map((name) => env[name]));
  }

  #failure(config: EndpointConfig, verb: HttpMethod, upstreams: UpstreamResult[], requestId: string | undefined): EndpointFailure {
    const failed = upstreams.filter((u) => !u.ok && u.outcome !== 'cancelled');
    const reasons = failed.map((u) => `upstream '${u.name}' ${u.outcome}: ${u.error}`).join('; ');
    const what =
      config.handler !== undefined
        ? 'custom handler: an upstream call failed'
        : config.aggregation === 'ALL'
          ? 'ALL needs every upstream'
          : `${config.aggregation} found no successful upstream`;
    const detail = `endpoint '${config.name}' failed (${what}): ${reasons || 'no upstream answered'}`;
    // Already redacted per upstream; the log gets exactly what the client gets.
    this.#log?.warn('endpoint call failed', { endpoint: config.name, method: verb, request_id: requestId, detail });
    return new EndpointFailure(detail, upstreams);
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

  /**
   * Metadata for `/info`: what the endpoint is, its routes, its upstreams without any credential
   * (not even the template), the names of the environment variables it needs, and its schemas.
   */
  info(name: string): Record<string, unknown> {
    const config = this.require(name);
    return {
      ...describeEndpoint(config),
      routes: {
        main: routePath(config),
        health: `${ENDPOINTS_PREFIX}/${config.name}/health`,
        info: `${ENDPOINTS_PREFIX}/${config.name}/info`,
      },
      env: requiredVariables(config),
      upstreams: config.upstreams.map(describeUpstream),
      input_schema: jsonSchemaOf(config.request, 'input'),
      output_schema: jsonSchemaOf(this.outputModel(config), 'output'),
    };
  }

  /**
   * The model of `aggregated`: `output` when given; otherwise, for the default handler, derived
   * from `response` (ALL → one field per upstream; FIRST_SUCCESS/MAJORITY → `response`), and
   * anything for a custom handler.
   */
  outputModel(config: EndpointConfig): z.ZodType {
    if (config.output) return config.output;
    if (config.handler) return z.unknown();
    const one = config.response ?? z.unknown();
    if (config.aggregation === 'ALL') return z.object(Object.fromEntries(config.upstreams.map((u) => [u.name, one])));
    return one;
  }

  /** The route's response body: the fan-out envelope around the output model. */
  envelopeModel(config: EndpointConfig): z.ZodType {
    return z.object({
      success: z.boolean(),
      aggregated: this.outputModel(config).nullable(),
      upstreams: z.array(UpstreamResultModel),
    });
  }
}

/** Published in OpenAPI and /info; mirrors `UpstreamResult`. */
export const UpstreamResultModel = z.object({
  name: z.string(),
  ok: z.boolean(),
  outcome: z.enum(['success', 'http_error', 'timeout', 'network_error', 'invalid_response', 'config_error', 'cancelled']),
  status: z.number().int().nullable(),
  duration_ms: z.number(),
  attempts: z.number().int(),
  error: z.string().nullable(),
});

export function routePath(config: EndpointConfig): string {
  return `${ENDPOINTS_PREFIX}/${config.name}${config.path === '/' ? '' : config.path}`;
}

function jsonSchemaOf(model: z.ZodType | undefined, io: 'input' | 'output'): unknown {
  if (!model) return {};
  try {
    const schema = z.toJSONSchema(model, { io, unrepresentable: 'any' }) as Record<string, unknown>;
    delete schema.$schema;
    return schema;
  } catch {
    return {};
  }
}

/** An HttpError a handler threw, with every secret of the call masked in its detail. */
function redactedHttpError(err: HttpError, redactor: Redactor): HttpError {
  const { detail, ...fields } = JSON.parse(redactor.redact(JSON.stringify(err.toBody()))) as { detail: HttpError['detail'] } & Record<string, unknown>;
  return new HttpError(err.status, detail, err.headers, fields);
}

/** Names (never values) of every `${NAME}` the endpoint's upstreams use. */
export function requiredVariables(config: EndpointConfig): string[] {
  const names = new Set<string>();
  const visit = (value: unknown) => {
    if (typeof value === 'string') referencedVariables(value).forEach((n) => names.add(n));
  };
  for (const u of config.upstreams) {
    // Only the template fields: a zod model in `response` is no place to look (and may be cyclic).
    [u.base_url, u.path, u.health_path, ...Object.values(u.headers)].forEach(visit);
    if (u.auth) Object.values(u.auth).forEach(visit);
  }
  return [...names].sort();
}

/**
 * An upstream as /info shows it. Credentials are left out entirely; URL templates are shown as
 * written (the values of `${NAME}` are not known here) with any inline userinfo or query value
 * masked, since a literal key in a URL is as secret as one in `auth`.
 */
function describeUpstream(u: UpstreamDefinition): Record<string, unknown> {
  const auth = u.auth;
  let authInfo: Record<string, unknown> | null = null;
  if (auth) {
    switch (auth.type) {
      case 'API_KEY':
        authInfo = { type: auth.type, header_name: auth.header_name, header_prefix: auth.header_prefix };
        break;
      case 'BEARER':
      case 'BASIC':
        authInfo = { type: auth.type };
        break;
      case 'OAUTH2_CLIENT_CREDENTIALS':
        authInfo = {
          type: auth.type,
          token_url: maskUrl(auth.token_url),
          scope: auth.scope ?? null,
          audience: auth.audience ?? null,
          token_leeway_ms: auth.token_leeway,
          client_auth: auth.client_auth,
        };
        break;
    }
  }
  return {
    name: u.name,
    base_url: maskUrl(u.base_url),
    path: maskUrl(u.path),
    method: u.method ?? null,
    weight: u.weight,
    timeout_ms: u.timeout_ms,
    retries: u.retries,
    retry_backoff_ms: u.retry_backoff_ms,
    retry_max_backoff_ms: u.retry_max_backoff_ms,
    retry_non_idempotent: u.retry_non_idempotent,
    header_names: Object.keys(u.headers),
    health_path: u.health_path ?? null,
    auth: authInfo,
  };
}

/** `https://user:pw@h/p?key=abc&v=${V}` → `https://***@h/p?key=***&v=${V}`. */
export function maskUrl(template: string): string {
  return template
    .replace(/\/\/[^/@]+@/, '//***@')
    .replace(/([?&][^=&#]+=)([^&#]*)/g, (_, key: string, value: string) => (/^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(value) ? key + value : `${key}***`));
}

/**
 * The shape of a custom endpoint (spec document 2), checked with zod when a drop-in is discovered or
 * an endpoint is registered in code — so a typo shows as a drop-in error, not as a failing request.
 *
 * Decisions where the spec says "not shown" (each default is also in the field's doc comment):
 * - API_KEY: `header_name` defaults to `X-API-Key`, `header_prefix` to `''` (no prefix). A prefix
 *   is sent with one space after it (`Token abc`) unless it already ends with a space or a colon.
 * - Per-upstream limits: `timeout_ms` (10 000, per attempt), `retries` (2 for idempotent methods,
 *   counted after the first attempt), `retry_backoff_ms` (100, doubled each retry, ±50 % jitter),
 *   `retry_max_backoff_ms` (5 000, also the longest Retry-After we wait for), `retry_non_idempotent`
 *   (false: POST/PATCH are never retried unless this is set, since a replay could act twice).
 * - `method` of an upstream defaults to the method the endpoint was called with (HEAD → GET, since
 *   the answer must be read to be aggregated).
 * - OAuth2: `token_leeway` defaults to 30 s; the client authenticates with HTTP Basic
 *   (`client_auth: 'basic'`, RFC 6749 §2.3.1) or in the form body (`'body'`); a token response
 *   without `expires_in` is cached for 300 s.
 * - `${NAME}` references are allowed in every string an upstream is built from — base_url, path,
 *   headers, health_path and every auth string — and resolved per request (interpolation.ts).
 *   Names (endpoint, upstream) and the endpoint's own path are literal: they become routes, result
 *   keys and metric labels, which must never carry an environment value.
 * - Paths are literal (no `:param` segments): the spec gives the input through the body or the
 *   query only, and a literal path keeps `/health` and `/info` unambiguous.
 */
import { z } from 'zod';

export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** Methods a replay cannot harm (RFC 9110 §9.2.2); only these are retried by default. */
export const IDEMPOTENT_METHODS: ReadonlySet<HttpMethod> = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);

/** Methods whose input arrives as query parameters rather than a JSON body (spec rule 2). */
export const QUERY_METHODS: ReadonlySet<HttpMethod> = new Set(['GET', 'HEAD']);

export const AGGREGATIONS = ['ALL', 'FIRST_SUCCESS', 'MAJORITY'] as const;
export type Aggregation = (typeof AGGREGATIONS)[number];

/** Endpoint names follow the agent rule (lowercase route segments). */
export const ENDPOINT_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const UPSTREAM_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** A literal name: used as a route segment, a result key and a metric label, so never `${ENV}`. */
const Name = (what: string, pattern: RegExp) =>
  z
    .string()
    .regex(
      pattern,
      `${what} must be ${pattern === ENDPOINT_NAME ? 'lowercase ' : ''}letters, digits, '-' or '_', starting with a letter or digit`,
    );

/**
 * A duration: a number of seconds, or a string such as `500ms`, `30s`, `2m`, `1h`.
 * Parsed to milliseconds.
 */
export const Duration = z.union([z.number().nonnegative(), z.string()]).transform((value, ctx) => {
  if (typeof value === 'number') return Math.round(value * 1000);
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(value);
  if (!match) {
    ctx.addIssue({ code: 'custom', message: `not a duration: expected e.g. "30s", "500ms", "2m" or a number of seconds` });
    return z.NEVER;
  }
  const unit = match[2] ?? 's';
  const factor = unit === 'ms' ? 1 : unit === 's' ? 1000 : unit === 'm' ? 60_000 : 3_600_000;
  return Math.round(Number(match[1]) * factor);
});

/** Strings below may hold `${NAME}` references; they are kept as written and resolved per request. */
const Template = z.string();

/** Duck-typed so a model from another copy of zod (a bundled drop-in) is still accepted. */
export const ZodModel = z.custom<z.ZodType>(
  (value) =>
    typeof value === 'object' && value !== null && '_zod' in value && typeof (value as { safeParse?: unknown }).safeParse === 'function',
  { message: 'expected a zod schema (z.object({...}))' },
);

export const ApiKeyAuth = z.object({
  type: z.literal('API_KEY'),
  api_key: Template,
  /** Header carrying the key. Default `X-API-Key`. */
  header_name: Template.default('X-API-Key'),
  /** Text before the key, e.g. `Token`. Default `''` = the key alone. */
  header_prefix: Template.default(''),
});

export const BearerAuth = z.object({
  type: z.literal('BEARER'),
  api_key: Template,
});

export const BasicAuth = z.object({
  type: z.literal('BASIC'),
  username: Template,
  password: Template,
});

export const OAuth2ClientCredentialsAuth = z.object({
  type: z.literal('OAUTH2_CLIENT_CREDENTIALS'),
  token_url: Template,
  client_id: Template,
  client_secret: Template,
  scope: Template.optional(),
  audience: Template.optional(),
  /** Refresh a cached token this long before it expires. Default 30 s. */
  token_leeway: Duration.default(30),
  /** How the client authenticates to the token endpoint. Default `basic` (RFC 6749 §2.3.1). */
  client_auth: z.enum(['basic', 'body']).default('basic'),
});

export const UpstreamAuth = z.discriminatedUnion('type', [ApiKeyAuth, BearerAuth, BasicAuth, OAuth2ClientCredentialsAuth]);
export type UpstreamAuth = z.output<typeof UpstreamAuth>;
export type OAuth2Auth = z.output<typeof OAuth2ClientCredentialsAuth>;

export const UpstreamDefinition = z.object({
  /** Key in aggregated results and the `upstream` metric label. */
  name: Name('upstream name', UPSTREAM_NAME),
  /** e.g. `https://api.example.com/v1` or `${WEATHER_URL}`. */
  base_url: Template,
  /** Appended to base_url. Default `''`. */
  path: Template.default(''),
  /** Method used upstream. Default: the method the endpoint was called with (HEAD → GET). */
  method: z
    .string()
    .transform((m) => m.toUpperCase())
    .pipe(z.enum(HTTP_METHODS))
    .optional(),
  /** Extra request headers; values may use `${NAME}`. */
  headers: z.record(z.string(), Template).default({}),
  auth: UpstreamAuth.optional(),
  /** Vote weight for MAJORITY. Default 1. */
  weight: z.number().positive().default(1),
  /** Per-attempt timeout. Default 10 000 ms. */
  timeout_ms: z.number().int().positive().default(10_000),
  /** Retries after the first attempt. Default 2 (applied to idempotent methods only, see below). */
  retries: z.number().int().min(0).max(10).default(2),
  /** First backoff delay, doubled per retry with ±50 % jitter. Default 100 ms. */
  retry_backoff_ms: z.number().int().min(0).default(100),
  /** Cap on one backoff delay and on the Retry-After we are willing to wait. Default 5 000 ms. */
  retry_max_backoff_ms: z.number().int().min(0).default(5_000),
  /** Also retry POST/PATCH. Default false: replaying a non-idempotent call may act twice. */
  retry_non_idempotent: z.boolean().default(false),
  /**
   * Path probed by `/health`; when set the probe must answer 2xx. Without it the probe is a GET on
   * base_url + path and any answer below 500 except 401/403 counts as ready (a 404 or 405 there
   * still proves the host is up and did not reject our credentials).
   */
  health_path: Template.optional(),
  /** Model of this upstream's answer, in place of the endpoint's `response` (upstreams of a custom handler often differ). */
  response: ZodModel.optional(),
});
export type UpstreamDefinition = z.output<typeof UpstreamDefinition>;
export type UpstreamDefinitionInput = z.input<typeof UpstreamDefinition>;

export const EndpointHandlerFn = z.custom<(...args: never[]) => unknown>((value) => typeof value === 'function', {
  message: 'expected a function (input, ctx) => output',
});

export const EndpointDefinitionSchema = z
  .object({
    /** Route segment under /api/v1/endpoints. Drop-ins default it to the file name. */
    name: Name('endpoint name', ENDPOINT_NAME),
    description: z.string().default(''),
    version: z.string().default('0.0.0'),
    /** Route path of the main operation, e.g. `/forecast`. Default `/`. */
    path: z
      .string()
      .default('/')
      .refine((p) => p.startsWith('/'), 'path must start with "/"')
      .refine((p) => !/[:*?(){}]/.test(p), 'path must be literal (no :params, wildcards or groups)')
      .transform((p) => (p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p)),
    /** Default `['POST']` (spec rule 1). */
    methods: z
      .array(
        z
          .string()
          .transform((m) => m.toUpperCase())
          .pipe(z.enum(HTTP_METHODS)),
      )
      .min(1)
      .default(['POST'])
      .transform((ms) => [...new Set(ms)]),
    aggregation: z.enum(AGGREGATIONS).default('ALL'),
    upstreams: z.array(UpstreamDefinition).default([]),
    /** Validated input (JSON body, or query parameters for GET/HEAD). */
    request: ZodModel.optional(),
    /** Model of one upstream's answer; an upstream whose JSON fails it counts as failed. */
    response: ZodModel.optional(),
    /** Model of the aggregated value. Default derived from `response` and the aggregation. */
    output: ZodModel.optional(),
    /** Custom logic in place of the default fan-out. */
    handler: EndpointHandlerFn.optional(),
    /** Deadline of a handler's call (default: the `endpoints.timeoutMs` setting); past it the call answers 504. */
    timeout_ms: z.number().int().positive().max(86_400_000).optional(),
    /** Heap cap (MB) of the handler's host thread (default: the `endpoints.maxHeapMb` setting). */
    max_heap_mb: z.number().int().min(16).max(65_536).optional(),
    /**
     * `'inline'` runs the handler on the server's thread (a trusted handler on a hot path): nothing
     * then stops a synchronous loop in it. Default: supervised, in the endpoint's own host.
     */
    isolation: z.enum(['supervised', 'inline']).optional(),
  })
  .superRefine((def, ctx) => {
    const seen = new Set<string>();
    def.upstreams.forEach((u, i) => {
      if (seen.has(u.name))
        ctx.addIssue({ code: 'custom', path: ['upstreams', i, 'name'], message: `duplicate upstream name '${u.name}'` });
      seen.add(u.name);
    });
    if (!def.handler && def.upstreams.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['upstreams'], message: 'an endpoint without a handler needs at least one upstream' });
    }
    if (def.path === '/health' || def.path === '/info') {
      ctx.addIssue({
        code: 'custom',
        path: ['path'],
        message: `path '${def.path}' is reserved for the endpoint's own ${def.path.slice(1)} route`,
      });
    }
  });

export type EndpointConfig = z.output<typeof EndpointDefinitionSchema>;

/** One entry of `GET /api/v1/endpoints` (`EndpointSummary`, service.ts). */
export const EndpointSummaryModel = z.object({
  name: z.string(),
  description: z.string(),
  version: z.string(),
  path: z.string(),
  methods: z.array(z.string()),
  aggregation: z.enum(['ALL', 'FIRST_SUCCESS', 'MAJORITY']).nullable(),
  custom_handler: z.boolean(),
  upstreams: z.array(z.string()),
  url: z.string(),
  router: z.boolean(),
});

/** Read only by the list route and /openapi.json: built on first use (`z.lazy`, core/http/route.ts). */
export const EndpointList = z.lazy(() => z.object({ endpoints: z.array(EndpointSummaryModel) }));

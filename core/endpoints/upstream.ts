/**
 * One upstream call: resolve the definition's `${NAME}` references, authenticate, send, retry, read
 * and validate the JSON answer. It never throws: every way of failing becomes an `UpstreamCallResult`
 * with an outcome and a redacted error, so one bad upstream is reported, not a crash.
 *
 * Retry policy (defaults in schemas.ts):
 * - retried: network errors, per-attempt timeouts, and HTTP 408, 425, 429, 500, 502, 503, 504;
 * - only for idempotent methods (GET, HEAD, PUT, DELETE) unless `retry_non_idempotent` is set;
 * - delay before retry n (1-based) is `retry_backoff_ms · 2^(n-1)`, capped at
 *   `retry_max_backoff_ms`, then scaled by a random factor in [0.5, 1.5) so callers that failed
 *   together do not retry together;
 * - a `Retry-After` header (seconds or HTTP date) replaces the computed delay; when it asks for more
 *   than `retry_max_backoff_ms` we stop and report the failure rather than hold the caller;
 * - the per-attempt timeout covers reading the body too (a server that sends headers and stalls is
 *   cut like one that never answers);
 * - a 401 on an OAuth2 upstream drops the cached token and repeats the request once with a fresh
 *   one; that repeat is not counted as a retry;
 * - an OAuth2 token server that cannot be reached (refused, reset, timed out, or 408/425/429/5xx)
 *   is a `network_error` (`timeout`) of the upstream, retried up to `retries` whatever the method,
 *   since nothing reached the upstream; a token request the server refuses (bad credentials) is a
 *   `config_error`, not retried.
 */
import http from 'node:http';
import type https from 'node:https';
import { performance } from 'node:perf_hooks';
import type { z } from 'zod';
import { REQUEST_ID_HEADER } from '../http/request.js';
import { formatIssues } from '../http/validate.js';
import { errorMessage } from '../kernel/errors.js';
import {
  describeNetworkError,
  type ResolvedAuth,
  type ResolvedOAuth2,
  resolveAuth,
  staticAuthHeaders,
  type TokenCache,
  TokenRequestError,
} from './auth.js';
import { type Env, interpolate, MissingEnvError, type Redactor } from './interpolation.js';
import type { EndpointMetrics } from './metrics.js';
import { type HttpMethod, IDEMPOTENT_METHODS, QUERY_METHODS, type UpstreamDefinition } from './schemas.js';
import type { UpstreamCallResult, UpstreamOutcome } from './types.js';

const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);
/** How much of an error body is quoted in the error (after redaction). */
const ERROR_SNIPPET_CHARS = 200;

export interface UpstreamDeps {
  env: Env;
  tokens: TokenCache;
  metrics: EndpointMetrics;
  redactor: Redactor;
  /** Injected for tests of the backoff; default Math.random. */
  random?: () => number;
}

export interface UpstreamRequest {
  endpoint: string;
  upstream: UpstreamDefinition;
  method: HttpMethod;
  input: unknown;
  /** Replaces `upstream.path` (custom handlers). */
  path?: string;
  /** Forwarded as `X-Request-Id`; the upstream's configured headers may override it. */
  requestId?: string;
  /** Each upstream answer must pass it; failures are `invalid_response`. */
  responseModel?: z.ZodType;
  signal: AbortSignal;
}

/** A request ready to send: URL and headers resolved, auth pending (tokens may be refreshed). */
interface Prepared {
  url: URL;
  headers: Record<string, string>;
  body?: string;
  auth?: ResolvedAuth;
}

export async function callUpstream(req: UpstreamRequest, deps: UpstreamDeps): Promise<UpstreamCallResult> {
  const started = performance.now();
  const { upstream, endpoint, method } = req;
  let attempts = 0;
  let lastStatus: number | null = null;

  const finish = (outcome: UpstreamOutcome, error: string | null, data?: unknown): UpstreamCallResult => {
    const duration = performance.now() - started;
    const labels = { endpoint, upstream: upstream.name, method, outcome };
    deps.metrics.upstreamCalls.inc(labels);
    deps.metrics.upstreamDuration.observe(labels, duration / 1000);
    return {
      name: upstream.name,
      ok: outcome === 'success',
      outcome,
      status: lastStatus,
      duration_ms: Math.round(duration * 100) / 100,
      attempts,
      error: error === null ? null : deps.redactor.redact(error),
      ...(outcome === 'success' ? { data } : {}),
    };
  };

  let prepared: Prepared;
  try {
    prepared = prepare(req, deps);
  } catch (err) {
    return finish('config_error', errorMessage(err));
  }

  const maxRetries = IDEMPOTENT_METHODS.has(method) || upstream.retry_non_idempotent ? upstream.retries : 0;
  let refreshedToken = false;

  for (;;) {
    if (req.signal.aborted) return finish('cancelled', 'cancelled');
    attempts++;
    let headers: Record<string, string> = {};
    let token: string | undefined;
    // A token server that could not be reached is a network failure on the way to the upstream,
    // retried like one (whatever the method: nothing reached the upstream yet); refused
    // credentials are configuration, reported at once.
    let tokenFailure: { outcome: UpstreamOutcome; error: string } | null = null;
    try {
      const authenticated = authenticate(prepared, req, deps);
      ({ headers, token } = authenticated instanceof Promise ? await authenticated : authenticated);
    } catch (err) {
      if (req.signal.aborted) return finish('cancelled', 'cancelled');
      if (!(err instanceof TokenRequestError) || !err.transient) return finish('config_error', errorMessage(err));
      tokenFailure = { outcome: err.transient === 'timeout' ? 'timeout' : 'network_error', error: err.message };
    }

    const attempt: Attempt | null = tokenFailure ? null : await sendOnce(prepared, headers, method, upstream.timeout_ms, req.signal);
    let retryDelay: number | null = null;
    let failure: { outcome: UpstreamOutcome; error: string } | null = tokenFailure;

    if (attempt === null) {
      // the token failure above
    } else if (attempt.kind === 'cancelled') return finish('cancelled', 'cancelled');
    else if (attempt.kind === 'timeout') {
      failure = { outcome: 'timeout', error: `timed out after ${upstream.timeout_ms} ms` };
    } else if (attempt.kind === 'network') {
      failure = { outcome: 'network_error', error: attempt.error };
    } else {
      lastStatus = attempt.status;
      if (attempt.status >= 200 && attempt.status < 300) {
        return readAnswer(attempt, req, finish);
      }
      if (attempt.status === 401 && token !== undefined && !refreshedToken && prepared.auth?.type === 'OAUTH2_CLIENT_CREDENTIALS') {
        // The token may have been revoked before its expiry: fetch a new one and repeat once.
        deps.tokens.invalidate(prepared.auth, token);
        refreshedToken = true;
        attempts--;
        continue;
      }
      failure = { outcome: 'http_error', error: `HTTP ${attempt.status}${snippet(attempt.text)}` };
      if (!RETRYABLE_STATUS.has(attempt.status)) return finish(failure.outcome, failure.error);
      const retryAfter = parseRetryAfter(attempt.retryAfter);
      if (retryAfter !== null) {
        if (retryAfter > upstream.retry_max_backoff_ms) {
          return finish(failure.outcome, `${failure.error}; Retry-After ${Math.ceil(retryAfter / 1000)} s exceeds retry_max_backoff_ms`);
        }
        retryDelay = retryAfter;
      }
    }

    const retriesDone = attempts - 1;
    const allowed = tokenFailure ? upstream.retries : maxRetries;
    if (retriesDone >= allowed) {
      const note = allowed > 0 ? ` (after ${attempts} attempts)` : '';
      return finish(failure!.outcome, failure!.error + note);
    }
    const delay = retryDelay ?? backoff(upstream, retriesDone + 1, deps.random ?? Math.random);
    deps.metrics.upstreamRetries.inc({ endpoint, upstream: upstream.name, method });
    if (!(await sleep(delay, req.signal))) return finish('cancelled', 'cancelled');
  }
}

/** Resolve templates and build URL, static headers and body. Throws MissingEnvError / bad URL. */
function prepare(req: UpstreamRequest, deps: UpstreamDeps): Prepared {
  const { upstream, method, input } = req;
  const field = `upstreams.${upstream.name}`;
  const base = interpolate(upstream.base_url, deps.env, `${field}.base_url`, deps.redactor);
  const path = interpolate(req.path ?? upstream.path, deps.env, `${field}.path`, deps.redactor);
  let url: URL;
  try {
    url = new URL(joinUrl(base, path));
  } catch {
    // The URL may hold resolved secrets: say which field, not what it was.
    throw new Error(`${field}.base_url + path is not a valid absolute URL`);
  }
  const headers: Record<string, string> = { accept: 'application/json' };
  if (req.requestId !== undefined) headers[REQUEST_ID_HEADER] = req.requestId;
  for (const [name, value] of Object.entries(upstream.headers)) {
    headers[name.toLowerCase()] = interpolate(value, deps.env, `${field}.headers.${name}`, deps.redactor);
  }
  const auth = upstream.auth ? resolveAuth(upstream.auth, deps.env, `${field}.auth`, deps.redactor) : undefined;
  let body: string | undefined;
  if (QUERY_METHODS.has(method)) {
    appendQuery(url, input);
  } else if (input !== undefined) {
    body = JSON.stringify(input);
    headers['content-type'] = 'application/json';
  }
  return { url, headers, body, auth };
}

interface Authenticated {
  headers: Record<string, string>;
  /** The OAuth2 access token sent, if any. */
  token?: string;
}

/**
 * Request headers with credentials. Synchronous unless a token must be awaited: the common case
 * (no auth, or a static one) should not cost the fan-out an extra asynchronous step per upstream.
 */
function authenticate(prepared: Prepared, req: UpstreamRequest, deps: UpstreamDeps): Authenticated | Promise<Authenticated> {
  const { auth } = prepared;
  if (!auth) return { headers: prepared.headers };
  if (auth.type !== 'OAUTH2_CLIENT_CREDENTIALS') {
    return { headers: { ...prepared.headers, ...lowerKeys(staticAuthHeaders(auth, deps.redactor)) } };
  }
  return withToken(prepared, auth, req, deps);
}

async function withToken(prepared: Prepared, auth: ResolvedOAuth2, req: UpstreamRequest, deps: UpstreamDeps): Promise<Authenticated> {
  const token = await deps.tokens.get(auth, {
    signal: req.signal,
    onRequest: (outcome) => deps.metrics.tokenRequests.inc({ endpoint: req.endpoint, upstream: req.upstream.name, outcome }),
  });
  deps.redactor.add(token);
  return { headers: { ...prepared.headers, authorization: `Bearer ${token}` }, token };
}

type Attempt =
  | { kind: 'answer'; status: number; text: string; retryAfter: string | null; contentType: string }
  | { kind: 'timeout' }
  | { kind: 'cancelled' }
  | { kind: 'network'; error: string };

/** A protocol's module and its keep-alive connection pool, shared by every upstream call of the process. */
interface Transport {
  request: typeof http.request;
  agent: http.Agent;
}
const plain: Transport = { request: http.request, agent: new http.Agent({ keepAlive: true }) };
let secure: Transport | undefined;

/**
 * node:https is loaded by the first https upstream call: with node:tls it is ~2 ms a start spent
 * for no other module (scripts/package-rewrites.mjs makes the packages' loads of them lazy too).
 */
function transportOf(protocol: string): Transport | undefined {
  if (protocol === 'http:') return plain;
  if (protocol !== 'https:') return undefined;
  if (!secure) {
    const { request, Agent } = process.getBuiltinModule('node:https') as typeof https;
    secure = { request, agent: new Agent({ keepAlive: true }) };
  }
  return secure;
}

/** A larger answer is cut and reported: an endpoint buffers answers to validate and aggregate them. */
export const MAX_ANSWER_BYTES = 10 * 1024 * 1024;

/**
 * One HTTP exchange on node:http(s), cut at `timeoutMs` (reading the body included) or when
 * `signal` aborts. Never rejects: a failure is an `Attempt` of its kind.
 *
 * Not `fetch`: measured on this code path, undici's fetch costs about 4× the CPU of `http.request`
 * per call, which a fan-out pays several times per request. For the same reason the timeout is a
 * plain timer that destroys the request, and the caller's signal gets one listener: no
 * AbortController per attempt (`AbortSignal.timeout` would also keep an idle timer alive for the
 * full timeout at every call).
 * Redirects are deliberately not followed: a 3xx is reported, since following it would send the
 * upstream's credentials to wherever the redirect points.
 */
function sendOnce(
  prepared: Prepared,
  headers: Record<string, string>,
  method: HttpMethod,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<Attempt> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(CANCELLED);
    const { url, body } = prepared;
    const transport = transportOf(url.protocol);
    if (!transport) return resolve({ kind: 'network', error: `unsupported protocol ${url.protocol}` });
    let settled = false;
    let req: http.ClientRequest | undefined;
    const settle = (attempt: Attempt) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      // After a failure the socket may hold half an answer: it must not go back to the pool.
      if (attempt.kind !== 'answer') req?.destroy();
      resolve(attempt);
    };
    const networkError = (err: unknown) => settle({ kind: 'network', error: describeNetworkError(err) });
    const onAbort = () => settle(CANCELLED);
    const timer = setTimeout(() => settle(TIMED_OUT), timeoutMs);
    signal.addEventListener('abort', onAbort, { once: true });
    const sendHeaders = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
    try {
      req = transport.request(url, { method, headers: sendHeaders, agent: transport.agent }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) networkError(new Error(`answer larger than ${MAX_ANSWER_BYTES} bytes`));
          else chunks.push(chunk);
        });
        res.on('error', networkError);
        res.on('close', () => {
          if (!res.complete) networkError(new Error('connection closed before the answer was complete'));
        });
        res.on('end', () => {
          const retryAfter = res.headers['retry-after'];
          settle({
            kind: 'answer',
            status: res.statusCode ?? 0,
            text: Buffer.concat(chunks).toString('utf8'),
            retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
            contentType: res.headers['content-type'] ?? '',
          });
        });
      });
    } catch (err) {
      // A header value node refuses (e.g. a control character from an environment variable).
      return networkError(err);
    }
    req.on('error', networkError);
    req.end(body);
  });
}

const CANCELLED: Attempt = { kind: 'cancelled' };
const TIMED_OUT: Attempt = { kind: 'timeout' };

function readAnswer(
  attempt: Extract<Attempt, { kind: 'answer' }>,
  req: UpstreamRequest,
  finish: (outcome: UpstreamOutcome, error: string | null, data?: unknown) => UpstreamCallResult,
): UpstreamCallResult {
  let data: unknown = null;
  // 204 and HEAD answers have no body; they count as `null` data.
  if (attempt.text.trim() !== '') {
    try {
      data = JSON.parse(attempt.text);
    } catch {
      return finish('invalid_response', `HTTP ${attempt.status} answer is not valid JSON${snippet(attempt.text)}`);
    }
  }
  if (req.responseModel) {
    const parsed = req.responseModel.safeParse(data);
    if (!parsed.success) {
      return finish('invalid_response', `answer fails the response model: ${formatIssues(parsed.error.issues, 'response')}`);
    }
    data = parsed.data;
  }
  return finish('success', null, data);
}

/** `base` + `path` with exactly one slash between them; `path` may carry its own query. */
export function joinUrl(base: string, path: string): string {
  if (path === '') return base;
  if (/^https?:\/\//i.test(path)) return path;
  return `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

/**
 * Input as query parameters, the same convention the endpoint's own GET routes accept: arrays as
 * repeated parameters, objects as JSON text, null/undefined left out.
 */
export function appendQuery(url: URL, input: unknown): void {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return;
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined || value === null) continue;
    const items = Array.isArray(value) ? value : [value];
    for (const item of items) {
      url.searchParams.append(key, typeof item === 'object' && item !== null ? JSON.stringify(item) : String(item));
    }
  }
}

/** Milliseconds from a Retry-After value (delta-seconds or HTTP date); null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** Exponential backoff with ±50 % jitter; `retry` is 1 for the first retry. */
export function backoff(
  upstream: Pick<UpstreamDefinition, 'retry_backoff_ms' | 'retry_max_backoff_ms'>,
  retry: number,
  random: () => number,
): number {
  const base = Math.min(upstream.retry_backoff_ms * 2 ** (retry - 1), upstream.retry_max_backoff_ms);
  return Math.round(base * (0.5 + random()));
}

/** Resolves true after `ms`, false as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function snippet(text: string): string {
  const trimmed = text.trim().replace(/\s+/g, ' ');
  if (trimmed === '') return '';
  return `: ${trimmed.length > ERROR_SNIPPET_CHARS ? `${trimmed.slice(0, ERROR_SNIPPET_CHARS)}…` : trimmed}`;
}

function lowerKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

/**
 * Probe used by `/health`: one GET (no retries) with the upstream's auth, within
 * min(timeout_ms, 5 s). Ready means: every `${NAME}` resolves, credentials are obtainable
 * (OAuth2 token fetched), and the probe answers — 2xx at `health_path` when one is set, otherwise
 * any status below 500 except 401/403 at base_url + path (see `health_path` in schemas.ts).
 */
export async function probeUpstream(
  endpoint: string,
  upstream: UpstreamDefinition,
  deps: UpstreamDeps,
  signal: AbortSignal,
): Promise<{ name: string; ready: boolean; status: number | null; duration_ms: number; error: string | null }> {
  const started = performance.now();
  const done = (ready: boolean, status: number | null, error: string | null) => ({
    name: upstream.name,
    ready,
    status,
    duration_ms: Math.round((performance.now() - started) * 100) / 100,
    error: error === null ? null : deps.redactor.redact(error),
  });
  const req: UpstreamRequest = {
    endpoint,
    upstream,
    method: 'GET',
    input: undefined,
    path: upstream.health_path,
    signal,
  };
  let prepared: Prepared;
  let headers: Record<string, string>;
  try {
    prepared = prepare(req, deps);
    ({ headers } = await authenticate(prepared, req, deps));
  } catch (err) {
    if (err instanceof MissingEnvError) return done(false, null, err.message);
    return done(false, null, errorMessage(err));
  }
  const attempt = await sendOnce(prepared, headers, 'GET', Math.min(upstream.timeout_ms, 5_000), signal);
  switch (attempt.kind) {
    case 'timeout':
      return done(false, null, 'probe timed out');
    case 'cancelled':
      return done(false, null, 'cancelled');
    case 'network':
      return done(false, null, attempt.error);
    case 'answer': {
      const ok = upstream.health_path
        ? attempt.status >= 200 && attempt.status < 300
        : attempt.status < 500 && attempt.status !== 401 && attempt.status !== 403;
      return done(ok, attempt.status, ok ? null : `HTTP ${attempt.status}`);
    }
    default: {
      const never: never = attempt;
      return never;
    }
  }
}

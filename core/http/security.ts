import type { IncomingMessage } from 'node:http';
import os from 'node:os';
import type { onRequestHookHandler } from 'fastify';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
// Each class from its own file: the package's index loads every store it supports (Redis, MongoDB,
// PostgreSQL, a cluster's master, ...), ~100 kB of the bundle every start evaluated.
import RateLimiterMemory from 'rate-limiter-flexible/lib/RateLimiterMemory.js';
import RateLimiterRes from 'rate-limiter-flexible/lib/RateLimiterRes.js';
import { fail, type HangarError } from '../kernel/errors.js';
import { isLoopbackHost, resolveSecret, type Settings } from '../kernel/settings.js';
import { sameSecret } from '../lib/same-secret.js';
import { originChecker } from './cross-site.js';

const BEARER = { 'WWW-Authenticate': 'Bearer' };

import { pathOf } from './request.js';
import type { RouteConfig } from './route.js';

/**
 * Localhost security, in the order requests meet it:
 * 1. Host header check (DNS rebinding): a page on evil.example that resolves to 127.0.0.1 still
 *    sends `Host: evil.example`, so only our own names are accepted. Websocket upgrades also check
 *    `Origin` (scheme, host and port), since browsers let any page open a ws connection.
 *    State-changing HTTP requests from other origins are refused by `cross-site.ts`.
 * 2. Principal: `Authorization: Bearer <token>` or `X-API-Key: <token>` maps to the principal the
 *    token belongs to. With no tokens configured on loopback everyone is `local`; bound beyond
 *    loopback, the server refuses to start without tokens.
 * 3. Rate limit per principal (off by default on loopback), 429 with Retry-After. Public paths
 *    (probes) and `/metrics` are never limited, so a busy client cannot blind monitoring.
 * No CORS headers are ever sent: browsers keep other origins out.
 */

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling: the name of the presented token's principal, `local` or `anonymous`. */
    principal: string;
  }
}

/**
 * Routes any caller may reach: probes and the A2A discovery document. Each server starts from these
 * in its own `ctx.publicPaths`, to which subsystems add theirs (the UI's static files).
 */
export const DEFAULT_PUBLIC_PATHS: readonly string[] = ['/health', '/ready', '/readiness', '/.well-known/agent.json'];

export function allowedHostNames(settings: Pick<Settings, 'host' | 'allowedHosts'>): Set<string> {
  const names = new Set([
    'localhost',
    '127.0.0.1',
    '::1',
    settings.host.toLowerCase(),
    ...settings.allowedHosts.map((h) => h.toLowerCase()),
  ]);
  if (!isLoopbackHost(settings.host)) {
    names.add(os.hostname().toLowerCase());
    for (const nets of Object.values(os.networkInterfaces())) for (const net of nets ?? []) names.add(net.address.toLowerCase());
  }
  return names;
}

/** The host name of a Host header, without port and IPv6 brackets. */
export function hostNameOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  try {
    // Stryker disable next-line Regex: equivalent, a URL's hostname has brackets only around a whole IPv6 address
    return new URL(`http://${header}`).hostname.replace(/^\[|\]$/g, '').toLowerCase();
    // Stryker disable next-line BlockStatement: equivalent, an empty catch block returns undefined too
  } catch {
    return undefined;
  }
}

export function hostCheck(settings: Settings): onRequestHookHandler {
  const allowed = allowedHostNames(settings);
  const verdicts = new Map<string, boolean>();
  return function hostCheckHook(req, _reply, done) {
    const header = req.headers.host ?? '';
    let ok = verdicts.get(header);
    // The verdict cache only saves work: deciding afresh, or caching without bound, answers the same.
    // Stryker disable next-line ConditionalExpression: equivalent (the cache only saves work)
    if (ok === undefined) {
      const name = hostNameOf(header);
      // Stryker disable next-line ConditionalExpression: equivalent, allowed.has(undefined) is false
      ok = name !== undefined && allowed.has(name);
      // Stryker disable next-line ConditionalExpression,EqualityOperator,CallExpression: equivalent (the cache only saves work)
      if (verdicts.size < 1000) verdicts.set(header, ok);
    }
    done(ok ? undefined : fail('HANGAR_HTTP_HOST_NOT_ALLOWED', { host: header ?? '' }));
  };
}

/**
 * For ws upgrades: Host must be ours and Origin, when a browser sends one, must be the origin the
 * page was served from (scheme, host and port: `http://localhost:9999` is another site) or an
 * `allowedOrigins` entry.
 */
export function upgradeChecker(
  settings: Pick<Settings, 'host' | 'allowedHosts' | 'allowedOrigins'>,
): (req: IncomingMessage) => HangarError | undefined {
  const allowed = allowedHostNames(settings);
  const isAllowedOrigin = originChecker(settings);
  return function checkUpgradeRequest(req) {
    const host = hostNameOf(req.headers.host);
    if (!host || !allowed.has(host)) return fail('HANGAR_HTTP_HOST_NOT_ALLOWED', { host: req.headers.host ?? '' });
    const origin = req.headers.origin;
    if (origin !== undefined && !isAllowedOrigin(origin, req.headers.host)) return fail('HANGAR_HTTP_ORIGIN_NOT_ALLOWED', { origin });
    return undefined;
  };
}

// Per process: digests of a presented and an expected secret can be compared, never reused elsewhere.
/** The presented credential of a request, if any. */
export function presentedToken(req: IncomingMessage): string | undefined {
  const auth = req.headers.authorization;
  if (auth?.toLowerCase().startsWith('bearer ')) return auth.slice(7).trim();
  const key = req.headers['x-api-key'];
  return typeof key === 'string' ? key.trim() : undefined;
}

/**
 * Map a request to its principal, or throw 401. Tokens may be `${ENV}` references; they are
 * resolved per request so rotating the variable needs no restart, and never logged.
 */
export function resolvePrincipal(
  req: IncomingMessage,
  settings: Settings,
  extraTokens: Record<string, string> = {},
  fallbackToken?: string | null,
): string {
  // Checked before merging the two: without tokens (loopback's default) every request is `local`,
  // and this runs on every request.
  if (isEmpty(settings.auth.tokens) && isEmpty(extraTokens)) return 'local';
  const configured = { ...settings.auth.tokens, ...extraTokens };
  const token = presentedToken(req) ?? fallbackToken ?? undefined;
  if (!token) throw fail('HANGAR_AUTH_MISSING', {}, { headers: BEARER });
  for (const [principal, ref] of Object.entries(configured)) {
    let secret: string | undefined;
    try {
      secret = resolveSecret(ref);
    } catch {
      continue;
    }
    if (secret && sameSecret(token, secret)) return principal;
  }
  throw fail('HANGAR_AUTH_INVALID', {}, { headers: BEARER });
}

function isEmpty(tokens: Record<string, string>): boolean {
  for (const _ in tokens) return false;
  return true;
}

/**
 * Sets `req.principal`, or answers 401. Public paths still learn who is calling when a valid token
 * comes along, and are `anonymous` otherwise.
 */
export function principalHook(
  settings: Settings,
  extraTokens: () => Record<string, string>,
  publicPaths: ReadonlySet<string>,
): onRequestHookHandler {
  return function principal(req, _reply, done) {
    // A route declared `config.public` (core/http/route.ts), or a path a subsystem listed (the UI's files).
    if ((req.routeOptions.config as RouteConfig | undefined)?.public === true || publicPaths.has(pathOf(req))) {
      try {
        req.principal = resolvePrincipal(req.raw, settings, extraTokens());
      } catch {
        req.principal = 'anonymous';
      }
      return done();
    }
    try {
      req.principal = resolvePrincipal(req.raw, settings, extraTokens());
    } catch (err) {
      return done(err as HangarError);
    }
    done();
  };
}

/** Besides the public paths (probes): what monitoring scrapes, which must keep answering under load. */
const RATE_LIMIT_EXEMPT: ReadonlySet<string> = new Set(['/metrics']);

export interface RateLimitSettings {
  enabled: boolean;
  windowMs: number;
  max: number;
}

export function effectiveRateLimit(settings: Settings): RateLimitSettings {
  return {
    enabled: settings.rateLimit.enabled ?? !isLoopbackHost(settings.host),
    windowMs: settings.rateLimit.windowMs,
    max: settings.rateLimit.max,
  };
}

/** Where a limiter keeps its counters: this process's memory by default, a shared database in team mode. */
export type RateCounters = (limits: { points: number; duration: number }) => RateLimiterAbstract;

const inMemory: RateCounters = (limits) => new RateLimiterMemory(limits);

/**
 * The rate limiter of a running server, one fixed window per principal (rate-limiter-flexible keeps
 * the counters). Probes and other public paths are never limited. Its limits can be changed at run
 * time — the control plane does — and counting then starts afresh.
 */
export class ReconfigurableRateLimiter {
  #limits: RateLimitSettings;
  #counters: RateLimiterAbstract | undefined;
  readonly #store: RateCounters;
  readonly hook: onRequestHookHandler;

  constructor(initial: RateLimitSettings, publicPaths: ReadonlySet<string>, store: RateCounters = inMemory) {
    this.#limits = initial;
    this.#store = store;
    this.#counters = this.#build(initial);
    this.hook = (req, _reply, done) => {
      const counters = this.#counters;
      if (!counters) return done();
      const path = pathOf(req);
      if (publicPaths.has(path) || RATE_LIMIT_EXEMPT.has(path)) return done();
      counters.consume(req.principal ?? 'anonymous').then(
        () => done(),
        (rejected: unknown) => {
          const wait = rejected instanceof RateLimiterRes ? rejected.msBeforeNext : this.#limits.windowMs;
          const seconds = Math.max(1, Math.ceil(wait / 1000));
          done(fail('HANGAR_RATE_LIMITED', { seconds }, { headers: { 'Retry-After': String(seconds) } }));
        },
      );
    };
  }

  get limits(): RateLimitSettings {
    return this.#limits;
  }

  reconfigure(limits: RateLimitSettings): void {
    this.#limits = limits;
    this.#counters = this.#build(limits);
  }

  #build(limits: RateLimitSettings): RateLimiterAbstract | undefined {
    return limits.enabled ? this.#store({ points: limits.max, duration: limits.windowMs / 1000 }) : undefined;
  }
}

declare module '../kernel/services.js' {
  interface ServiceMap {
    /** The per-principal rate limiter, provided by the composition root; the control plane changes its limits at run time. */
    rateLimiter: ReconfigurableRateLimiter;
  }
}

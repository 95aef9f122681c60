import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import os from 'node:os';
import type { onRequestHookHandler } from 'fastify';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { isLoopbackHost, resolveSecret, type Settings } from '../kernel/settings.js';
import { forbidden, HttpError, tooManyRequests, unauthorized } from './errors.js';
import { pathOf } from './request.js';

/**
 * Localhost security, in the order requests meet it:
 * 1. Host header check (DNS rebinding): a page on evil.example that resolves to 127.0.0.1 still
 *    sends `Host: evil.example`, so only our own names are accepted. Websocket upgrades also check
 *    `Origin`, since browsers let any page open a ws connection.
 * 2. Principal: `Authorization: Bearer <token>` or `X-API-Key: <token>` maps to the principal the
 *    token belongs to. With no tokens configured on loopback everyone is `local`; bound beyond
 *    loopback, the server refuses to start without tokens.
 * 3. Rate limit per principal (off by default on loopback), 429 with Retry-After.
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

export function allowedHostNames(settings: Settings): Set<string> {
  const names = new Set(['localhost', '127.0.0.1', '::1', settings.host.toLowerCase(), ...settings.allowedHosts.map((h) => h.toLowerCase())]);
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
    return new URL(`http://${header}`).hostname.replace(/^\[|\]$/g, '').toLowerCase();
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
    if (ok === undefined) {
      const name = hostNameOf(header);
      ok = name !== undefined && allowed.has(name);
      if (verdicts.size < 1000) verdicts.set(header, ok);
    }
    done(ok ? undefined : forbidden(`host "${header}" is not allowed`));
  };
}

/** For ws upgrades: Host must be ours and Origin, when a browser sends one, must be ours too. */
export function checkUpgrade(req: IncomingMessage, settings: Settings): HttpError | undefined {
  const allowed = allowedHostNames(settings);
  const host = hostNameOf(req.headers.host);
  if (!host || !allowed.has(host)) return forbidden(`host "${req.headers.host ?? ''}" is not allowed`);
  const origin = req.headers.origin;
  if (origin) {
    let originHost: string | undefined;
    try {
      originHost = new URL(origin).hostname.replace(/^\[|\]$/g, '').toLowerCase();
    } catch {
      originHost = undefined;
    }
    if (!originHost || !allowed.has(originHost)) return forbidden(`origin "${origin}" is not allowed`);
  }
  return undefined;
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

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
  const configured = { ...settings.auth.tokens, ...extraTokens };
  const token = presentedToken(req) ?? fallbackToken ?? undefined;
  if (Object.keys(configured).length === 0) return 'local';
  if (!token) throw unauthorized();
  for (const [principal, ref] of Object.entries(configured)) {
    let secret: string | undefined;
    try {
      secret = resolveSecret(ref);
    } catch {
      continue;
    }
    if (secret && safeEqual(secret, token)) return principal;
  }
  throw unauthorized('invalid token');
}

/**
 * Sets `req.principal`, or answers 401. Public paths still learn who is calling when a valid token
 * comes along, and are `anonymous` otherwise.
 */
export function principalHook(settings: Settings, extraTokens: () => Record<string, string>, publicPaths: ReadonlySet<string>): onRequestHookHandler {
  return function principal(req, _reply, done) {
    if (publicPaths.has(pathOf(req))) {
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
      return done(err as HttpError);
    }
    done();
  };
}

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

/**
 * The rate limiter of a running server, one fixed window per principal (rate-limiter-flexible keeps
 * the counters). Probes and other public paths are never limited. Its limits can be changed at run
 * time — the control plane does — and counting then starts afresh.
 */
export class ReconfigurableRateLimiter {
  #limits: RateLimitSettings;
  #counters: RateLimiterMemory | undefined;
  readonly hook: onRequestHookHandler;

  constructor(initial: RateLimitSettings, publicPaths: ReadonlySet<string>) {
    this.#limits = initial;
    this.#counters = counters(initial);
    this.hook = (req, _reply, done) => {
      const counters = this.#counters;
      if (!counters || publicPaths.has(pathOf(req))) return done();
      counters.consume(req.principal ?? 'anonymous').then(
        () => done(),
        (rejected: unknown) => {
          const wait = rejected instanceof RateLimiterRes ? rejected.msBeforeNext : this.#limits.windowMs;
          done(tooManyRequests(Math.max(1, Math.ceil(wait / 1000))));
        },
      );
    };
  }

  get limits(): RateLimitSettings {
    return this.#limits;
  }

  reconfigure(limits: RateLimitSettings): void {
    this.#limits = limits;
    this.#counters = counters(limits);
  }
}

function counters(limits: RateLimitSettings): RateLimiterMemory | undefined {
  return limits.enabled ? new RateLimiterMemory({ points: limits.max, duration: limits.windowMs / 1000 }) : undefined;
}

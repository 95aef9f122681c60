import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import os from 'node:os';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { rateLimit } from 'express-rate-limit';
import { isLoopbackHost, resolveSecret, type Settings } from '../kernel/settings.js';
import { forbidden, HttpError, tooManyRequests, unauthorized } from './errors.js';

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

declare module 'express-serve-static-core' {
  interface Request {
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

export function hostCheck(settings: Settings): RequestHandler {
  const allowed = allowedHostNames(settings);
  // Clients send the same few Host values over and over; remember the verdict per header value.
  const verdicts = new Map<string, boolean>();
  return function hostCheckMiddleware(req: Request, _res: Response, next: NextFunction) {
    const header = req.headers.host ?? '';
    let ok = verdicts.get(header);
    if (ok === undefined) {
      const name = hostNameOf(header);
      ok = name !== undefined && allowed.has(name);
      if (verdicts.size < 1000) verdicts.set(header, ok);
    }
    if (!ok) return next(forbidden(`host "${header}" is not allowed`));
    next();
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

export function principalMiddleware(
  settings: Settings,
  extraTokens: () => Record<string, string>,
  publicPaths: ReadonlySet<string>,
): RequestHandler {
  return function principal(req: Request, _res: Response, next: NextFunction) {
    if (publicPaths.has(req.path)) {
      try {
        req.principal = resolvePrincipal(req, settings, extraTokens());
      } catch {
        req.principal = 'anonymous';
      }
      return next();
    }
    req.principal = resolvePrincipal(req, settings, extraTokens());
    next();
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

/** The rate limiter of a running app: its limits can be changed at run time (the control plane does). */
export interface ReconfigurableRateLimiter extends RequestHandler {
  readonly limits: RateLimitSettings;
  /** Swap in new limits; counting starts afresh (the old window's counters are dropped). */
  reconfigure(limits: RateLimitSettings): void;
}

export function reconfigurableRateLimiter(initial: RateLimitSettings, publicPaths: ReadonlySet<string>): ReconfigurableRateLimiter {
  let current = { limits: initial, handler: rateLimiter(initial, publicPaths) };
  const limiter = function runtimeRateLimit(req: Request, res: Response, next: NextFunction) {
    return current.handler(req, res, next);
  } as ReconfigurableRateLimiter;
  Object.defineProperty(limiter, 'limits', { get: () => current.limits });
  limiter.reconfigure = (limits) => {
    current = { limits, handler: rateLimiter(limits, publicPaths) };
  };
  return limiter;
}

/** Per-principal fixed-window limit; probes are never limited. */
export function rateLimiter(limits: RateLimitSettings, publicPaths: ReadonlySet<string>): RequestHandler {
  if (!limits.enabled) return function noRateLimit(_req, _res, next) { next(); };
  return rateLimit({
    windowMs: limits.windowMs,
    limit: limits.max,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    keyGenerator: (req) => req.principal ?? 'anonymous',
    // Built at run time too (the control plane reconfigures limits from a request handler).
    validate: { creationStack: false },
    skip: (req) => publicPaths.has(req.path),
    handler: (req, _res, next) => {
      const reset = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const seconds = reset ? Math.max(1, Math.ceil((reset.getTime() - Date.now()) / 1000)) : Math.ceil(limits.windowMs / 1000);
      next(tooManyRequests(seconds));
    },
  });
}

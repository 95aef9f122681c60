import type { onRequestHookHandler } from 'fastify';
import { fail } from '../kernel/errors.js';
import type { Settings } from '../kernel/settings.js';

/**
 * Cross-site request protection. Hangar answers no CORS preflight, so a web page on another origin
 * can only send what browsers allow without one: GET/HEAD, and POST with a `text/plain`, form or
 * multipart body (or none). Two rules close that door, in the order a request meets them:
 *
 * 1. Bodies are JSON. A request that carries a body, or a state-changing one that declares a
 *    content type, must declare `application/json` (415 otherwise), unless its route lists the
 *    type in `config.bodyTypes`.
 *    A page can only send JSON after a preflight, which Hangar never grants.
 * 2. State-changing methods (anything but GET, HEAD, OPTIONS) from a browser must come from the
 *    server's own origin or an `allowedOrigins` entry (403 otherwise). As Go's
 *    `http.CrossOriginProtection` does: `Sec-Fetch-Site: same-origin` or `none` (typed into the
 *    address bar) passes; other `Sec-Fetch-Site` values and an `Origin` whose scheme, host and port
 *    differ from `http://<Host header>` are refused. A request with neither header is not from a
 *    browser (curl, scripts, the CLI, the desktop shell's main process) and passes.
 *
 * So a body-less POST that acts (run a notebook, restart a kernel, approve, cancel) is refused when
 * a browser sends it from another page — browsers send `Origin` with every POST — whatever its
 * content type, and one that declares a non-JSON type is refused even from a client that sends no
 * `Origin`, since old browsers send form posts without it.
 *
 * Decision, where the issue is silent: this follows Jupyter Server (XSRF + Origin checks on unsafe
 * methods, `allow_origin` to widen them) and Vite's dev server (host checks, ws origin checks), but
 * without a cookie token: Hangar never authenticates with cookies, so the Origin/Sec-Fetch-Site
 * check is all a forged browser request has to pass, and scripts need nothing new beyond
 * `content-type: application/json` on requests with a body.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Content types this route accepts besides `application/json` (media types without
     * parameters, lower case), e.g. `['text/csv']` for an upload. Such bodies reach the handler as
     * a Buffer.
     */
    bodyTypes?: readonly string[];
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The media type of a Content-Type header: `application/json; charset=utf-8` → `application/json`. */
export function mediaTypeOf(header: string): string {
  const semicolon = header.indexOf(';');
  return (semicolon < 0 ? header : header.slice(0, semicolon)).trim().toLowerCase();
}

/**
 * Whether `origin` (an Origin header) is the server's own for a request that came with `host` (its
 * Host header, already checked against the allowed host names), or one of `allowedOrigins`.
 * Scheme, host and port must all match: `http://localhost:9999` is not `http://localhost:8787`.
 */
export function originChecker(settings: Pick<Settings, 'allowedOrigins'>): (origin: string, host: string | undefined) => boolean {
  const allowed = new Set(settings.allowedOrigins.map((o) => new URL(o).origin));
  const verdicts = new Map<string, boolean>();
  return function isAllowedOrigin(origin, host) {
    // Stryker disable next-line StringLiteral: an absent Host and any other unparseable one (an empty one, or that text) judge alike.
    const key = `${origin}\n${host ?? ''}`;
    let ok = verdicts.get(key);
    // Stryker disable next-line ConditionalExpression: judging again what is cached gives the same verdict (judgeOrigin is pure).
    if (ok === undefined) {
      ok = judgeOrigin(origin, host, allowed);
      // Bounded: the headers are the caller's, so a flood of distinct ones must not grow memory.
      // Stryker disable next-line ConditionalExpression,EqualityOperator,CallExpression: the cap and the caching change memory only, never a verdict.
      if (verdicts.size < 1000) verdicts.set(key, ok);
    }
    return ok;
  };
}

function judgeOrigin(origin: string, host: string | undefined, allowed: ReadonlySet<string>): boolean {
  // `null` (sandboxed frames, file: pages, some redirects) is nobody's origin.
  if (!URL.canParse(origin)) return false;
  const parsed = new URL(origin).origin;
  if (allowed.has(parsed)) return true;
  if (!host || !URL.canParse(`http://${host}`)) return false;
  // Hangar serves plain http only; `https://<our host>` is a different origin.
  return parsed === new URL(`http://${host}`).origin;
}

/**
 * The guard as an onRequest hook (callback style: it runs on every request). It reads the matched
 * route's `config.bodyTypes`, so it runs after routing, as every onRequest hook does.
 */
export function crossSiteGuard(settings: Pick<Settings, 'allowedOrigins'>): onRequestHookHandler {
  const isAllowedOrigin = originChecker(settings);
  return function crossSite(req, _reply, done) {
    const headers = req.headers;
    const type = headers['content-type'];
    const hasBody =
      headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
    const safe = SAFE_METHODS.has(req.method);
    if (hasBody || (type !== undefined && !safe)) {
      const media = type === undefined ? '' : mediaTypeOf(type);
      // Stryker disable next-line OptionalChaining: Fastify gives every request a config object (`{}` on its 404 route), so `config?.` never short-circuits.
      if (media !== 'application/json' && !req.routeOptions.config?.bodyTypes?.includes(media)) {
        return done(media ? fail('HANGAR_HTTP_MEDIA_TYPE', { media }) : fail('HANGAR_HTTP_MEDIA_TYPE_MISSING', {}));
      }
    }
    if (safe) return done();
    const site = headers['sec-fetch-site'];
    const origin = headers.origin;
    if (site === 'same-origin' || site === 'none') return done();
    if (site === undefined && origin === undefined) return done();
    // Stryker disable next-line ConditionalExpression: without an Origin, isAllowedOrigin(undefined) is false anyway ("undefined" is no URL).
    if (origin !== undefined && isAllowedOrigin(origin, headers.host)) return done();
    done(origin !== undefined ? fail('HANGAR_HTTP_CROSS_ORIGIN', { origin }) : fail('HANGAR_HTTP_CROSS_SITE', { site: String(site) }));
  };
}

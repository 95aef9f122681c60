import { existsSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import bytes from 'bytes';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { fail, HangarError } from '../kernel/errors.js';
import type { Logger } from '../kernel/log.js';
import type { Metrics } from '../kernel/metrics.js';
import type { Settings } from '../kernel/settings.js';
import { crossSiteGuard } from './cross-site.js';
import { pathScrubber, toHttpError } from './errors.js';
import { hasEncodedControl, normalizeUrl } from './normalize.js';
import { pathOf, routedUrlOf } from './request.js';
import { hostCheck, principalHook, type ReconfigurableRateLimiter } from './security.js';

/**
 * The Fastify app's fixed frame: security and bookkeeping hooks in front, the JSON body parser,
 * the catch-all 404 and the one error handler (`answerWithDetail`). Subsystems add their routes to this one instance
 * (`Subsystem.routes(app, ctx)`), unencapsulated, so hooks they add (the control gate, the
 * invocation log) see every request.
 *
 * Fastify rather than express: on this machine bare express 5 serves 0.17× the requests per second
 * of bare `node:http`, a ceiling far below the targets; Fastify serves 0.93× (bench/).
 */

/** The router's options, for Fastify's and any router of ours beside it (core/http/on-first-use.ts). Like express: `/api/v1/agents/` is `/api/v1/agents`. */
export const ROUTER_OPTIONS = { maxParamLength: 500, ignoreTrailingSlash: true };

export interface AppDeps {
  settings: Settings;
  log: Logger;
  metrics: Metrics;
  /** Tokens added at run time (e.g. the desktop shell's per-launch token). */
  extraTokens: () => Record<string, string>;
  /** Paths reachable without a token (probes, the UI's static files). */
  publicPaths: ReadonlySet<string>;
  rateLimiter: ReconfigurableRateLimiter;
}

export function createApp({ settings, log, metrics, extraTokens, publicPaths, rateLimiter }: AppDeps): {
  app: FastifyInstance;
  server: http.Server;
} {
  let server!: http.Server;
  const app = Fastify({
    // We own the node server (keep-alive, shutdown, websocket upgrades are handled in app/server.ts).
    serverFactory: (handler) => (server = http.createServer(headAsGet(handler))),
    // HEAD is answered by the GET route (headAsGet below), not by a second route Fastify adds beside
    // each GET: ~100 fewer routes to register at start-up.
    exposeHeadRoutes: false,
    // Inputs are parsed with zod when a handler reads them (core/http/route.ts), so no route gives
    // Fastify a JSON schema to compile. Without these, Fastify loads its default compilers (ajv,
    // fast-json-stringify) as the app is made, at every start; a schema given to Fastify fails here.
    schemaController: { compilersFactory: { buildValidator: noSchemaCompiler, buildSerializer: noSchemaCompiler } },
    bodyLimit: bytes.parse(settings.bodyLimit) ?? 1024 * 1024,
    logger: false,
    trustProxy: false,
    return503OnClosing: false,
    routerOptions: ROUTER_OPTIONS,
    // One normalised path for the router and every guard (core/http/normalize.ts).
    rewriteUrl: (req) => normalizeUrl(req.url ?? '/'),
    // A request node's parser refuses (a raw control character, an oversized header) is answered
    // `{detail}` too, as Fastify's own handler would, but in Hangar's shape.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      const [status, text, detail] =
        err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout', 'the request took too long to arrive']
          : err.code === 'HPE_HEADER_OVERFLOW'
            ? [431, 'Request Header Fields Too Large', 'request headers too large']
            : [400, 'Bad Request', `malformed HTTP request (${err.code ?? 'parse error'})`];
      const body = JSON.stringify({ detail });
      if (socket.writable)
        socket.write(
          `HTTP/1.1 ${status} ${text}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
        );
      socket.destroy(err);
    },
    // A target the router cannot decode (`%zz`, broken UTF-8) is the caller's mistake, said as `{detail}`.
    frameworkErrors: (err, req, reply) => {
      const error = err.code === 'FST_ERR_BAD_URL' ? fail('HANGAR_HTTP_BAD_PATH', { path: req.originalUrl }) : toHttpError(err);
      void (reply as FastifyReply)
        .code(error.status)
        .headers(error.headers)
        .send({ ...error.toBody(), code: error.code });
    },
  });
  app.decorateRequest('principal', '');
  // First of every hook: from here on the request is the HEAD its client sent (see headAsGet).
  app.addHook('onRequest', function headAgain(req, _reply, done) {
    if ((req.raw as HeadRequest)[ROUTED_AS_GET]) req.raw.method = 'HEAD';
    done();
  });
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (methods.includes('HEAD') && !methods.includes('GET'))
      throw new Error(`${route.url}: a HEAD route needs GET beside it (HEAD is answered by the GET route)`);
  });

  // Hooks are callback-style: an async hook costs a promise per request on the hottest path.
  app.addHook('onResponse', function observe(req, reply, done) {
    const seconds = reply.elapsedTime / 1000;
    metrics.recordHttp(req.method, routedUrlOf(req), reply.statusCode, seconds);
    if (settings.requestLog && log.enabled('debug')) {
      log.debug('request', {
        method: req.method,
        path: pathOf(req),
        status: reply.statusCode,
        ms: Math.round(seconds * 1e4) / 10,
        principal: req.principal,
      });
    }
    done();
  });
  app.addHook('onRequest', hostCheck(settings));
  app.addHook('onRequest', function pathCheck(req, _reply, done) {
    // Decoded, a control character would reach ids, file names and response headers (a 500 from node).
    done(hasEncodedControl(pathOf(req)) ? fail('HANGAR_HTTP_PATH_CONTROL_CHARACTER', {}) : undefined);
  });
  app.addHook('onRequest', crossSiteGuard(settings));
  app.addHook('onRequest', principalHook(settings, extraTokens, publicPaths));
  app.addHook('onRequest', rateLimiter.hook);

  // JSON bodies of any JSON value (like express.json's strict: false); an empty body is no body.
  // Other content types only get past the cross-site guard on routes that list them in
  // `config.bodyTypes`; those routes get the body as a Buffer.
  app.removeAllContentTypeParsers();
  const depthLimit = settings.bodyDepthLimit;
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, text, done) => {
    if (text === '') return done(null, undefined);
    // Before parsing: a value nested thousands deep parses, then overflows the stack of whatever
    // walks it next (validation, the store's serialiser) — refused here, with the limit named.
    if (nestsDeeperThan(text as string, depthLimit)) {
      return done(fail('HANGAR_HTTP_BODY_TOO_DEEP', { limit: depthLimit }), undefined);
    }
    try {
      done(null, JSON.parse(text as string));
    } catch (err) {
      done(new HangarError(422, `request body is not valid JSON: ${(err as Error).message}`), undefined);
    }
  });
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  answerWithDetail(
    app,
    (req, error, err) => {
      log.error(`${req.method} ${pathOf(req)} failed: ${error.message}`, {
        status: error.status,
        stack:
          !(err instanceof HangarError) && !(err as FastifyError).statusCode ? err.stack?.split('\n').slice(1, 4).join(' | ') : undefined,
      });
    },
    pathScrubber({ workspace: path.resolve(settings.root), install: HANGAR_INSTALL, home: os.homedir() }),
  );
  return { app, server };
}

function noSchemaCompiler(): () => never {
  return () => {
    throw new Error('a route gave Fastify a JSON schema: declare its schemas with zod in defineRoute (core/http/route.ts)');
  };
}

const ROUTED_AS_GET = Symbol('hangar.routedAsGet');
type HeadRequest = http.IncomingMessage & { [ROUTED_AS_GET]?: true };

/**
 * HEAD requests routed as GET, as express's router and Hono do: the GET route answers, node's
 * response (created for a HEAD request) sends its headers without the body, and the first hook
 * gives the request its method back, so hooks, handlers, logs and metrics see HEAD. Fastify's own
 * way, a HEAD route registered beside every GET (`exposeHeadRoutes`), doubled the GET routes'
 * share of start-up (~100 of ~330 routes). A route that declares HEAD must declare GET too, so a
 * HEAD request never needs a route of its own (checked at registration, in createApp).
 */
function headAsGet(handler: http.RequestListener): http.RequestListener {
  return (req, res) => {
    if (req.method === 'HEAD') {
      req.method = 'GET';
      (req as HeadRequest)[ROUTED_AS_GET] = true;
    }
    handler(req, res);
  };
}

/** This checkout or installed package: the nearest folder above this module with a package.json (core/http/ from source, dist/ when bundled). */
const HANGAR_INSTALL = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let up = 0; up < 3 && !existsSync(path.join(dir, 'package.json')); up++) dir = path.dirname(dir);
  return dir;
})();

/**
 * The 404 and error answers of every Hangar server (this app and the notebook CLI's): `{detail}`
 * with the error's status and headers. `onServerError` hears of 5xx answers (the log keeps full
 * paths); `scrub` rewrites what the client sees.
 */
export function answerWithDetail(
  app: FastifyInstance,
  onServerError?: (req: FastifyRequest, error: HangarError, err: FastifyError | Error) => void,
  scrub: (error: HangarError) => HangarError = (error) => error,
): void {
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send({ detail: `no route for ${req.method} ${pathOf(req)}` });
  });
  app.setErrorHandler((err: FastifyError | Error, req, reply) => {
    const error = toHttpError(err);
    if (error.status >= 500) onServerError?.(req, error, err);
    if (reply.sent || reply.raw.headersSent) {
      // Mid-stream failure (SSE): the status line is gone, so end the response.
      reply.raw.end();
      return;
    }
    const shown = scrub(error);
    reply
      .code(shown.status)
      .headers(shown.headers)
      .send({ ...shown.toBody(), code: shown.code });
  });
}

/** Whether JSON text nests `[`/`{` deeper than `limit`, in one pass that skips string contents. */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

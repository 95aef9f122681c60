/**
 * express routers as endpoint drop-ins: `endpoints/<name>.ts` whose default export is an express
 * `Router` (or a whole express app) is served under `/api/v1/endpoints/<name>/…`.
 *
 * How it is mounted, and why not with `@fastify/express`: that plugin runs express middleware in
 * an `onRequest` hook, so a router answering there would skip every `preHandler` hook — the control
 * gate (maintenance, drain, a disabled endpoint) and the invocation log — and express would have to
 * parse bodies without Hangar's size and depth limits. Instead the endpoints' one catch-all Fastify
 * route hands the node request and response (`req.raw`, `reply.raw`) to the router as its handler,
 * after every hook has run: Host check, cross-site guard, token → principal and rate limit
 * (onRequest), control gate and invocation log (preHandler), HTTP metrics (onResponse). The router
 * is looked up in the registry on every request, so a save swaps it and a deletion removes its
 * routes with no restart and nothing to unregister.
 *
 * What the router sees: `req.url` relative to its mount point (`req.baseUrl` is
 * `/api/v1/endpoints/<name>`, `req.originalUrl` the full path), `req.body` already parsed (JSON
 * only: the cross-site guard refuses other media types on endpoint routes, so `express.json()` in
 * the router finds the body read and passes), and `req.principal`, the caller Hangar identified.
 * A request no route of the router answers, and an error it passes on or throws, come back to
 * Fastify's error handler: `{detail}` like every other Hangar error, never an HTML page or a stack.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { pathOf } from '../http/request.js';
import { errorMessage, fail, HangarError } from '../kernel/errors.js';
import { runErrorFields } from '../kernel/stack.js';
import { ENDPOINT_NAME } from './schemas.js';

/** What express calls a handler: `(req, res, next)`; `next(err)` hands an error on. */
export type ExpressHandler = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/** An endpoint drop-in that is an express router rather than a `defineEndpoint` definition. */
export interface RouterEndpoint {
  readonly kind: 'router';
  readonly name: string;
  /** The exported Router or app, as the drop-in exported it. */
  readonly router: ExpressHandler;
  /**
   * Read from the exported router's own properties (`export default Object.assign(router,
   * { timeout_ms: 5000 })`): a module's default export is all discovery hands the kind, and a
   * Router is a function object that carries them untouched. `isolation: 'inline'` serves it on
   * the server's thread; `timeout_ms` is its deadline to answer (else `endpoints.timeoutMs`);
   * `max_heap_mb` its host's heap cap (else `endpoints.maxHeapMb`).
   */
  readonly isolation?: 'inline' | 'supervised';
  readonly timeout_ms?: number;
  readonly max_heap_mb?: number;
}

/**
 * Whether a module's export is an express Router or app: both are functions of `(req, res, next)`
 * carrying `handle` (a Router also a `stack`, an app a `set`). A plain function is not taken for
 * one, so a typo'd `defineEndpoint` export still gets the definition error.
 */
export function isExpressHandler(exported: unknown): exported is ExpressHandler {
  if (typeof exported !== 'function') return false;
  const candidate = exported as unknown as { handle?: unknown; stack?: unknown; set?: unknown };
  return typeof candidate.handle === 'function' && (Array.isArray(candidate.stack) || typeof candidate.set === 'function');
}

export function routerEndpoint(exported: ExpressHandler, name: string): RouterEndpoint {
  if (!ENDPOINT_NAME.test(name)) {
    throw new Error(
      `name: endpoint name must be lowercase letters, digits, '-' or '_', starting with a letter or digit (got '${name}' from the file name)`,
    );
  }
  const own = exported as unknown as { isolation?: unknown; timeout_ms?: unknown; max_heap_mb?: unknown };
  if (own.isolation !== undefined && own.isolation !== 'inline' && own.isolation !== 'supervised') {
    throw new Error(`isolation: expected 'inline' or 'supervised' (got ${JSON.stringify(own.isolation)})`);
  }
  const positive = (key: 'timeout_ms' | 'max_heap_mb', min: number, max: number) => {
    const value = own[key];
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw new Error(`${key}: expected an integer from ${min} to ${max} (got ${JSON.stringify(value)})`);
    }
    return value;
  };
  return Object.freeze({
    kind: 'router',
    name,
    router: exported,
    isolation: own.isolation as RouterEndpoint['isolation'],
    timeout_ms: positive('timeout_ms', 1, 86_400_000),
    max_heap_mb: positive('max_heap_mb', 16, 65_536),
  });
}

/**
 * The routes a router declares directly (`router.get('/notes/:id', …)`), for the OpenAPI document:
 * express paths as OpenAPI templates (`/notes/{id}`), with their methods. Routes of nested routers
 * and middleware, and paths that are patterns or regular expressions, are not listed — express
 * keeps no declaration of them to read — and no route has a schema.
 */
export function routesOf(router: ExpressHandler): Array<{ path: string; methods: string[] }> {
  type Layer = { route?: { path?: unknown; methods?: Record<string, boolean> } };
  const holder = router as unknown as { stack?: Layer[]; router?: { stack?: Layer[] } };
  const stack = holder.stack ?? holder.router?.stack ?? [];
  const routes: Array<{ path: string; methods: string[] }> = [];
  for (const layer of stack) {
    const path = layer.route?.path;
    if (typeof path !== 'string' || !/^[\w\-./:]*$/.test(path)) continue;
    const declared = Object.keys(layer.route?.methods ?? {}).filter((m) => m !== '_all');
    const methods = layer.route?.methods?._all ? ['get', 'post', 'put', 'patch', 'delete'] : declared;
    routes.push({ path: path.replace(/:(\w+)/g, '{$1}') || '/', methods });
  }
  return routes;
}

export function isRouterEndpoint(definition: unknown): definition is RouterEndpoint {
  return (definition as RouterEndpoint | undefined)?.kind === 'router';
}

/**
 * express is loaded on the first request to a router endpoint, not at start-up. In dist/ it is
 * bundled (scripts/build.mjs) and the `require` below is esbuild's, which evaluates the bundled
 * package on this first call; from source (tests) the bundle's `require` does not exist and
 * node_modules serves it. Bundled, express still costs ~50 ms of CPU to evaluate (body-parser,
 * iconv-lite, mime-db…), ~100 ms from node_modules: what a start with a router drop-in paid.
 */
// Made when first needed: bundled as CommonJS (a host thread's worker, core/lib/worker-bundle.ts)
// `import.meta.url` is empty, and there the bundle's own `require` is used instead.
let madeRequire: NodeJS.Require | undefined;
const requireHere = (id: string): unknown => (madeRequire ??= createRequire(import.meta.url))(id);
let expressModule: (() => ExpressApp) | undefined;
interface ExpressApp extends ExpressHandler {
  disable(setting: string): void;
  use(handler: ExpressHandler): void;
}
export function loadExpress(): () => ExpressApp {
  expressModule ??= (typeof require === 'function' ? require('express') : requireHere('express')) as () => ExpressApp;
  return expressModule;
}

/** express 5's exports (lib/express.js); a test checks the list against the installed express. */
export const EXPRESS_EXPORTS = ['application', 'request', 'response', 'Route', 'Router', 'json', 'raw', 'static', 'text', 'urlencoded'];

let forDropIns: unknown;
/**
 * What a drop-in imports as `express`: a function that makes an express app, as express's default
 * export does, with every export of express read from it when first read — except `Router` and
 * `Route`, which express re-exports from the `router` package (the same objects, ~10 ms to load).
 * So a router drop-in (`import { Router } from 'express'`, `express.Router()`) loads at start-up
 * without evaluating express, which its first request does (`hostOf`); a drop-in that makes a whole
 * app (`express()`) evaluates it then, at its load.
 */
export function expressForDropIns(): unknown {
  if (forDropIns) return forDropIns;
  const facade = function createApplication(...args: unknown[]) {
    return (loadExpress() as unknown as (...a: unknown[]) => unknown)(...args);
  };
  const fromRouter = (key: string) => () => {
    // Written out, not through a helper: esbuild bundles only a `require` of a literal name.
    const Router = (typeof require === 'function' ? require('router') : requireHere('router')) as { Route: unknown };
    return key === 'Router' ? Router : Router.Route;
  };
  for (const key of EXPRESS_EXPORTS) {
    Object.defineProperty(facade, key, {
      enumerable: true,
      configurable: true,
      get: key === 'Router' || key === 'Route' ? fromRouter(key) : () => (loadExpress() as unknown as Record<string, unknown>)[key],
    });
  }
  forDropIns = facade;
  return facade;
}

/**
 * The app each router runs in. A bare Router has no `res.json`, `req.query` or `res.status`: those
 * come from the request and response prototypes an express app installs, so the router is mounted
 * in a small app of its own (an exported app is mounted the same way, as a sub-app). Kept per
 * router function, so a reload (a new function) gets a new host and the old one is collected.
 */
const hosts = new WeakMap<ExpressHandler, ExpressApp>();
export function hostOf(router: ExpressHandler): ExpressApp {
  let host = hosts.get(router);
  if (!host) {
    host = loadExpress()();
    host.disable('x-powered-by');
    host.use(router);
    hosts.set(router, host);
  }
  return host;
}

/** What the server tells the host about one request, in the `x-hangar-call` header (URI-encoded JSON). */
export interface RouterCall {
  hash: string;
  principal?: string;
  baseUrl: string;
  originalUrl: string;
  /** How the body Hangar parsed was sent: as JSON, text, raw bytes, or none. */
  body: 'json' | 'text' | 'bytes' | 'none';
}

/** What a router answered instead of a response: no route matched, or an error it handed on. */
export const OUTCOME_HEADER = 'x-hangar-router-outcome';
export const TOKEN_HEADER = 'x-hangar-host-token';
export const CALL_HEADER = 'x-hangar-call';

/** How a router call ended, for the endpoint metrics (`platform_endpoint_calls_total`). */
export type RouterOutcome = 'success' | 'invalid_input' | 'handler_error' | 'timeout' | 'cancelled';

/**
 * The request as its router sees it: `url` as the client sent it, `mount` the endpoint's
 * `/api/v1/endpoints/<name>` as the client spelled it, `path` the router's part after it, and
 * `target` that part with the query.
 */
export function routerTarget(req: FastifyRequest): { url: string; mount: string; path: string; target: string } {
  const url = req.raw.url ?? '/';
  const full = pathOf(req);
  const mount = full.split('/', 5).join('/');
  const query = url.indexOf('?');
  const path = full.slice(mount.length) || '/';
  return { url, mount, path, target: query === -1 ? path : path + url.slice(query) };
}

/**
 * Run one request through the endpoint's router. Resolves once the router has answered; rejects
 * with the error Fastify's error handler should answer when the router answered nothing (no
 * route matched: 404) or handed on an error (its status when it carries a 4xx one, else 500).
 */
export function forwardToRouter(
  endpoint: RouterEndpoint,
  req: FastifyRequest,
  reply: FastifyReply,
  onDone: (outcome: RouterOutcome) => void,
): Promise<void> {
  const raw = req.raw as IncomingMessage & { body?: unknown; baseUrl?: string; originalUrl?: string; principal?: string };
  const res = reply.raw;
  const { url, mount, path, target } = routerTarget(req);
  raw.originalUrl = url;
  raw.baseUrl = mount;
  raw.url = target;
  raw.body = req.body;
  raw.principal = req.principal;
  // Headers Hangar set before the handler (X-Request-Id) live on Fastify's reply until it sends;
  // the router writes the node response itself, so they move there.
  for (const [header, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) res.setHeader(header, value as string | number | string[]);
  }

  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: RouterOutcome, error?: HangarError) => {
      if (settled) return;
      settled = true;
      // Fastify's error answer and log name the path the client called.
      raw.url = url;
      onDone(outcome);
      if (error) reject(error);
      else resolve();
    };
    // Before Fastify's own 'finish' listener (onResponse: metrics, the request log), which then
    // sees the path the client called rather than the router's part of it.
    res.prependOnceListener('finish', () => {
      raw.url = url;
    });
    res.once('finish', () => settle(res.statusCode >= 500 ? 'handler_error' : res.statusCode >= 400 ? 'invalid_input' : 'success'));
    res.once('close', () => settle(res.writableFinished ? 'success' : 'cancelled'));
    const done = (err?: unknown) => {
      if (res.headersSent) {
        // The router failed mid-answer: the status line is gone, so the response can only be cut.
        if (err !== undefined) {
          settle('handler_error');
          res.destroy();
        }
        return;
      }
      if (err === undefined || err === 'router' || err === 'route') {
        settle('invalid_input', fail('HANGAR_ENDPOINT_ROUTER_NO_ROUTE', { endpoint: endpoint.name, method: req.method, path }));
        return;
      }
      settle(isClientError(err) ? 'invalid_input' : 'handler_error', routerError(endpoint.name, err));
    };
    try {
      hostOf(endpoint.router)(raw, res, done);
    } catch (err) {
      done(err);
    }
  });
}

export function isClientError(err: unknown): boolean {
  const status = (err as { status?: unknown; statusCode?: unknown } | null)?.status ?? (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' && status >= 400 && status < 500;
}

/**
 * An error the router handed on, as Hangar answers it. A 4xx error (e.g. `http-errors`' `createError(404)`,
 * body-parser's 400) keeps its status and message; anything else is the router's bug: a 500 naming the
 * endpoint and the message, with where in the person's file it was thrown (as a failing handler
 * answers) but no stack: a router is reachable by whoever may call the endpoint.
 */
export function routerError(name: string, err: unknown): HangarError {
  if (err instanceof HangarError) return err;
  // The router's own status, so the generic code of that status (no entry of ours describes it).
  if (isClientError(err)) {
    const e = err as { status?: number; statusCode?: number };
    return new HangarError((e.status ?? e.statusCode)!, errorMessage(err));
  }
  const { file, line, column } = runErrorFields(err);
  return fail(
    'HANGAR_ENDPOINT_ROUTER_FAILED',
    { endpoint: name, problem: errorMessage(err) },
    { fields: { error: errorMessage(err), file, line, column } },
  );
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The caller Hangar identified from its token: a principal's name, `local` or `anonymous`. */
      principal?: string;
    }
  }
}

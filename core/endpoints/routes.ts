/**
 * HTTP routes of custom endpoints (spec document 2, Endpoints):
 *
 *   GET  /api/v1/endpoints                      → { endpoints: EndpointSummary[] }
 *   *    /api/v1/endpoints/{name}{path}         → the fan-out envelope { success, aggregated, upstreams }
 *   GET  /api/v1/endpoints/{name}/health        → EndpointHealth; 200 when ready, 503 when not
 *   GET  /api/v1/endpoints/{name}/info          → metadata without secrets
 *   POST /api/v1/endpoints/{name}{path}/async   → 202 task (see tasks.ts); 501 without the task board
 *   POST /api/v1/endpoints/{name}{path}/batch   → 202 task running every input of {"inputs": [...]}
 *   *    /api/v1/endpoints/{name}/…               → the express Router/app of a router drop-in (router.ts)
 *
 * One catch-all route dispatches by the endpoint's live definition instead of one route per
 * endpoint, so a hot-reloaded or removed endpoint is served correctly by the very next request.
 * Parsing only: query coercion lives in query.ts, everything else in service.ts.
 */
import { performance } from 'node:perf_hooks';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { param, pathOf, queryOf, REQUEST_ID_HEADER, requestIdOf } from '../http/request.js';
import { defineRoute, type ResourceConfig, type RouteMethod } from '../http/route.js';
import { fail } from '../kernel/errors.js';
import { accepted } from '../tasks/events.js';
import { ENDPOINTS_PREFIX } from './describe.js';
import { coerceQuery } from './query.js';
import { type EndpointConfig, EndpointList, type HttpMethod, QUERY_METHODS } from './schemas.js';
import type { EndpointService } from './service.js';
import type { EndpointJobs } from './tasks.js';

const READ_ONLY = 'GET, HEAD';

/**
 * Every call under `/endpoints/:name` is a call to that endpoint, named by method and the path
 * below the endpoint (`GET /today`), health and info included: the invocation log records them and
 * the control plane holds them back.
 */
const endpointCall: ResourceConfig = {
  kind: 'endpoint',
  param: 'name',
  operation: (req) => `${req.method} /${pathOf(req).split('/').filter(Boolean).slice(4).join('/')}`,
  invocation: true,
};

/**
 * @param jobs the task-board side (async and batch); undefined when `tasks.enabled` is off, and
 * those routes then answer 501.
 * @param methods every method the server knows (Fastify's `supportedMethods`): an endpoint answers
 * a method it does not declare with its own 405 and `Allow`, OPTIONS with 204 and `Allow`.
 */
export function endpointRoutes(service: EndpointService, jobs: EndpointJobs | undefined, methods: readonly string[]) {
  const dispatch = async (req: FastifyRequest, reply: FastifyReply) => {
    // Set first, so every answer of these routes carries it, errors included.
    const requestId = requestIdOf(req);
    reply.header(REQUEST_ID_HEADER, requestId);
    const name = param(req, 'name');
    const rest = (req.params as { '*'?: string })['*'] ?? '';
    if (name === '') {
      // `/api/v1/endpoints/` (trailing slash) is the list; an empty name is no route.
      if (rest === '' && (req.method === 'GET' || req.method === 'HEAD')) return { endpoints: service.list() };
      return reply.callNotFound();
    }
    const router = service.router(name);
    if (router) {
      // The router owns its whole subtree, /health, /async and /batch included (router.ts).
      const started = performance.now();
      return service.serveRouter(router, req, reply, (outcome) =>
        service.observeRouterCall(name, req.method, outcome, (performance.now() - started) / 1000),
      );
    }
    const config = service.require(name);
    const sub = normalise(`/${rest}`);
    const method = req.method.toUpperCase();

    if (sub === config.path) {
      const allowed = service.allowedMethods(config);
      if (method === 'OPTIONS') {
        return reply
          .code(204)
          .header('Allow', [...allowed, 'OPTIONS'].join(', '))
          .send();
      }
      const fromQuery = QUERY_METHODS.has(method as HttpMethod);
      const input = fromQuery ? queryInput(config.request, req.url) : req.body;
      return service.invoke(name, method, input, {
        source: fromQuery ? 'query' : 'body',
        signal: abortOnClose(reply),
        requestId,
      });
    }
    const base = config.path === '/' ? '' : config.path;
    const variant = sub === `${base}/async` ? 'async' : sub === `${base}/batch` ? 'batch' : null;
    if (variant) {
      if (method !== 'POST')
        throw fail('HANGAR_ENDPOINT_ROUTE_METHOD_NOT_ALLOWED', { route: sub, allowed: 'POST' }, { headers: { Allow: 'POST' } });
      if (!jobs) throw fail('HANGAR_ENDPOINT_TASKS_DISABLED', { variant });
      const principal = req.principal || 'local';
      const chosen = queryOf(req).method;
      const task =
        variant === 'async'
          ? await jobs.submitCall(name, typeof chosen === 'string' ? chosen : undefined, req.body, principal)
          : await jobs.submitBatch(name, typeof chosen === 'string' ? chosen : undefined, req.body, principal);
      return accepted(reply, task);
    }
    if (sub === '/health' || sub === '/info') {
      if (method !== 'GET' && method !== 'HEAD') {
        throw fail('HANGAR_ENDPOINT_ROUTE_METHOD_NOT_ALLOWED', { route: sub, allowed: READ_ONLY }, { headers: { Allow: READ_ONLY } });
      }
      if (sub === '/info') return service.info(name);
      const health = await service.health(name, abortOnClose(reply));
      reply.code(health.ready ? 200 : 503);
      return health;
    }
    throw fail('HANGAR_ENDPOINT_NO_ROUTE', { endpoint: name, route: sub, path: config.path });
  };

  // One catch-all pair (`/:name` and `/:name/*`: the tail is optional) dispatches by the live
  // definition. Each endpoint's own routes are documented by the OpenAPI provider (docs.ts), so
  // the catch-alls themselves are left out of the document.
  const every = methods as RouteMethod[];
  const catchAll = {
    method: every,
    summary: 'A custom endpoint',
    config: { hidden: true, resource: endpointCall },
    handler: ({ req, reply }: { req: FastifyRequest; reply: FastifyReply }) => dispatch(req, reply),
  };
  return [
    defineRoute({
      method: 'GET',
      url: ENDPOINTS_PREFIX,
      summary: 'List custom endpoints',
      tags: ['endpoints'],
      schema: { response: { 200: { description: 'Every live endpoint', schema: EndpointList } } },
      handler: () => ({ endpoints: service.list() }),
    }),
    defineRoute({ ...catchAll, url: `${ENDPOINTS_PREFIX}/:name` }),
    defineRoute({ ...catchAll, url: `${ENDPOINTS_PREFIX}/:name/*` }),
  ];
}

function normalise(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, '') || '/' : path;
}

/**
 * The input of a GET/HEAD call, from the query as written rather than the app's parsed query: the
 * endpoint convention is repeated keys and JSON text, coerced by the endpoint's own model.
 */
function queryInput(model: EndpointConfig['request'], url: string): Record<string, unknown> {
  const at = url.indexOf('?');
  return at === -1 ? {} : coerceQuery(model, new URLSearchParams(url.slice(at + 1)));
}

/** Aborted when the client goes away before the answer is sent: upstream calls stop with it. */
function abortOnClose(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

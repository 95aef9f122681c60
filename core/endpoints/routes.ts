/**
 * HTTP routes of custom endpoints (spec document 2, Endpoints):
 *
 *   GET  /api/v1/endpoints                      → { endpoints: EndpointSummary[] }
 *   *    /api/v1/endpoints/{name}{path}         → the fan-out envelope { success, aggregated, upstreams }
 *   GET  /api/v1/endpoints/{name}/health        → EndpointHealth; 200 when ready, 503 when not
 *   GET  /api/v1/endpoints/{name}/info          → metadata without secrets
 *   POST /api/v1/endpoints/{name}{path}/async   → 202 task (see tasks.ts); 501 without the task board
 *   POST /api/v1/endpoints/{name}{path}/batch   → 202 task running every input of {"inputs": [...]}
 *
 * One catch-all route dispatches by the endpoint's live definition instead of one express route per
 * endpoint, so a hot-reloaded or removed endpoint is served correctly by the very next request.
 * Parsing only: query coercion lives in query.ts, everything else in service.ts.
 */
import { Router, type Request, type Response } from 'express';
import { HttpError, notFound, notImplemented } from '../http/errors.js';
import { coerceQuery } from './query.js';
import { QUERY_METHODS, type HttpMethod } from './schemas.js';
import { ENDPOINTS_PREFIX, type EndpointService } from './service.js';
import type { EndpointJobs } from './tasks.js';

const READ_ONLY = 'GET, HEAD';

/**
 * @param jobs the task-board side (async and batch); undefined when the task subsystem is absent or
 * switched off, and those routes then answer 501.
 */
export function endpointRoutes(service: EndpointService, jobs: () => EndpointJobs | undefined = () => undefined): Router {
  const router = Router();

  router.get(ENDPOINTS_PREFIX, (_req, res) => {
    res.json({ endpoints: service.list() });
  });

  router.all(`${ENDPOINTS_PREFIX}/:name{/*rest}`, async (req: Request, res: Response) => {
    const name = String(req.params.name);
    const config = service.require(name);
    const rest = (req.params as { rest?: string[] }).rest ?? [];
    const sub = normalise(`/${rest.join('/')}`);
    const method = req.method.toUpperCase();

    if (sub === config.path) {
      const allowed = service.allowedMethods(config);
      if (method === 'OPTIONS') {
        res.status(204).set('Allow', [...allowed, 'OPTIONS'].join(', ')).end();
        return;
      }
      const fromQuery = QUERY_METHODS.has(method as HttpMethod);
      const input = fromQuery ? coerceQuery(config.request, searchParams(req)) : req.body;
      const result = await service.invoke(name, method, input, {
        source: fromQuery ? 'query' : 'body',
        signal: abortOnClose(res),
      });
      res.json(result);
      return;
    }
    const base = config.path === '/' ? '' : config.path;
    const variant = sub === `${base}/async` ? 'async' : sub === `${base}/batch` ? 'batch' : null;
    if (variant) {
      if (method !== 'POST') throw new HttpError(405, `${sub} accepts POST`, { Allow: 'POST' });
      const board = jobs();
      if (!board) throw notImplemented(`${variant} runs need the task subsystem (tasks.enabled)`);
      const principal = (req as { principal?: string }).principal ?? 'local';
      const chosen = typeof req.query.method === 'string' ? req.query.method : undefined;
      const task =
        variant === 'async'
          ? await board.submitCall(name, chosen, req.body, principal)
          : await board.submitBatch(name, chosen, req.body, principal);
      res.status(202).location(`/api/v1/tasks/${task.id}`).json(task);
      return;
    }
    if (sub === '/health' || sub === '/info') {
      if (method !== 'GET' && method !== 'HEAD') {
        throw new HttpError(405, `${sub} accepts ${READ_ONLY}`, { Allow: READ_ONLY });
      }
      if (sub === '/info') {
        res.json(service.info(name));
        return;
      }
      const health = await service.health(name, abortOnClose(res));
      res.status(health.ready ? 200 : 503).json(health);
      return;
    }
    throw notFound(`endpoint '${name}' has no route ${sub} (its path is ${config.path}, with /async and /batch; also /health and /info)`);
  });

  return router;
}

function normalise(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, '') || '/' : path;
}

/**
 * Raw query parameters. The app's own query parser (qs, "extended") would turn `a[b]=1` into
 * objects and cap arrays at 20 items; the endpoint convention is repeated keys and JSON text, so
 * the URL is read as written.
 */
function searchParams(req: Request): URLSearchParams {
  const url = req.originalUrl ?? req.url;
  const at = url.indexOf('?');
  return new URLSearchParams(at === -1 ? '' : url.slice(at + 1));
}

/** Aborted when the client goes away before the answer is sent: upstream calls stop with it. */
function abortOnClose(res: Response): AbortSignal {
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

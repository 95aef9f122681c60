import express, { type ErrorRequestHandler, type Express, type NextFunction, type Request, type Response } from 'express';
import type { Logger } from '../kernel/log.js';
import type { Settings } from '../kernel/settings.js';
import type { Metrics } from '../platform/metrics.js';
import { notFound, toHttpError } from './errors.js';
import { effectiveRateLimit, hostCheck, principalMiddleware, reconfigurableRateLimiter } from './security.js';

/**
 * The express app's fixed frame: security and bookkeeping middleware in front, the catch-all 404
 * and the one error handler behind. Subsystem routers are mounted in between by the server.
 */

export interface AppDeps {
  settings: Settings;
  log: Logger;
  metrics: Metrics;
  /** Tokens added at run time (e.g. the desktop shell's per-launch token). */
  extraTokens: () => Record<string, string>;
  /** Paths reachable without a token (probes, the UI's static files). */
  publicPaths: ReadonlySet<string>;
}

/**
 * The matched route pattern, so metrics and logs count `/api/v1/hello/health` as
 * `/api/v1/:agent/health`. Routers are mounted at '/' or a static prefix and declare full
 * patterns, so baseUrl never carries a parameter value.
 */
function routeLabel(req: Request): string {
  const pattern = req.route?.path;
  return typeof pattern === 'string' ? req.baseUrl + pattern : 'unmatched';
}

export function createApp({ settings, log, metrics, extraTokens, publicPaths }: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'extended');
  app.set('trust proxy', false);

  app.use(function observe(req: Request, res: Response, next: NextFunction) {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const labels = { method: req.method, route: routeLabel(req), status: String(res.statusCode) };
      metrics.httpRequests.inc(labels);
      metrics.httpDuration.observe(labels, seconds);
      if (settings.requestLog && log.enabled('debug')) {
        log.debug('request', {
          method: req.method,
          path: req.path,
          status: res.statusCode,
          ms: Math.round(seconds * 1e4) / 10,
          principal: req.principal,
        });
      }
    });
    next();
  });
  app.use(hostCheck(settings));
  app.use(principalMiddleware(settings, extraTokens, publicPaths));
  // Kept on app.locals so the control plane can change the limits of a running server.
  app.locals.rateLimiter = reconfigurableRateLimiter(effectiveRateLimit(settings), publicPaths);
  app.use(app.locals.rateLimiter);
  app.use(express.json({ limit: settings.bodyLimit, strict: false }));
  return app;
}

export function finishApp(app: Express, log: Logger): void {
  app.use(function unknownRoute(req: Request, _res: Response, next: NextFunction) {
    next(notFound(`no route for ${req.method} ${req.path}`));
  });
  const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
    const error = toHttpError(err);
    if (error.status >= 500) {
      log.error(`${req.method} ${req.path} failed: ${error.message}`, {
        status: error.status,
        stack: err instanceof Error && !(err as { status?: number }).status ? err.stack?.split('\n').slice(1, 4).join(' | ') : undefined,
      });
    }
    if (res.headersSent) {
      // Mid-stream failure (SSE): the status line is gone, so end the response.
      res.end();
      return;
    }
    res.status(error.status).set(error.headers).json(error.toBody());
  };
  app.use(errorHandler);
}

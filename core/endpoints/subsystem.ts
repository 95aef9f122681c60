/**
 * Custom endpoints as the server wires them: the `endpoint` drop-in kind (folder `endpoints/`), one
 * `EndpointService` per server using the server's metrics registry and logger (provided as the
 * `endpoints` service: pipelines call it, and code registers endpoints with
 * `server.ctx.services.get('endpoints').register(defineEndpoint({...}))`), the async and batch task
 * kinds, the routes, and each endpoint's OpenAPI entries (a provider, so they follow the registry
 * live).
 */
import { mountRoutes } from '../http/route.js';
import type { Subsystem } from '../kernel/context.js';
import { endpointRouteDocs } from './docs.js';
import { endpointKind, registryCatalog } from './kind.js';
import { endpointRoutes } from './routes.js';
import { EndpointService } from './service.js';
import { EndpointJobs } from './tasks.js';

declare module '../kernel/services.js' {
  interface ServiceMap {
    endpoints: EndpointService;
  }
}

export const endpointsSubsystem: Subsystem = {
  name: 'endpoints',
  provides: ['endpoints'],
  depends: ['tasks'],
  kinds: [endpointKind],
  setup(ctx) {
    const service = new EndpointService({
      metrics: ctx.metrics.registry,
      catalog: registryCatalog(ctx.registry),
      log: ctx.log,
      onChange: () => ctx.services.get('openapi').invalidate(),
    });
    ctx.services.provide('endpoints', service);
    ctx.services.get('openapi').addProvider(() => endpointRouteDocs(service));
  },
  routes(app, ctx) {
    const service = ctx.services.get('endpoints');
    const tasks = ctx.services.get('tasks');
    // The async and batch task kinds, registered when the board is on.
    const jobs = tasks.enabled ? new EndpointJobs(tasks, service) : undefined;
    mountRoutes(app, endpointRoutes(service, jobs, app.supportedMethods));
  },
};

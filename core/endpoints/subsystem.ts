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
import { hostReports } from '../kernel/dropin-host.js';
import { endpointRouteDocs } from './docs.js';
import { EndpointHosts } from './hosts.js';
import { endpointKind, registryCatalog } from './kind.js';
import { isRouterEndpoint, type RouterEndpoint } from './router.js';
import { endpointRoutes } from './routes.js';
import type { EndpointConfig } from './schemas.js';
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
    const hosts = new EndpointHosts({
      registry: ctx.registry,
      root: ctx.paths.root,
      maxHeapMb: ctx.settings.endpoints.maxHeapMb,
      watchdogMs: ctx.settings.dropins.watchdogMs,
      ...hostReports(ctx, 'endpoint'),
    });
    // A handler's host starts as its endpoint loads or reloads, after the change is announced.
    ctx.registry.on('change', (change) => {
      if (change.kind !== 'endpoint' || (change.type !== 'added' && change.type !== 'updated' && change.type !== 'removed')) return;
      if (change.type === 'removed') return hosts.forget(change.name);
      setImmediate(() => {
        const config = ctx.registry.get<EndpointConfig | RouterEndpoint>('endpoint', change.name)?.definition;
        if (isRouterEndpoint(config)) hosts.routers.prepare(config);
        else if (config && typeof config === 'object' && 'handler' in config) hosts.prepare(config);
      });
    });
    const service = new EndpointService({
      metrics: ctx.metrics.registry,
      catalog: registryCatalog(ctx.registry),
      log: ctx.log,
      onChange: () => ctx.services.get('openapi').invalidate(),
      hosts,
      timeoutMs: ctx.settings.endpoints.timeoutMs,
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
  // The handlers' host threads stop with the server.
  close: (ctx) => ctx.services.find('endpoints')?.close(),
};

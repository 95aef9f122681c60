/**
 * Custom endpoints as the server wires them: the `endpoint` drop-in kind (folder `endpoints/`), one
 * `EndpointService` per server using the server's metrics registry and logger, the routes, and the
 * OpenAPI entries (a provider, so they follow the registry live).
 *
 * The service is reachable through `endpointServiceOf(ctx)` — for pipelines and for registering
 * endpoints in code (`endpointServiceOf(server.ctx).register(defineEndpoint({...}))`).
 */
import type { HangarContext, Subsystem } from '../kernel/context.js';
import { endpointRouteDocs, LIST_DOC } from './docs.js';
import { endpointKind, registryCatalog } from './kind.js';
import { endpointRoutes } from './routes.js';
import { EndpointService } from './service.js';

const services = new WeakMap<HangarContext, EndpointService>();

/** The endpoint service of a running server (set up by this subsystem). */
export function endpointServiceOf(ctx: HangarContext): EndpointService {
  const service = services.get(ctx);
  if (!service) throw new Error('the endpoints subsystem is not set up on this server');
  return service;
}

export const endpointsSubsystem: Subsystem = {
  name: 'endpoints',
  kinds: [endpointKind],
  setup(ctx) {
    const service = new EndpointService({
      metrics: ctx.metrics.registry,
      catalog: registryCatalog(ctx.registry),
      log: ctx.log,
      onChange: () => ctx.openapi.invalidate(),
    });
    services.set(ctx, service);
    ctx.openapi.add(LIST_DOC);
    ctx.openapi.addProvider(() => endpointRouteDocs(service));
  },
  routes: (ctx) => endpointRoutes(endpointServiceOf(ctx)),
};

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
import { EndpointJobs } from './tasks.js';

const services = new WeakMap<HangarContext, EndpointService>();
const jobs = new WeakMap<HangarContext, EndpointJobs>();

/**
 * The async/batch side, created once the task board exists. Subsystems are set up in list order and
 * this one is mounted before the platform's per-agent routes, so the board may not exist yet at our
 * setup: it is created at setup when it can be, else on the first registry change (discovery runs
 * after every setup) or the first async request, whichever comes first.
 */
function jobsOf(ctx: HangarContext): EndpointJobs | undefined {
  let found = jobs.get(ctx);
  if (!found && ctx.tasks?.enabled) {
    found = new EndpointJobs(ctx.tasks, endpointServiceOf(ctx));
    jobs.set(ctx, found);
  }
  return found;
}

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
    if (!jobsOf(ctx)) ctx.registry.once('change', () => jobsOf(ctx));
  },
  routes: (app, ctx) => endpointRoutes(app, endpointServiceOf(ctx), () => jobsOf(ctx)),
};

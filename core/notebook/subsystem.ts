/**
 * The notebook subsystem of the main server: session routes under `/api/notebooks`, the live ws
 * channel at `/api/notebooks/ws`, and every kernel stopped on shutdown.
 */
import type { HangarContext, Subsystem } from '../kernel/context.js';
import { NOTEBOOK_DOCS } from './docs.js';
import { NOTEBOOK_WS_PATH, notebookRoutes, notebookUpgradeHandler } from './routes.js';
import { NotebookService } from './service.js';

/** One service per running server (tests start several servers in one process). */
const services = new WeakMap<HangarContext, NotebookService>();

/** The notebook service of a running server (also used by the data-intelligence subsystem). */
export function serviceOf(ctx: HangarContext): NotebookService {
  let service = services.get(ctx);
  if (!service) services.set(ctx, (service = new NotebookService({ root: ctx.paths.root })));
  return service;
}

export const notebookSubsystem: Subsystem = {
  name: 'notebook',
  setup(ctx) {
    ctx.upgrades.set(NOTEBOOK_WS_PATH, notebookUpgradeHandler(serviceOf(ctx)));
    ctx.openapi.add(...NOTEBOOK_DOCS);
  },
  routes: (app, ctx) => notebookRoutes(app, { service: serviceOf(ctx) }),
  async close(ctx) {
    await services.get(ctx)?.closeAll();
    services.delete(ctx);
  },
};

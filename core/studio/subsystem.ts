/**
 * The studio subsystem: the debug interface under /studio, built on the agent runtime (the
 * `agents` service, so it depends on it). On start it
 * marks runs a previous process left executing as failed; on stop it cancels executing runs
 * (they stay resumable) and writes what is pending.
 */
import type { HangarContext, Subsystem } from '../kernel/context.js';
import { errorMessage } from '../http/errors.js';
import { findAgent } from '../agents/kind.js';
import { PLATFORM_NAME } from '../kernel/version.js';
import { listAgents } from '../platform/service.js';
import { RunStore } from './run-store.js';
import { registerStudioDocs, studioRoutes } from './routes.js';
import { StudioService } from './service.js';

const services = new WeakMap<HangarContext, StudioService>();

function serviceOf(ctx: HangarContext): StudioService {
  const service = services.get(ctx);
  if (!service) throw new Error('the studio subsystem must be set up before its routes are mounted');
  return service;
}

export const studioSubsystem: Subsystem = {
  name: 'studio',
  depends: ['agents'],
  async setup(ctx) {
    const runs = new RunStore(ctx.store, { onError: (err) => ctx.log.error(`studio: writing run events failed: ${errorMessage(err)}`) });
    const recovered = await runs.recover();
    if (recovered) ctx.log.warn(`studio: ${recovered} run(s) were executing when the server last stopped; marked as failed`);
    services.set(
      ctx,
      new StudioService({
        findAgent: (name) => findAgent(ctx.registry, name),
        listAgents: () => listAgents(ctx),
        runtime: ctx.services.get('agents'),
        runs,
        log: ctx.log,
        version: ctx.version,
        platformTitle: `${PLATFORM_NAME} Studio`,
      }),
    );
    registerStudioDocs(ctx);
  },
  routes: (app, ctx) => studioRoutes(app, serviceOf(ctx), ctx.settings),
  async close(ctx) {
    await services.get(ctx)?.close();
  },
};

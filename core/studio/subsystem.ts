/**
 * The studio subsystem: the debug interface under /studio, built on the agent runtime (the
 * `agents` service), provided as `studio`. On start it marks runs a previous process left
 * executing as failed; on stop it cancels executing runs (they stay resumable) and writes what is
 * pending.
 */
import { findAgent } from '../agents/kind.js';
import { mountRoutes } from '../http/route.js';
import type { Subsystem } from '../kernel/context.js';
import { errorMessage } from '../kernel/errors.js';
import { PLATFORM_NAME } from '../kernel/version.js';
import { listAgents } from '../platform/service.js';
import { studioRoutes } from './routes.js';
import { RunStore } from './run-store.js';
import { StudioService } from './service.js';

declare module '../kernel/services.js' {
  interface ServiceMap {
    studio: StudioService;
  }
}

export const studioSubsystem: Subsystem = {
  name: 'studio',
  provides: ['studio'],
  depends: ['agents'],
  async setup(ctx) {
    const runs = new RunStore(ctx.store, { onError: (err) => ctx.log.error(`studio: writing run events failed: ${errorMessage(err)}`) });
    const recovered = await runs.recover();
    if (recovered) ctx.log.warn(`studio: ${recovered} run(s) were executing when the server last stopped; marked as failed`);
    ctx.services.provide(
      'studio',
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
  },
  routes: (app, ctx) => mountRoutes(app, studioRoutes(ctx.services.get('studio'), ctx.settings)),
  async close(ctx) {
    await ctx.services.find('studio')?.close();
  },
};

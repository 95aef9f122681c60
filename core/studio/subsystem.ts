/**
 * The studio subsystem: the debug interface under /studio, built on the agent runtime (the
 * `agents` service), provided as `studio`. On start it marks runs a previous process left
 * executing as failed (in team mode: runs of instances no longer live, checked every heartbeat);
 * on stop it cancels executing runs (they stay resumable) and writes what is pending. In team
 * mode a run executing on one instance is followed from any other (followed-run.ts).
 */
import { findAgent } from '../agents/kind.js';
import { mountRoutes } from '../http/route.js';
import type { HangarContext, Subsystem } from '../kernel/context.js';
import { errorMessage } from '../kernel/errors.js';
import { PLATFORM_NAME } from '../kernel/version.js';
import { listAgents } from '../platform/service.js';
import { STUDIO_RUN_TOPIC } from './followed-run.js';
import { studioRoutes } from './routes.js';
import { RunStore } from './run-store.js';
import { StudioService } from './service.js';

declare module '../kernel/services.js' {
  interface ServiceMap {
    studio: StudioService;
  }
}

/** Team mode: each server's sweep for runs of instances that stopped. */
const sweepers = new WeakMap<HangarContext, NodeJS.Timeout>();

export const studioSubsystem: Subsystem = {
  name: 'studio',
  provides: ['studio'],
  depends: ['agents'],
  async setup(ctx) {
    const team = ctx.services.find('team');
    const runs = new RunStore(ctx.store, {
      onError: (err) => ctx.log.error(`studio: writing run events failed: ${errorMessage(err)}`),
      // Team mode: each write is announced, and written sooner, so another instance follows the run live.
      ...(team
        ? {
            saveDelayMs: 20,
            onWritten: (runId: string) => void team.announce(STUDIO_RUN_TOPIC, runId).catch(() => {}),
            instance: team.instanceId,
          }
        : {}),
    });
    if (team) {
      // A run marked running may be executing on another live instance: only those of instances no
      // longer listed are recovered — at start, and every heartbeat after, so a run whose instance
      // died ends (and its followers elsewhere with it) without waiting for that instance to return.
      const sweep = async () => {
        const live = new Set((await team.instances()).map((instance) => instance.id));
        const recovered = await runs.recover((run) => !run.instance || !live.has(run.instance));
        if (recovered) ctx.log.warn(`studio: ${recovered} run(s) were executing on an instance that stopped; marked as failed`);
      };
      await sweep();
      const timer = setInterval(
        () => void sweep().catch((err) => ctx.log.warn(`studio: ${errorMessage(err)}`)),
        team.heartbeatSeconds * 1000,
      );
      timer.unref();
      sweepers.set(ctx, timer);
    } else {
      const recovered = await runs.recover();
      if (recovered) ctx.log.warn(`studio: ${recovered} run(s) were executing when the server last stopped; marked as failed`);
    }
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
        ...(team ? { announcements: team } : {}),
      }),
    );
  },
  routes: (app, ctx) => mountRoutes(app, studioRoutes(ctx.services.get('studio'), ctx.settings)),
  async close(ctx) {
    clearInterval(sweepers.get(ctx));
    await ctx.services.find('studio')?.close();
  },
};

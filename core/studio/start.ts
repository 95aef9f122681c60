/**
 * The studio as its first request loads it (core/studio/subsystem.ts): the run store, recovery of
 * runs a stopped process left executing, the service and its routes.
 */
import { findAgent } from '../agents/kind.js';
import type { LoadedOnFirstUse } from '../http/on-first-use.js';
import type { HangarContext } from '../kernel/context.js';
import { errorMessage } from '../kernel/errors.js';
import { PLATFORM_NAME } from '../kernel/version.js';
import { listAgents } from '../platform/service.js';
import { STUDIO_RUN_TOPIC } from './followed-run.js';
import { studioRoutes } from './routes.js';
import { RunStore } from './run-store.js';
import { StudioService } from './service.js';

export async function startStudio(ctx: HangarContext): Promise<LoadedOnFirstUse> {
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
  let sweeper: NodeJS.Timeout | undefined;
  if (team) {
    // A run marked running may be executing on another live instance: only those of instances no
    // longer listed are recovered — now, and every heartbeat after, so a run whose instance died
    // ends (and its followers elsewhere with it) without waiting for that instance to return.
    const sweep = async () => {
      const live = new Set((await team.instances()).map((instance) => instance.id));
      const recovered = await runs.recover((run) => !run.instance || !live.has(run.instance));
      if (recovered) ctx.log.warn(`studio: ${recovered} run(s) were executing on an instance that stopped; marked as failed`);
    };
    await sweep();
    sweeper = setInterval(() => void sweep().catch((err) => ctx.log.warn(`studio: ${errorMessage(err)}`)), team.heartbeatSeconds * 1000);
    sweeper.unref();
  } else {
    const recovered = await runs.recover();
    if (recovered) ctx.log.warn(`studio: ${recovered} run(s) were executing when the server last stopped; marked as failed`);
  }
  const studio = new StudioService({
    findAgent: (name) => findAgent(ctx.registry, name),
    listAgents: () => listAgents(ctx),
    runtime: ctx.services.get('agents'),
    runs,
    log: ctx.log,
    version: ctx.version,
    platformTitle: `${PLATFORM_NAME} Studio`,
    ...(team ? { announcements: team } : {}),
  });
  return {
    routes: studioRoutes(studio, ctx.settings),
    async close() {
      clearInterval(sweeper);
      await studio.close();
    },
  };
}

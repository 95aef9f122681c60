/**
 * The studio subsystem: the debug interface under /studio, built on the agent runtime (the
 * `agents` service). It is loaded on its first request (core/http/on-first-use.ts), not at start:
 * a start that never debugs an agent does not evaluate its modules, set it up or register its 15
 * routes (~21 ms of a start). Loading it (start.ts) marks runs a previous process left executing
 * as failed (in team mode: runs of instances no longer live, checked every heartbeat from then
 * on), before its first answer, so no request sees such a run as running. On stop, when it was
 * loaded, it cancels executing runs (they stay resumable) and writes what is pending. In team
 * mode a run executing on one instance is followed from any other (followed-run.ts); the other
 * instance loads its studio on that request.
 */
import { mountOnFirstUse } from '../http/on-first-use.js';
import type { HangarContext, Subsystem } from '../kernel/context.js';

/** Each server's studio mount: closing it stops the studio if a request loaded it. */
const mounted = new WeakMap<HangarContext, { close(): Promise<void> }>();

export const studioSubsystem: Subsystem = {
  name: 'studio',
  depends: ['agents'],
  routes: (app, ctx) => {
    mounted.set(
      ctx,
      mountOnFirstUse(app, ctx.services.get('openapi'), {
        prefixes: ['/studio'],
        load: async () => (await import('./start.js')).startStudio(ctx),
      }),
    );
  },
  async close(ctx) {
    await mounted.get(ctx)?.close();
  },
};

/**
 * The control plane as the server wires it. Mounted right after the logs subsystem and before
 * every other router, so its gate (maintenance, drain, disable) sees requests first. Off by
 * default; when on it requires `control.token`, checked on every /api/v1/control request.
 */
import type { HangarContext, Subsystem } from '../kernel/context.js';
import { CONTROL_DOCS, controlDisabledRoutes, controlGate, controlRoutes } from './routes.js';
import { ControlPlane } from './service.js';

const planes = new WeakMap<HangarContext, ControlPlane>();

export function controlPlaneOf(ctx: HangarContext): ControlPlane | undefined {
  return planes.get(ctx);
}

export const controlSubsystem: Subsystem = {
  name: 'control',
  setup(ctx) {
    const { enabled, token } = ctx.settings.control;
    if (!enabled) return;
    if (!token) throw new Error('control.enabled is on but control.token is not set: the control plane needs its own token (HANGAR_CONTROL__TOKEN)');
    planes.set(ctx, new ControlPlane(ctx));
    ctx.openapi.add(...CONTROL_DOCS);
  },
  routes(app, ctx) {
    const plane = planes.get(ctx);
    if (!plane) return controlDisabledRoutes(app);
    app.addHook('preHandler', controlGate(plane, ctx.publicPaths));
    controlRoutes(app, plane, ctx.settings.control.token!);
  },
};

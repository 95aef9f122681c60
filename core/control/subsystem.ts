/**
 * The control plane as the server wires it. Off by default; when on it requires `control.token`,
 * checked on every request under /api/v1/control (its own encapsulated scope), and its gate
 * (maintenance, drain, disable) runs before every other route's preHandlers.
 *
 * The `control` service is provided whether or not the plane is on: off, nothing is ever held and
 * maintenance stays off, so readers (health, readiness) need not ask which.
 */
import type { Subsystem } from '../kernel/context.js';
import { CONTROL_PREFIX, controlDisabledRoutes, controlGate } from './gate.js';
import { ControlPlane } from './service.js';

declare module '../kernel/services.js' {
  interface ServiceMap {
    control: ControlPlane;
  }
}

export const controlSubsystem: Subsystem = {
  name: 'control',
  provides: ['control'],
  // Both are read when a request comes, not at setup.
  uses: ['pipelines', 'invocations'],
  setup(ctx) {
    const { enabled, token } = ctx.settings.control;
    if (enabled && !token)
      throw new Error('control.enabled is on but control.token is not set: the control plane needs its own token (HANGAR_CONTROL__TOKEN)');
    ctx.services.provide('control', new ControlPlane(ctx));
  },
  routes(app, ctx) {
    const { enabled, token } = ctx.settings.control;
    if (!enabled || !token) return controlDisabledRoutes(app);
    const plane = ctx.services.get('control');
    app.addHook('preValidation', controlGate(plane, ctx.publicPaths));
    // Its routes and their schemas are imported only here, with the plane on (it is off by default).
    app.register(
      async (scope) => {
        const { controlScope } = await import('./routes.js');
        await controlScope(plane, token)(scope, {});
      },
      { prefix: CONTROL_PREFIX },
    );
  },
};

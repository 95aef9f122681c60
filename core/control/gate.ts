/**
 * What the control plane applies to every request, loaded at every start: its gate (maintenance,
 * drain, disable, in-flight counting) and, with the plane off, the routes that say so. The plane's
 * own routes and schemas (routes.ts, schemas.ts) are imported only when it is on.
 */
import type { FastifyInstance, preValidationHookHandler } from 'fastify';
import { pathOf } from '../http/request.js';
import { defineRoute, mountRoutes, type RouteMethod, resourceCallOf } from '../http/route.js';
import { fail, type HangarError } from '../kernel/errors.js';
import type { ControlPlane } from './service.js';

export const CONTROL_PREFIX = '/api/v1/control';

/** Routes maintenance mode leaves alone: probes, per-resource health, and the control plane. */
const isExempt = (path: string, publicPaths: ReadonlySet<string>) =>
  publicPaths.has(path) || path.endsWith('/health') || path === CONTROL_PREFIX || path.startsWith(`${CONTROL_PREFIX}/`);

/**
 * The gate: maintenance mode, then drain/disable of the resource a request calls, then in-flight
 * counting of calls that get through. It is a preValidation hook, so it runs before every
 * preHandler — the invocation log's included, whatever the order subsystems add their hooks in —
 * and a refused call to a resource is logged here, since the log's own hook never sees it.
 */
export function controlGate(plane: ControlPlane, publicPaths: ReadonlySet<string>): preValidationHookHandler {
  return function controlGateHook(req, reply, done) {
    const path = pathOf(req);
    const call = resourceCallOf(req);
    const refuse = (error: HangarError) => {
      if (call?.invocation) plane.refused(call, req.principal, req.body, error.message);
      done(error);
    };
    const maintenance = plane.maintenanceRefusal();
    if (maintenance && !isExempt(path, publicPaths)) return refuse(maintenance);
    if (!call) return done();
    const refused = plane.refusal(call);
    if (refused) return refuse(refused);
    if (call.invocation) {
      const leave = plane.enter(call);
      reply.raw.on('finish', leave);
      reply.raw.on('close', leave);
    }
    done();
  };
}

/** With the control plane off, its routes say so (404, as the spec asks) rather than falling through. */
export function controlDisabledRoutes(app: FastifyInstance): void {
  const disabled = async () => {
    throw fail('HANGAR_CONTROL_DISABLED', {});
  };
  const every = app.supportedMethods as RouteMethod[];
  mountRoutes(app, [
    defineRoute({ method: every, url: CONTROL_PREFIX, summary: 'the control plane, off', config: { hidden: true }, handler: disabled }),
    defineRoute({
      method: every,
      url: `${CONTROL_PREFIX}/*`,
      summary: 'the control plane, off',
      config: { hidden: true },
      handler: disabled,
    }),
  ]);
}

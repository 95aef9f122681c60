/**
 * Routes of the control plane, imported only when it is on (core/control/subsystem.ts); the gate
 * that applies its state to every other request is in `gate.ts`, logic in `service.ts`.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { pathOf } from '../http/request.js';
import { defineRoute, mountRoutes, type RouteMethod } from '../http/route.js';
import { fail } from '../kernel/errors.js';
import { resolveSecret } from '../kernel/settings.js';
import { sameSecret } from '../lib/same-secret.js';
import {
  ControlledResource,
  DisableRequest,
  DrainRequest,
  LogLevelRequest,
  MaintenanceRequest,
  MaintenanceStatus,
  RateLimitRequest,
  RateLimitStatus,
  ResourceList,
  ResourceParams,
  ResourceStatus,
} from './schemas.js';
import type { ControlPlane } from './service.js';

export const CONTROL_TOKEN_HEADER = 'x-control-token';

/** Every request under the prefix needs the control token, unknown paths included (the scope's catch-alls). */
function controlToken(plane: ControlPlane, token: string): onRequestHookHandler {
  return function controlTokenHook(req, _reply, done) {
    const header = req.headers[CONTROL_TOKEN_HEADER];
    const presented = typeof header === 'string' ? header : undefined;
    let expected: string | undefined;
    try {
      expected = resolveSecret(token);
    } catch {
      expected = undefined;
    }
    if (!presented || !expected || !sameSecret(presented, expected)) {
      plane.audit('unauthorized', `${req.method} ${pathOf(req)}`, req.principal, Date.now(), {
        ok: false,
        error: presented ? 'invalid control token' : 'missing control token',
      });
      return done(fail('HANGAR_CONTROL_TOKEN_REQUIRED', {}, { headers: { 'WWW-Authenticate': 'Bearer' } }));
    }
    done();
  };
}

const tags = ['control'];
const auth = { 401: 'Missing or wrong X-Control-Token' };

/** The control routes, relative to `CONTROL_PREFIX` (they are mounted in its scope). */
export function controlRoutes(plane: ControlPlane) {
  /** Run an action and log it, whatever its outcome. */
  const act = async <T>(req: FastifyRequest, action: string, target: string, input: unknown, run: () => T | Promise<T>): Promise<T> => {
    const started = Date.now();
    try {
      const output = await run();
      plane.audit(action, target, req.principal, started, { ok: true, input, output });
      return output;
    } catch (err) {
      plane.audit(action, target, req.principal, started, { ok: false, input, error: err });
      throw err;
    }
  };

  const target = (params: { resource: string; name: string }) => {
    const parsed = ControlledResource.safeParse(params.resource);
    if (!parsed.success)
      throw fail('HANGAR_CONTROL_RESOURCE_TYPE_UNKNOWN', { resource: params.resource, expected: ControlledResource.options.join(', ') });
    return { resource: parsed.data, name: params.name };
  };

  return [
    defineRoute({
      method: 'GET',
      url: '/',
      summary:
        'Control plane overview: maintenance, resource counts by state, log level, rate limits (header X-Control-Token; 404 when control.enabled is off)',
      tags,
      schema: { response: { 200: 'Overview', ...auth } },
      handler: async () => {
        const resources = await plane.list();
        const byState: Record<string, number> = { active: 0, draining: 0, drained: 0, disabled: 0 };
        for (const r of resources) byState[r.state]! += 1;
        return {
          maintenance: plane.maintenanceStatus,
          resources: byState,
          log_level: plane.settings().logLevel,
          rate_limit: plane.rateLimit(),
        };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/resources',
      summary:
        'Every agent, endpoint, plugin, ingestor and pipeline with its state (active, draining, drained, disabled) and calls in flight',
      tags,
      schema: { response: { 200: { description: 'Resources', schema: ResourceList }, ...auth } },
      handler: async () => ({ resources: await plane.list() }),
    }),
    defineRoute({
      method: 'GET',
      url: '/resources/:resource/:name',
      summary: 'One resource with its state',
      tags,
      schema: {
        params: ResourceParams,
        response: { 200: { description: 'Resource', schema: ResourceStatus }, 404: 'Unknown resource', ...auth },
      },
      handler: ({ params }) => {
        const { resource, name } = target(params);
        return plane.get(resource, name);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/resources/:resource/:name/drain',
      summary: 'Drain: refuse new calls with 503 + Retry-After while calls in flight finish (optionally wait for them)',
      tags,
      schema: {
        params: ResourceParams,
        body: DrainRequest,
        response: { 200: { description: 'State after the drain began (or finished, with wait_ms)', schema: ResourceStatus }, ...auth },
      },
      // The resource type is checked before the body is read: 404 before 422.
      handler: (input) => {
        const { resource, name } = target(input.params);
        const body = input.body;
        return act(input.req, 'drain', `${resource}/${name}`, body, () => plane.drain(resource, name, body));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/resources/:resource/:name/disable',
      summary: 'Disable: refuse calls with 503 until enabled',
      tags,
      schema: {
        params: ResourceParams,
        body: DisableRequest,
        response: { 200: { description: 'State', schema: ResourceStatus }, ...auth },
      },
      handler: (input) => {
        const { resource, name } = target(input.params);
        const body = input.body;
        return act(input.req, 'disable', `${resource}/${name}`, body, () => plane.disable(resource, name, body.reason));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/resources/:resource/:name/enable',
      summary: 'Enable: serve again (ends a drain or a disable)',
      tags,
      schema: { params: ResourceParams, response: { 200: { description: 'State', schema: ResourceStatus }, ...auth } },
      handler: ({ params, req }) => {
        const { resource, name } = target(params);
        return act(req, 'enable', `${resource}/${name}`, {}, () => plane.enable(resource, name));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/maintenance',
      summary: 'Maintenance mode status',
      tags,
      schema: { response: { 200: { description: 'Status', schema: MaintenanceStatus }, ...auth } },
      handler: () => plane.maintenanceStatus,
    }),
    defineRoute({
      method: 'POST',
      url: '/maintenance',
      summary: 'Turn maintenance mode on or off: everything but health, readiness and control answers 503',
      tags,
      schema: { body: MaintenanceRequest, response: { 200: { description: 'Status', schema: MaintenanceStatus }, ...auth } },
      handler: ({ body, req }) => act(req, 'maintenance', body.enabled ? 'on' : 'off', body, () => plane.setMaintenance(body)),
    }),
    defineRoute({
      method: 'POST',
      url: '/rediscover',
      summary: 'Rescan the drop-in folders now',
      tags,
      schema: { response: { 200: 'What is loaded and what failed', ...auth } },
      handler: ({ req }) => act(req, 'rediscover', 'workspace', {}, () => plane.rediscover()),
    }),
    defineRoute({
      method: 'GET',
      url: '/settings',
      summary: 'Effective settings, secrets redacted (run-time log level and rate limits included)',
      tags,
      schema: { response: { 200: 'Settings', ...auth } },
      handler: () => plane.settings(),
    }),
    defineRoute({
      method: 'POST',
      url: '/log-level',
      summary: 'Change the log level at run time',
      tags,
      schema: { body: LogLevelRequest, response: { 200: 'New and previous level', ...auth } },
      handler: ({ body, req }) => act(req, 'log-level', body.level, body, () => plane.setLogLevel(body.level)),
    }),
    defineRoute({
      method: 'POST',
      url: '/rate-limit',
      summary: 'Change rate limits at run time (starts a fresh window)',
      tags,
      schema: { body: RateLimitRequest, response: { 200: { description: 'Limits in effect', schema: RateLimitStatus }, ...auth } },
      handler: ({ body, req }) => act(req, 'rate-limit', 'server', body, () => plane.setRateLimit(body)),
    }),
  ];
}

/**
 * The control plane as an encapsulated plugin, registered under `CONTROL_PREFIX`: the token hook
 * guards only its routes, and catch-alls keep unknown control paths behind the token too (they
 * then answer the server's usual 404).
 */
export function controlScope(plane: ControlPlane, token: string): FastifyPluginAsync {
  return async (scope) => {
    scope.addHook('onRequest', controlToken(plane, token));
    const every = scope.supportedMethods as RouteMethod[];
    const unknownPath = {
      summary: 'no such control route',
      config: { hidden: true },
      handler: ({ reply }: { reply: FastifyReply }) => reply.callNotFound(),
    };
    mountRoutes(scope, [
      ...controlRoutes(plane),
      // The prefix itself with a method no route takes, and every path below it.
      defineRoute({ method: every.filter((m) => m !== 'GET' && m !== 'HEAD'), url: '/', ...unknownPath }),
      defineRoute({ method: every, url: '/*', ...unknownPath }),
    ]);
  };
}

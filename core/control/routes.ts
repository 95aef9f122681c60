/**
 * Routes of the control plane, and the gate that applies its state to every other request. Logic
 * is in `service.ts`.
 */
import type { FastifyInstance, FastifyRequest, preHandlerHookHandler } from 'fastify';
import { z } from 'zod';
import { type HttpError, notFound, serviceUnavailable, unauthorized } from '../http/errors.js';
import type { RouteDoc } from '../http/openapi.js';
import { pathOf } from '../http/request.js';
import { sameSecret } from '../http/security.js';
import { parseInput } from '../http/validate.js';
import { resolveSecret } from '../kernel/settings.js';
import { resourceOf } from '../logs/resource-of.js';
import {
  ControlledResource,
  DisableRequest,
  DrainRequest,
  LogLevelRequest,
  MaintenanceRequest,
  MaintenanceStatus,
  RateLimitRequest,
  RateLimitStatus,
  ResourceStatus,
} from './schemas.js';
import type { ControlPlane } from './service.js';

export const CONTROL_PREFIX = '/api/v1/control';
export const CONTROL_TOKEN_HEADER = 'x-control-token';

/** Routes maintenance mode leaves alone: probes, per-resource health, and the control plane. */
const isExempt = (path: string, publicPaths: ReadonlySet<string>) =>
  publicPaths.has(path) || path.endsWith('/health') || path === CONTROL_PREFIX || path.startsWith(`${CONTROL_PREFIX}/`);

/**
 * The gate, mounted before every other router (the invocation log's included, so its routes obey
 * maintenance too): maintenance mode, then drain/disable of the resource a request calls, then
 * in-flight counting of calls that get through. A refused call to a resource is still logged, since
 * the log's own middleware never sees it.
 */
export function controlGate(plane: ControlPlane, publicPaths: ReadonlySet<string>): preHandlerHookHandler {
  return function controlGateHook(req, reply, done) {
    const path = pathOf(req);
    const call = resourceOf(req.method, path);
    const refuse = (error: HttpError) => {
      if (call?.invocation) plane.refused(call, req.principal, req.body, error.message);
      done(error);
    };
    const maintenance = plane.maintenanceStatus;
    if (maintenance.enabled && !isExempt(path, publicPaths)) {
      return refuse(serviceUnavailable(`Hangar is in maintenance${maintenance.message ? `: ${maintenance.message}` : ''}`, maintenance.retry_after));
    }
    if (!call) return done();
    const refused = plane.refusal(call);
    if (refused) return refuse(serviceUnavailable(refused.detail, refused.retryAfter));
    if (call.invocation) {
      const leave = plane.enter(call);
      reply.raw.on('finish', leave);
      reply.raw.on('close', leave);
    }
    done();
  };
}

const underControl = (path: string) => path === CONTROL_PREFIX || path.startsWith(`${CONTROL_PREFIX}/`);

export function controlRoutes(app: FastifyInstance, plane: ControlPlane, token: string): void {
  // A root hook rather than a per-route one, so unknown control paths need the token too.
  app.addHook('onRequest', function controlToken(req, _reply, done) {
    const path = pathOf(req);
    if (!underControl(path)) return done();
    const header = req.headers[CONTROL_TOKEN_HEADER];
    const presented = typeof header === 'string' ? header : undefined;
    let expected: string | undefined;
    try {
      expected = resolveSecret(token);
    } catch {
      expected = undefined;
    }
    if (!presented || !expected || !sameSecret(presented, expected)) {
      plane.audit('unauthorized', `${req.method} ${path}`, req.principal, Date.now(), { ok: false, error: presented ? 'invalid control token' : 'missing control token' });
      return done(unauthorized(`the control plane needs its token in the X-Control-Token header`));
    }
    done();
  });

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

  const target = (req: FastifyRequest) => {
    const params = req.params as { resource: string; name: string };
    const parsed = ControlledResource.safeParse(params.resource);
    if (!parsed.success) throw notFound(`unknown resource type "${params.resource}"; expected one of ${ControlledResource.options.join(', ')}`);
    return { resource: parsed.data, name: params.name };
  };

  app.get(CONTROL_PREFIX, async () => {
    const resources = await plane.list();
    const byState: Record<string, number> = { active: 0, draining: 0, drained: 0, disabled: 0 };
    for (const r of resources) byState[r.state]! += 1;
    return { maintenance: plane.maintenanceStatus, resources: byState, log_level: plane.settings().logLevel, rate_limit: plane.rateLimit() };
  });

  app.get(`${CONTROL_PREFIX}/resources`, async () => {
    return { resources: await plane.list() };
  });

  app.get(`${CONTROL_PREFIX}/resources/:resource/:name`, async (req) => {
    const { resource, name } = target(req);
    return await plane.get(resource, name);
  });

  app.post(`${CONTROL_PREFIX}/resources/:resource/:name/drain`, async (req) => {
    const { resource, name } = target(req);
    const body = parseInput(DrainRequest, req.body, 'body');
    return act(req, 'drain', `${resource}/${name}`, body, () => plane.drain(resource, name, body));
  });

  app.post(`${CONTROL_PREFIX}/resources/:resource/:name/disable`, async (req) => {
    const { resource, name } = target(req);
    const body = parseInput(DisableRequest, req.body, 'body');
    return act(req, 'disable', `${resource}/${name}`, body, () => plane.disable(resource, name, body.reason));
  });

  app.post(`${CONTROL_PREFIX}/resources/:resource/:name/enable`, async (req) => {
    const { resource, name } = target(req);
    return act(req, 'enable', `${resource}/${name}`, {}, () => plane.enable(resource, name));
  });

  app.get(`${CONTROL_PREFIX}/maintenance`, async () => {
    return plane.maintenanceStatus;
  });

  app.post(`${CONTROL_PREFIX}/maintenance`, async (req) => {
    const body = parseInput(MaintenanceRequest, req.body, 'body');
    return act(req, 'maintenance', body.enabled ? 'on' : 'off', body, () => plane.setMaintenance(body));
  });

  app.post(`${CONTROL_PREFIX}/rediscover`, async (req) => {
    return act(req, 'rediscover', 'workspace', {}, () => plane.rediscover());
  });

  app.get(`${CONTROL_PREFIX}/settings`, async () => {
    return plane.settings();
  });

  app.post(`${CONTROL_PREFIX}/log-level`, async (req) => {
    const body = parseInput(LogLevelRequest, req.body, 'body');
    return act(req, 'log-level', body.level, body, () => plane.setLogLevel(body.level));
  });

  app.post(`${CONTROL_PREFIX}/rate-limit`, async (req) => {
    const body = parseInput(RateLimitRequest, req.body, 'body');
    return act(req, 'rate-limit', 'server', body, () => plane.setRateLimit(body));
  });
}

/** With the control plane off, its routes say so (404, as the spec asks) rather than falling through. */
export function controlDisabledRoutes(app: FastifyInstance): void {
  const disabled = async () => {
    throw notFound('the control plane is disabled (setting control.enabled)');
  };
  app.all(CONTROL_PREFIX, disabled);
  app.all(`${CONTROL_PREFIX}/*`, disabled);
}

const tags = ['control'];
const auth = { 401: { description: 'Missing or wrong X-Control-Token' } };
const ResourceList = z.object({ resources: z.array(ResourceStatus) });
const resourcePath = `${CONTROL_PREFIX}/resources/{resource}/{name}`;

export const CONTROL_DOCS: RouteDoc[] = [
  { method: 'get', path: CONTROL_PREFIX, summary: 'Control plane overview: maintenance, resource counts by state, log level, rate limits (header X-Control-Token; 404 when control.enabled is off)', tags, responses: { 200: { description: 'Overview' }, ...auth } },
  { method: 'get', path: `${CONTROL_PREFIX}/resources`, summary: 'Every agent, endpoint, plugin, ingestor and pipeline with its state (active, draining, drained, disabled) and calls in flight', tags, responses: { 200: { description: 'Resources', schema: ResourceList }, ...auth } },
  { method: 'get', path: resourcePath, summary: 'One resource with its state', tags, responses: { 200: { description: 'Resource', schema: ResourceStatus }, 404: { description: 'Unknown resource' }, ...auth } },
  { method: 'post', path: `${resourcePath}/drain`, summary: 'Drain: refuse new calls with 503 + Retry-After while calls in flight finish (optionally wait for them)', tags, body: DrainRequest, responses: { 200: { description: 'State after the drain began (or finished, with wait_ms)', schema: ResourceStatus }, ...auth } },
  { method: 'post', path: `${resourcePath}/disable`, summary: 'Disable: refuse calls with 503 until enabled', tags, body: DisableRequest, responses: { 200: { description: 'State', schema: ResourceStatus }, ...auth } },
  { method: 'post', path: `${resourcePath}/enable`, summary: 'Enable: serve again (ends a drain or a disable)', tags, responses: { 200: { description: 'State', schema: ResourceStatus }, ...auth } },
  { method: 'get', path: `${CONTROL_PREFIX}/maintenance`, summary: 'Maintenance mode status', tags, responses: { 200: { description: 'Status', schema: MaintenanceStatus }, ...auth } },
  { method: 'post', path: `${CONTROL_PREFIX}/maintenance`, summary: 'Turn maintenance mode on or off: everything but health, readiness and control answers 503', tags, body: MaintenanceRequest, responses: { 200: { description: 'Status', schema: MaintenanceStatus }, ...auth } },
  { method: 'post', path: `${CONTROL_PREFIX}/rediscover`, summary: 'Rescan the drop-in folders now', tags, responses: { 200: { description: 'What is loaded and what failed' }, ...auth } },
  { method: 'get', path: `${CONTROL_PREFIX}/settings`, summary: 'Effective settings, secrets redacted (run-time log level and rate limits included)', tags, responses: { 200: { description: 'Settings' }, ...auth } },
  { method: 'post', path: `${CONTROL_PREFIX}/log-level`, summary: 'Change the log level at run time', tags, body: LogLevelRequest, responses: { 200: { description: 'New and previous level' }, ...auth } },
  { method: 'post', path: `${CONTROL_PREFIX}/rate-limit`, summary: 'Change rate limits at run time (starts a fresh window)', tags, body: RateLimitRequest, responses: { 200: { description: 'Limits in effect', schema: RateLimitStatus }, ...auth } },
];


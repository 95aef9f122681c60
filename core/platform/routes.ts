import type { FastifyInstance } from 'fastify';
import { findAgent } from '../agents/kind.js';
import { controlPlaneOf } from '../control/subsystem.js';
import type { HangarContext } from '../kernel/context.js';
import { PLATFORM_NAME } from '../kernel/version.js';
import { serviceUnavailable } from '../http/errors.js';
import { param } from '../http/request.js';
import { buildAgentCard } from './card.js';
import * as S from './schemas.js';
import { aggregatedHealth, agentStatus, listAgents, platformStatus } from './service.js';
import { renderStatusPage } from './status-page.js';

/** Root routes and the per-agent inspection routes (health, config, prompts, card). */
export function platformRoutes(app: FastifyInstance, ctx: HangarContext): void {
  // A browser opening the bare address (a typed or copied URL) lands in the UI, as Jupyter sends `/`
  // to `/tree`; programs asking for JSON (or anything, `*/*`) keep the platform info.
  app.get('/', (req, reply) => {
    reply.header('vary', 'Accept');
    if (wantsHtml(req.headers.accept)) return reply.redirect('/ui/', 302);
    return { platform: PLATFORM_NAME, version: ctx.version, agents: listAgents(ctx).length };
  });
  app.get('/health', () => {
    return aggregatedHealth(ctx);
  });
  // Liveness: the process answers. Readiness: discovery finished and not shutting down.
  app.get('/ready', () => {
    return { status: 'ok' };
  });
  app.get('/readiness', () => {
    if (!ctx.lifecycle.ready) throw serviceUnavailable(ctx.lifecycle.stopping ? 'shutting down' : 'discovery in progress', 1);
    // Not ready while the store cannot write; the probe retries a write, so it recovers by itself.
    const store = ctx.store.health();
    if (!store.ok) throw serviceUnavailable(store.detail, 1);
    // Maintenance refuses every call but probes: a load balancer must stop sending traffic here.
    const maintenance = controlPlaneOf(ctx)?.maintenanceStatus;
    if (maintenance?.enabled) throw serviceUnavailable(`in maintenance${maintenance.message ? `: ${maintenance.message}` : ''}`, maintenance.retry_after);
    return { status: 'ready', agents: listAgents(ctx).length };
  });
  app.get('/status', async (_req, reply) => {
    return reply
      .type('text/html; charset=utf-8')
      .header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'")
      .send(renderStatusPage(await platformStatus(ctx)));
  });
  app.get('/api/v1/status', async () => {
    return platformStatus(ctx);
  });
  app.get('/api/v1/agents', () => {
    const agents: Record<string, unknown> = {};
    for (const a of listAgents(ctx)) {
      agents[a.name] = { name: a.name, slug: a.slug, description: a.description, version: a.version, framework: a.framework };
    }
    return { agents };
  });
  app.get('/.well-known/agent.json', () => {
    const agents: Record<string, unknown> = {};
    for (const agent of listAgents(ctx)) agents[agent.name] = buildAgentCard(ctx, agent);
    return { platform: PLATFORM_NAME, version: ctx.version, agents };
  });
  app.get('/metrics', async (_req, reply) => {
    return reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
  });

  app.get('/api/v1/:agent/health', (req) => {
    const agent = findAgent(ctx.registry, param(req, 'agent'));
    return { status: agentStatus(ctx, agent.name), agent: agent.name, framework: agent.framework };
  });
  app.get('/api/v1/:agent/config', (req) => {
    const agent = findAgent(ctx.registry, param(req, 'agent'));
    return { agent: agent.name, config: agent.config };
  });
  app.get('/api/v1/:agent/prompts', (req) => {
    const agent = findAgent(ctx.registry, param(req, 'agent'));
    return { agent: agent.name, versions: Object.keys(agent.prompts.versions), active: agent.prompts.active };
  });
  app.get('/api/v1/:agent/card', (req) => {
    return buildAgentCard(ctx, findAgent(ctx.registry, param(req, 'agent')));
  });
}

/** True when the client names HTML explicitly (browsers do; `fetch` and curl send `*\/*`). */
function wantsHtml(accept: string | undefined): boolean {
  return !!accept && /(^|,)\s*text\/html\s*(;|,|$)/i.test(accept);
}

/** Route docs for /openapi.json: the fixed platform routes, and the per-agent ones for every agent. */
export function registerPlatformDocs(ctx: HangarContext): void {
  const tags = ['platform'];
  ctx.openapi.add(
    { method: 'get', path: '/', summary: 'Platform info (a browser asking for text/html is redirected to /ui/)', tags, responses: { 200: { description: 'OK', schema: S.PlatformInfo }, 302: { description: 'Accept names text/html: redirect to the UI at /ui/' } } },
    { method: 'get', path: '/health', summary: 'Aggregated health of every agent', tags, responses: { 200: { description: 'OK', schema: S.AggregatedHealth } } },
    { method: 'get', path: '/ready', summary: 'Liveness probe', tags },
    { method: 'get', path: '/readiness', summary: 'Readiness probe: 200 once discovery finished, 503 before, while stopping, while the store cannot write and in maintenance mode', tags, responses: { 200: { description: 'ready' }, 503: { description: 'not ready' } } },
    { method: 'get', path: '/status', summary: 'Status dashboard (HTML)', tags, responses: { 200: { description: 'OK', contentType: 'text/html' } } },
    { method: 'get', path: '/api/v1/status', summary: 'Platform status', tags, responses: { 200: { description: 'OK', schema: S.PlatformStatus } } },
    { method: 'get', path: '/api/v1/agents', summary: 'Agent summaries', tags, responses: { 200: { description: 'OK', schema: S.AgentList } } },
    { method: 'get', path: '/.well-known/agent.json', summary: 'A2A discovery document', tags, responses: { 200: { description: 'OK', schema: S.DiscoveryDocument } } },
    { method: 'get', path: '/metrics', summary: 'Prometheus metrics', tags, responses: { 200: { description: 'OK', contentType: 'text/plain' } } },
  );
  ctx.openapi.addProvider(() =>
    listAgents(ctx).flatMap((agent) => {
      const base = `/api/v1/${agent.name}`;
      const agentTags = [`agent:${agent.name}`];
      return [
        { method: 'get' as const, path: `${base}/health`, summary: `Health of ${agent.name}`, tags: agentTags, responses: { 200: { description: 'OK', schema: S.AgentHealth } } },
        { method: 'get' as const, path: `${base}/config`, summary: `Configuration of ${agent.name}`, tags: agentTags, responses: { 200: { description: 'OK', schema: S.AgentConfigResponse } } },
        { method: 'get' as const, path: `${base}/prompts`, summary: `Prompt versions of ${agent.name}`, tags: agentTags, responses: { 200: { description: 'OK', schema: S.AgentPrompts } } },
        { method: 'get' as const, path: `${base}/card`, summary: `Agent card of ${agent.name}`, description: agent.description, tags: agentTags, responses: { 200: { description: 'OK', schema: S.AgentCardSchema } } },
      ];
    }),
  );
}

/**
 * Root routes (info, probes, status, metrics, discovery) and the per-agent inspection routes
 * (health, config, prompts, card), declared once for every agent: `/api/v1/{agent}/...`, whose
 * `agent` parameter lists the loaded agents in /openapi.json (the subsystem describes it).
 */

import { findAgent } from '../agents/kind.js';
import { AgentParams } from '../agents/schemas.js';
import { type AnyRoute, defineRoute } from '../http/route.js';
import type { HangarContext } from '../kernel/context.js';
import { fail } from '../kernel/errors.js';
import { PLATFORM_NAME } from '../kernel/version.js';
import { buildAgentCard } from './card.js';
import * as S from './schemas.js';
import { agentStatus, aggregatedHealth, listAgents, platformStatus } from './service.js';
import { renderStatusPage } from './status-page.js';

const tags = ['platform'];
const agentTags = ['agents'];
const unknownAgent = 'unknown agent';

/** True when the client names HTML explicitly (browsers do; `fetch` and curl send `*\/*`). */
function wantsHtml(accept: string | undefined): boolean {
  return !!accept && /(^|,)\s*text\/html\s*(;|,|$)/i.test(accept);
}

/** Why the server is not ready, or undefined when it is (see /readiness). */
function notReady(ctx: HangarContext) {
  const retryOnce = { headers: { 'Retry-After': '1' } };
  if (!ctx.lifecycle.ready)
    return ctx.lifecycle.stopping ? fail('HANGAR_PLATFORM_STOPPING', {}, retryOnce) : fail('HANGAR_PLATFORM_STARTING', {}, retryOnce);
  // Not ready while the store cannot write; the probe retries a write, so it recovers by itself.
  const store = ctx.store.health();
  if (!store.ok) return fail('HANGAR_PLATFORM_STORE_UNWRITABLE', { problem: store.detail }, retryOnce);
  // Maintenance refuses every call but probes: a load balancer must stop sending traffic here.
  const maintenance = ctx.services.find('control')?.maintenanceStatus;
  if (maintenance?.enabled) {
    return fail(
      'HANGAR_PLATFORM_MAINTENANCE',
      { note: maintenance.message ? `: ${maintenance.message}` : '' },
      { headers: maintenance.retry_after ? { 'Retry-After': String(maintenance.retry_after) } : {} },
    );
  }
  return undefined;
}

export function platformRoutes(ctx: HangarContext): AnyRoute[] {
  const agentNamed = (name: string) => findAgent(ctx.registry, name);
  return [
    defineRoute({
      method: 'GET',
      url: '/',
      summary: 'Platform info (a browser asking for text/html is redirected to /ui/)',
      tags,
      schema: { response: { 200: S.PlatformInfo, 302: 'Accept names text/html: redirect to the UI at /ui/' } },
      // A browser opening the bare address (a typed or copied URL) lands in the UI, as Jupyter sends
      // `/` to `/tree`; programs asking for JSON (or anything, `*/*`) keep the platform info.
      handler: ({ req, reply }) => {
        reply.header('vary', 'Accept');
        if (wantsHtml(req.headers.accept)) return reply.redirect('/ui/', 302);
        return { platform: PLATFORM_NAME, version: ctx.version, agents: listAgents(ctx).length };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/health',
      summary: 'Aggregated health of every agent',
      tags,
      schema: { response: { 200: S.AggregatedHealth } },
      config: { public: true },
      handler: () => aggregatedHealth(ctx),
    }),
    defineRoute({
      method: 'GET',
      url: '/ready',
      summary: 'Liveness probe',
      tags,
      config: { public: true },
      handler: () => ({ status: 'ok' }),
    }),
    defineRoute({
      method: 'GET',
      url: '/readiness',
      summary:
        'Readiness probe: 200 once discovery finished, 503 before, while stopping, while the store cannot write and in maintenance mode',
      tags,
      schema: { response: { 200: 'ready', 503: 'not ready' } },
      config: { public: true },
      handler: () => {
        const refusal = notReady(ctx);
        if (refusal) throw refusal;
        return { status: 'ready', agents: listAgents(ctx).length };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/status',
      summary: 'Status dashboard (HTML)',
      tags,
      schema: { response: { 200: { description: 'OK', contentType: 'text/html' } } },
      handler: async ({ reply }) =>
        reply
          .type('text/html; charset=utf-8')
          .header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'")
          .send(renderStatusPage(await platformStatus(ctx))),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/status',
      summary: 'Platform status',
      tags,
      schema: { response: { 200: S.PlatformStatus } },
      handler: () => platformStatus(ctx),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/agents',
      summary: 'Agent summaries',
      tags,
      schema: { response: { 200: S.AgentList } },
      handler: () => {
        const agents: Record<string, unknown> = {};
        for (const a of listAgents(ctx)) {
          agents[a.name] = { name: a.name, slug: a.slug, description: a.description, version: a.version, framework: a.framework };
        }
        return { agents };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/.well-known/agent.json',
      summary: 'A2A discovery document',
      tags,
      schema: { response: { 200: S.DiscoveryDocument } },
      config: { public: true },
      handler: () => {
        const agents: Record<string, unknown> = {};
        for (const agent of listAgents(ctx)) agents[agent.name] = buildAgentCard(ctx, agent);
        return { platform: PLATFORM_NAME, version: ctx.version, agents };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/metrics',
      summary: 'Prometheus metrics',
      tags,
      schema: { response: { 200: { description: 'OK', contentType: 'text/plain' } } },
      handler: async ({ reply }) => reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics()),
    }),

    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/health',
      summary: 'Health of an agent',
      tags: agentTags,
      schema: { params: AgentParams, response: { 200: S.AgentHealth, 404: unknownAgent } },
      config: { resource: { kind: 'agent', param: 'agent', operation: 'health', invocation: false } },
      handler: ({ params }) => {
        const agent = agentNamed(params.agent);
        return { status: agentStatus(ctx, agent.name), agent: agent.name, framework: agent.framework };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/config',
      summary: 'Configuration of an agent',
      tags: agentTags,
      schema: { params: AgentParams, response: { 200: S.AgentConfigResponse, 404: unknownAgent } },
      handler: ({ params }) => {
        const agent = agentNamed(params.agent);
        return { agent: agent.name, config: agent.config };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/prompts',
      summary: 'Prompt versions of an agent',
      tags: agentTags,
      schema: { params: AgentParams, response: { 200: S.AgentPrompts, 404: unknownAgent } },
      handler: ({ params }) => {
        const agent = agentNamed(params.agent);
        return { agent: agent.name, versions: Object.keys(agent.prompts.versions), active: agent.prompts.active };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/card',
      summary: 'Agent card of an agent',
      tags: agentTags,
      schema: { params: AgentParams, response: { 200: S.AgentCardSchema, 404: unknownAgent } },
      config: { resource: { kind: 'agent', param: 'agent', operation: 'card', invocation: false } },
      handler: ({ params }) => buildAgentCard(ctx, agentNamed(params.agent)),
    }),
  ];
}

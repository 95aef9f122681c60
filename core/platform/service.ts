import path from 'node:path';
import type { z } from 'zod';
import type { Agent } from '../agents/kind.js';
import type { HangarContext } from '../kernel/context.js';
import { PLATFORM_NAME } from '../kernel/version.js';
import type { AggregatedHealth, PlatformStatus } from './schemas.js';

/**
 * Platform-level views over the registry and metrics. An agent is `healthy` when it loaded;
 * `degraded` when its file is currently broken and the last good version is still serving;
 * `disabled` or `draining` while an operator holds it back (control plane), since it then takes
 * no new calls — a probe must not route work to it.
 */

export function agentStatus(ctx: HangarContext, name: string): 'healthy' | 'degraded' | 'disabled' | 'draining' {
  const held = ctx.services.find('control')?.heldState('agent', name);
  if (held) return held;
  const entry = ctx.registry.get('agent', name);
  const broken = entry && ctx.registry.problemsOf('agent').some((p) => p.entry === entry.file);
  return broken ? 'degraded' : 'healthy';
}

export function listAgents(ctx: HangarContext): Agent[] {
  return ctx.registry.list<Agent>('agent').map((e) => e.definition);
}

/**
 * Degraded as soon as any drop-in fails to load — also one that never loaded and so has no agent
 * entry to mark — with each failing drop-in named. The code frame is left out: /health is public
 * (probes carry no token), the frame is source code.
 */
export function aggregatedHealth(ctx: HangarContext): z.infer<typeof AggregatedHealth> {
  const agents: Record<string, { status: string }> = {};
  for (const agent of listAgents(ctx)) agents[agent.name] = { status: agentStatus(ctx, agent.name) };
  const errors = ctx.registry
    .problemsOf()
    .map((p) => ({ kind: p.kind, name: p.name, file: p.file, line: p.line, column: p.column, error: p.message }));
  const maintenance = ctx.services.find('control')?.maintenanceStatus.enabled === true;
  const status = maintenance
    ? 'maintenance'
    : errors.length === 0 && Object.values(agents).every((a) => a.status === 'healthy')
      ? 'healthy'
      : 'degraded';
  const warnings = ctx.typeCheck
    .problems()
    .map((p) => ({ kind: 'type' as const, file: p.file, line: p.line, column: p.column, error: p.message }));
  return { status, agents, errors, warnings };
}

export async function requestCounts(ctx: HangarContext): Promise<{ total: number; by_status: Record<string, number> }> {
  const metric = await ctx.metrics.httpRequests.get();
  const byStatus: Record<string, number> = {};
  let total = 0;
  for (const value of metric.values) {
    const status = String(value.labels.status);
    byStatus[status] = (byStatus[status] ?? 0) + value.value;
    total += value.value;
  }
  return { total, by_status: byStatus };
}

export async function platformStatus(ctx: HangarContext): Promise<z.infer<typeof PlatformStatus>> {
  const { registry } = ctx;
  const dropins: Record<string, number> = {};
  for (const kind of registry.kinds()) dropins[kind] = registry.list(kind).length;
  const health = aggregatedHealth(ctx);
  const store = storeStatus(ctx);
  const storeTrouble = !store.writable || store.recovered !== undefined;
  return {
    platform: PLATFORM_NAME,
    version: ctx.version,
    status: !ctx.lifecycle.ready ? 'starting' : registry.problemsOf().length || storeTrouble ? 'degraded' : health.status,
    ready: ctx.lifecycle.ready,
    workspace: ctx.paths.root,
    started_at: ctx.startedAt.toISOString(),
    uptime_seconds: Math.round((Date.now() - ctx.startedAt.getTime()) / 100) / 10,
    agents: registry.list<Agent>('agent').map((entry) => ({
      name: entry.name,
      file: entry.file,
      version: entry.definition.version,
      build: entry.version,
      loaded_at: entry.loadedAt,
      loads: entry.loads,
      status: agentStatus(ctx, entry.name),
    })),
    dropins,
    errors: registry.problemsOf(),
    // Every supervised drop-in host (README "Isolation"): agents', tools', endpoint handlers', ingestors'.
    hosts: [
      ...(ctx.services.find('agents')?.hosts.status() ?? []),
      ...(ctx.services.find('agents')?.toolHosts.status() ?? []),
      ...(ctx.services.find('endpoints')?.hostStatus() ?? []),
      ...(ctx.services.find('ingestion')?.hostStatus() ?? []),
    ],
    type_errors: ctx.typeCheck.problems(),
    requests: await requestCounts(ctx),
    tasks: { enabled: ctx.settings.tasks.enabled },
    store,
    mcp_servers: ctx.services.find('agents')?.mcp.status() ?? [],
    ...(await teamStatus(ctx)),
  };
}

/** Team mode: this instance and every instance seen lately on the shared database. */
async function teamStatus(ctx: HangarContext) {
  const team = ctx.services.find('team');
  if (!team) return {};
  return { team: { instance: team.instanceId, instances: await team.instances() } };
}

/** The store as the status shows it: paths relative to the workspace, a failing write, a recovery. */
function storeStatus(ctx: HangarContext) {
  const { backend, path: file, recovered } = ctx.store.describe();
  // A database URL (team mode) is shown as it is, without its password (the store's describe()).
  const relative = (p: string) => (path.isAbsolute(p) ? path.relative(ctx.paths.root, p) || '.' : p);
  const health = ctx.store.health();
  return {
    backend,
    path: relative(file),
    writable: health.ok,
    ...(health.ok ? {} : { problem: health.detail }),
    ...(recovered ? { recovered: { moved_to: relative(recovered.moved_to), problem: recovered.problem } } : {}),
  };
}

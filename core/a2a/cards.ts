/**
 * The A2A agent cards: one per agent under /api/v1/{agent}/.well-known/ (v1.0 and v0.3), and the
 * workspace's card at the host root where generic discovery looks.
 */
import path from 'node:path';
import { type Agent, findAgent } from '../agents/kind.js';
import type { HangarContext } from '../kernel/context.js';
import { supportedInterfaces } from './v1.js';

export const A2A_PROTOCOL_VERSION = '0.3.0';

/**
 * The standard A2A agent card of one agent; `origin` is how the caller reached this server. The
 * v1.0 card (`agent-card.json`) lists the JSON-RPC binding in both versions in
 * `supportedInterfaces` and keeps the v0.3 fields (`url`, `preferredTransport`,
 * `protocolVersion`) beside them, so a client of either version reads it; `agent.json`, the v0.3
 * name of the file, is the v0.3 card alone.
 */
export function a2aAgentCard(ctx: HangarContext, agentName: string, origin: string, version: '1.0' | '0.3' = '1.0') {
  const agent = findAgent(ctx.registry, agentName);
  const url = `${origin}/api/v1/${agent.name}/a2a`;
  return {
    ...(version === '1.0' ? { supportedInterfaces: supportedInterfaces(url) } : {}),
    protocolVersion: A2A_PROTOCOL_VERSION,
    name: agent.name,
    description: agent.description || `Hangar agent ${agent.name}`,
    version: agent.version,
    url,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url, transport: 'JSONRPC' }],
    provider: { organization: 'Hangar', url: origin },
    capabilities: {
      streaming: true,
      pushNotifications: false,
      stateTransitionHistory: ctx.settings.tasks.enabled,
      ...(version === '1.0' ? { extendedAgentCard: false } : {}),
    },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: [{ id: agent.name, name: agent.slug, description: agent.description || agent.name, tags: [agent.framework] }],
  };
}

/**
 * The workspace's v1.0 agent card at the host root (`/.well-known/agent-card.json`), where generic
 * A2A discovery looks. A card describes one agent, so the workspace is described as one: a skill
 * per agent, and per agent an interface on the host-root endpoint `/a2a` whose `tenant` is the
 * agent's name (v1.0 requests carry the tenant; that endpoint routes by it). A client that picks
 * an interface by its own rule reaches one of them (the SDK takes the last 1.0 entry); to address
 * a given agent choose its interface, or use the agent's own card under /api/v1/{agent}/.
 */
export function workspaceAgentCard(ctx: HangarContext, origin: string) {
  const agents = ctx.registry.list<Agent>('agent').map((e) => e.definition);
  return {
    name: `Hangar workspace ${path.basename(ctx.paths.root)}`,
    description: agents.length
      ? `Hangar agents, one interface each (tenant = agent name): ${agents.map((a) => a.name).join(', ')}`
      : 'A Hangar workspace with no agents yet',
    version: ctx.version,
    supportedInterfaces: agents.map((agent) => ({
      url: `${origin}/a2a`,
      protocolBinding: 'JSONRPC',
      protocolVersion: '1.0',
      tenant: agent.name,
    })),
    provider: { organization: 'Hangar', url: origin },
    capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: agents.map((agent) => ({
      id: agent.name,
      name: agent.slug,
      description: agent.description || agent.name,
      tags: [agent.framework],
    })),
  };
}

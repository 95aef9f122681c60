import type { Agent } from '../agents/kind.js';
import type { HangarContext } from '../kernel/context.js';

/**
 * The one agent-card builder, used by GET /api/v1/{agent}/card and /.well-known/agent.json.
 *
 * Capabilities and endpoints come from `ctx.agentSurface` — what the mounted subsystems really
 * serve — and the spec's card rules are applied on top: with the task subsystem disabled,
 * stateTransitionHistory, pushNotifications and resumableStreams are false and the a2a_tasks and
 * a2a_events endpoints are omitted. pushNotifications is false unless a subsystem serves push
 * (webhook) delivery.
 */
export interface AgentCard {
  name: string;
  description: string;
  version: string;
  framework: string;
  capabilities: Record<string, boolean>;
  endpoints: Record<string, string>;
  metadata: Record<string, unknown>;
}

const CAPABILITY_KEYS = ['streaming', 'chat', 'invoke', 'a2a', 'stateTransitionHistory', 'pushNotifications', 'resumableStreams'];
const TASK_BACKED_CAPABILITIES = ['stateTransitionHistory', 'pushNotifications', 'resumableStreams'];
const TASK_BACKED_ENDPOINTS = ['a2a_tasks', 'a2a_events'];

export function buildAgentCard(ctx: HangarContext, agent: Agent): AgentCard {
  const tasksEnabled = ctx.settings.tasks.enabled;
  const surface = ctx.agentSurface;
  const capabilities: Record<string, boolean> = {};
  for (const key of new Set([...CAPABILITY_KEYS, ...Object.keys(surface.capabilities)])) {
    capabilities[key] = (surface.capabilities[key] ?? false) && (tasksEnabled || !TASK_BACKED_CAPABILITIES.includes(key));
  }
  const endpoints: Record<string, string> = {};
  for (const [key, template] of Object.entries(surface.endpoints)) {
    if (!tasksEnabled && TASK_BACKED_ENDPOINTS.includes(key)) continue;
    endpoints[key] = template.replaceAll('{agent}', agent.name);
  }
  return {
    name: agent.slug,
    description: agent.description,
    version: agent.version,
    framework: agent.framework,
    capabilities,
    endpoints,
    metadata: {
      agent_name: agent.name,
      prompt_versions: Object.keys(agent.prompts.versions),
      active_prompt: agent.prompts.active,
      kind: agent.definition.graph ? 'graph' : 'function',
      requires_model: agent.definition.requiresModel ?? false,
    },
  };
}

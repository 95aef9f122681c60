/**
 * The agents subsystem as the server wires it: builds the runtime (model provider, execution
 * service, threads, feedback) and provides it as the `agents` service, publishes what every agent
 * serves for the cards, and mounts the execution and tool routes.
 */

import { mountRoutes } from '../http/route.js';
import type { Subsystem } from '../kernel/context.js';
import { VERSION } from '../kernel/version.js';
import { agentRoutes } from './routes.js';
import { type AgentRuntime, createAgentRuntime } from './runtime.js';
import { toolKind } from './tool-kind.js';
import { toolRoutes } from './tool-routes.js';
import { tracingFromSettings } from './tracing.js';

declare module '../kernel/services.js' {
  interface ServiceMap {
    agents: AgentRuntime;
  }
}

export const agentsSubsystem: Subsystem = {
  name: 'agents',
  provides: ['agents'],
  kinds: [toolKind],
  async setup(ctx) {
    // Off (and nothing imported) unless telemetry.otlp.endpoint is set.
    ctx.services.provide('agents', createAgentRuntime(ctx, await tracingFromSettings(ctx.settings.telemetry, VERSION)));
    Object.assign(ctx.agentSurface.endpoints, {
      invoke: '/api/v1/{agent}/invoke',
      chat: '/api/v1/{agent}/chat',
      stream: '/api/v1/{agent}/invoke/stream',
      stream_replay: '/api/v1/{agent}/invoke/stream/{stream_id}',
    });
    Object.assign(ctx.agentSurface.capabilities, { invoke: true, chat: true, streaming: true });
  },
  routes(app, ctx) {
    mountRoutes(app, [...agentRoutes(ctx), ...toolRoutes(ctx)]);
  },
  // MCP servers stop with Hangar, the agents' hosts too, and the spans of the last runs are sent before the process goes.
  close: async (ctx) => {
    const runtime = ctx.services.find('agents');
    await Promise.all([runtime?.mcp.stop(), runtime?.hosts.close(), runtime?.toolHosts.close(), runtime?.tracing.tracing.shutdown()]);
  },
};

/**
 * The agents subsystem as the server wires it: builds the runtime (model provider, execution
 * service, threads, feedback) as `ctx.agents`, publishes what every agent serves for the cards,
 * documents and mounts the execution routes.
 */
import type { Subsystem } from '../kernel/context.js';
import { agentRoutes, registerAgentDocs } from './routes.js';
import { createAgentRuntime } from './runtime.js';
import { toolKind } from './tool-kind.js';
import { toolRoutes } from './tool-routes.js';

export const agentsSubsystem: Subsystem = {
  name: 'agents',
  kinds: [toolKind],
  setup(ctx) {
    ctx.agents = createAgentRuntime(ctx);
    Object.assign(ctx.agentSurface.endpoints, {
      invoke: '/api/v1/{agent}/invoke',
      chat: '/api/v1/{agent}/chat',
      stream: '/api/v1/{agent}/invoke/stream',
      stream_replay: '/api/v1/{agent}/invoke/stream/{stream_id}',
    });
    Object.assign(ctx.agentSurface.capabilities, { invoke: true, chat: true, streaming: true });
    registerAgentDocs(ctx);
  },
  routes(app, ctx) {
    agentRoutes(app, ctx);
    toolRoutes(app, ctx);
  },
};

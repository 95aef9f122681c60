/**
 * The A2A subsystem: registers the `agent` task kind on the board, publishes the A2A routes on
 * every agent's card (the card builder drops the task-backed ones when tasks are off) and mounts
 * /invoke/async, the spec's /a2a/tasks routes, the public A2A JSON-RPC binding (jsonrpc.ts) and
 * MCP at /mcp (mcp.ts), whose sessions it provides as `mcpSessions`, built by the first MCP request.
 */
import type { Subsystem } from '../kernel/context.js';
import { McpSessions } from './mcp.js';
import { mountA2aRoutes, ROOT_CARD_PATH } from './routes.js';
import { AGENT_TASK_KIND, agentTaskKind, continueTask } from './service.js';

export const a2aSubsystem: Subsystem = {
  name: 'a2a',
  provides: ['mcpSessions'],
  depends: ['tasks', 'agents'],
  uses: ['invocations'],
  setup(ctx) {
    const tasksOn = ctx.settings.tasks.enabled;
    if (tasksOn) ctx.services.get('tasks').registerKind(AGENT_TASK_KIND, agentTaskKind(ctx));
    Object.assign(ctx.agentSurface.endpoints, {
      a2a_tasks: '/api/v1/{agent}/a2a/tasks',
      a2a_events: '/api/v1/{agent}/a2a/tasks/{task_id}/events',
      // The public A2A protocol binding (JSON-RPC, v1.0 and v0.3) and its standard card.
      a2a_jsonrpc: '/api/v1/{agent}/a2a',
      a2a_card: '/api/v1/{agent}/.well-known/agent-card.json',
      // Only listed when it can answer: without tasks it is a 501.
      ...(tasksOn ? { invoke_async: '/api/v1/{agent}/invoke/async' } : {}),
    });
    // Every status change is an event (stateTransitionHistory) and events resume by sequence
    // (resumableStreams); there is no webhook delivery, so pushNotifications stays false.
    Object.assign(ctx.agentSurface.capabilities, { a2a: true, stateTransitionHistory: true, resumableStreams: true });
    // Discovery documents are public, as /.well-known/agent.json is.
    ctx.publicPaths.add(ROOT_CARD_PATH);
    // Approvals of runs an agent task made are decided by continuing that task, whichever route decides them.
    ctx.services.get('agents').service.routeTaskDecisions(
      async (record, decision) => (await continueTask(ctx, record, decision)).outcome,
      async (record, reason) => {
        // Its approval is gone already, so the kind's release finds nothing more to discard.
        await ctx.services
          .get('tasks')
          .cancel(record.task_id!, {}, reason)
          .catch((err: unknown) => ctx.log.warn(`task ${record.task_id} could not be ended: ${String(err)}`));
      },
    );
    ctx.services.provideLazy('mcpSessions', () => new McpSessions(ctx.registry));
  },
  routes: mountA2aRoutes,
  async close(ctx) {
    if (ctx.services.isBuilt('mcpSessions')) await ctx.services.get('mcpSessions').closeAll();
  },
};

/**
 * The agent runtime of one server: the model provider, the execution service (engine, streams,
 * approvals, checkpoints), threads and feedback, built once from the settings and provided as the
 * `agents` service, so other subsystems (studio, A2A, pipelines) run agents the way the routes do.
 */

import { FeedbackService } from '../feedback/service.js';
import type { HangarContext } from '../kernel/context.js';
import { hostReports } from '../kernel/dropin-host.js';
import { errorMessage } from '../kernel/errors.js';
import { ThreadService } from '../threads/service.js';
import { AgentHosts } from './host/supervisor.js';
import { type Agent, findAgent } from './kind.js';
import { McpServers } from './mcp-servers.js';
import { createModelProvider, type ModelProvider } from './model.js';
import { AgentService } from './service.js';
import { ToolHosts } from './tool-hosts.js';
import type { AnyTool } from './tools.js';
import { type AgentTracing, NO_AGENT_TRACING } from './tracing.js';

/** How many of the agents found at start-up get their host started ahead of a first call (below). */
export const HOSTS_STARTED_AHEAD_AT_START = 8;

export interface AgentRuntime {
  provider: ModelProvider;
  /** The supervised hosts agents' functions run in (README "Isolation"). */
  hosts: AgentHosts;
  /** The supervised hosts `tools/` drop-ins run in. */
  toolHosts: ToolHosts;
  service: AgentService;
  threads: ThreadService;
  feedback: FeedbackService;
  /** Spans of runs over OTLP when `telemetry.otlp.endpoint` is set (tracing.ts). */
  tracing: AgentTracing;
  /** The MCP servers of `mcp.servers`, supervised; their tools for agents that list them. */
  mcp: McpServers;
}

export function createAgentRuntime(ctx: HangarContext, tracing: AgentTracing = NO_AGENT_TRACING): AgentRuntime {
  const mcp = new McpServers(ctx.settings.mcp, ctx.log, ctx.version);
  const provider = createModelProvider(ctx.settings.model);
  const threads = new ThreadService(ctx.store, provider, (err) =>
    ctx.log.warn('thread summary: model failed, used an extractive summary', { error: errorMessage(err) }),
  );
  const toolHosts = new ToolHosts({
    registry: ctx.registry,
    root: ctx.paths.root,
    maxHeapMb: ctx.settings.agents.maxHeapMb,
    watchdogMs: ctx.settings.dropins.watchdogMs,
    ...hostReports(ctx, 'tool'),
  });
  // A tool's host starts as it loads or reloads, after the change is announced, as an agent's does.
  ctx.registry.on('change', (change) => {
    if (change.kind !== 'tool') return;
    if (change.type === 'removed') return toolHosts.forget(change.name);
    if (change.type !== 'added' && change.type !== 'updated') return;
    setImmediate(() => {
      const tool = ctx.registry.get<AnyTool>('tool', change.name)?.definition;
      if (tool) toolHosts.prepare(tool);
    });
  });
  // A `tools/` drop-in's run goes to its host, wherever the tool is looked up from.
  const lookupTool = (name: string) => toolHosts.hosted(ctx.registry.get<AnyTool>('tool', name)?.definition);
  const hosts = new AgentHosts({
    registry: ctx.registry,
    root: ctx.paths.root,
    maxHeapMb: ctx.settings.agents.maxHeapMb,
    watchdogMs: ctx.settings.agents.watchdogMs,
    resolveTool: lookupTool,
    resolveMcpTools: (ref, agent) => mcp.resolve(ref, agent),
    ...hostReports(ctx, 'agent'),
  });
  // Hosts start as agents load or reload, after the change is announced: never in discovery's way.
  // Of the agents the start-up scan loads, only the first HOSTS_STARTED_AHEAD_AT_START (in path
  // order) get their host started ahead; the others start at their first call, as VS Code activates
  // an extension on its first use. A host is a thread of ~5.5 MB taking 100-300 ms of CPU to start,
  // which stops again after a minute idle: 1,000 agents meant 1,000 threads started one after
  // another through the first minutes, each competing with the server and its first requests, for
  // agents mostly not called. An agent loaded or reloaded later (a save) is being worked on, and
  // its host starts at once.
  let startedAheadAtStart = 0;
  ctx.registry.on('change', (change) => {
    if (change.kind !== 'agent' || (change.type !== 'added' && change.type !== 'updated')) return;
    const atStart = !ctx.lifecycle.ready;
    setImmediate(() => {
      const agent = ctx.registry.get<Agent>('agent', change.name)?.definition;
      if (!agent) return;
      if (atStart && hosts.supervises(agent) && startedAheadAtStart++ >= HOSTS_STARTED_AHEAD_AT_START) return;
      hosts.prepare(agent);
    });
  });
  const service = new AgentService({
    host: hosts,
    findAgent: (name) => findAgent(ctx.registry, name),
    lookupAgent: (name) => ctx.registry.get<Agent>('agent', name)?.definition,
    lookupTool,
    store: ctx.store,
    provider,
    workspace: ctx.paths.root,
    log: ctx.log,
    threads,
    streams: { retain: ctx.settings.streams.retain, ttlMs: ctx.settings.streams.ttlSeconds * 1000 },
    sharedStreams: ctx.services.find('teamStreams'),
    defaultMaxHistory: ctx.settings.chat.max_history,
    keepCheckpoints: ctx.settings.checkpoints.keep,
    defaultTimeoutMs: ctx.settings.agents.timeoutMs,
    tracing,
    resolveMcpTools: (ref, agent) => mcp.resolve(ref, agent),
    onRun: (agent, route, outcome) => ctx.metrics.agentInvocations.inc({ agent, route, outcome }),
    onUsage: (agent, usage) => {
      for (const call of usage.calls) {
        if (call.prompt_tokens) ctx.metrics.modelTokens.inc({ agent, model: call.model, kind: 'prompt' }, call.prompt_tokens);
        if (call.completion_tokens) ctx.metrics.modelTokens.inc({ agent, model: call.model, kind: 'completion' }, call.completion_tokens);
      }
    },
  });
  return { provider, hosts, toolHosts, service, threads, feedback: new FeedbackService(ctx.store), tracing, mcp };
}

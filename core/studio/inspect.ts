/**
 * What the studio shows about an agent without running it: its entry in the agent list (with the
 * capabilities it really has), its graph, the JSON Schemas of its models, and its configuration.
 * Pure functions of the agent definition; the graph itself comes from the runtime's `graphView`,
 * so the studio draws exactly what the engine runs.
 */
import { z } from 'zod';
import { type CompiledGraph, compileGraph, GraphDefinitionError, graphView } from '../agents/graph.js';
import type { Agent } from '../agents/kind.js';
import type { ModelProvider } from '../agents/model.js';
import { errorMessage, fail } from '../kernel/errors.js';
import type { AgentEntry } from './schemas.js';

/** The agent's compiled graph; a definition that does not compile is the spec's 500 "graph error". */
export function graphOf(agent: Agent): CompiledGraph {
  try {
    return compileGraph(agent.definition);
  } catch (err) {
    if (err instanceof GraphDefinitionError) throw fail('HANGAR_STUDIO_GRAPH_INVALID', { agent: agent.name, problem: err.message });
    throw err;
  }
}

/** Breakpoints must name nodes of the graph; otherwise a 422 listing the nodes there are. */
export function checkBreakpoints(agent: Agent, breakpoints: readonly string[], field = 'body.breakpoints'): void {
  const graph = graphOf(agent);
  const unknown = breakpoints.filter((name) => !graph.nodes.has(name));
  if (unknown.length) {
    throw fail('HANGAR_STUDIO_BREAKPOINTS_UNKNOWN', {
      field,
      names: unknown.map((n) => `'${n}'`).join(', '),
      verb: unknown.length === 1 ? 'is not a node' : 'are not nodes',
      agent: agent.name,
      nodes: [...graph.nodes.keys()].join(', '),
    });
  }
}

// What an agent's code does is read from its source text, the same way `graphView` shows an
// edge's condition: esbuild keeps property names, so `ctx.interrupt(` survives bundling. Accepted
// edge case: a call in a comment or a helper defined elsewhere is missed or over-counted.
const CALLS = {
  hitl: /\binterrupt\s*\(/,
  subagents: /\bcallAgent\s*\(/,
  planning: /\.plan\s*\(/,
  model: /\.chat\s*\(/,
};

/**
 * Capabilities, in a fixed order. Every agent streams, checkpoints each step, has a readable
 * and editable state and can stop at breakpoints (a function agent at its one node); `graph`
 * means it declares a graph of its own, and the rest come from its nodes and code.
 */
export function agentEntry(agent: Agent): AgentEntry {
  const definition = agent.definition;
  let graph: CompiledGraph | undefined;
  let graphError: string | null = null;
  try {
    graph = compileGraph(definition);
  } catch (err) {
    graphError = errorMessage(err);
  }
  const sources: string[] = [];
  const kinds = new Set<string>();
  if (graph) {
    for (const node of graph.nodes.values()) {
      kinds.add(node.kind);
      if (node.kind === 'function') sources.push((graph.synthetic ? definition.run : node.run)?.toString() ?? '');
    }
  }
  const code = sources.join('\n');
  const capabilities: string[] = [];
  if (definition.graph) capabilities.push('graph');
  if (graph) capabilities.push('streaming', 'checkpoints', 'state', 'breakpoints');
  if (kinds.has('approval') || CALLS.hitl.test(code)) capabilities.push('hitl');
  if (kinds.has('subagent') || CALLS.subagents.test(code)) capabilities.push('subagents');
  if (CALLS.planning.test(code)) capabilities.push('planning');
  if (definition.requiresModel || CALLS.model.test(code)) capabilities.push('model');
  return {
    name: agent.name,
    slug: agent.slug,
    description: agent.description,
    version: agent.version,
    framework: agent.framework,
    capabilities,
    has_graph: !!definition.graph,
    has_config: !!definition.config && Object.keys(definition.config).length > 0,
    // The runtime gives an agent without prompts an implicit empty 'v1'; that is not a prompt.
    has_prompts: Object.keys(definition.prompts?.versions ?? {}).length > 0,
    graph_error: graphError,
  };
}

export function agentGraph(agent: Agent) {
  graphOf(agent);
  return { agent_name: agent.name, ...graphView(agent.definition) };
}

/** What every agent receives when no input model is declared: the run request's agent-facing part. */
const DefaultInput = z.object({
  query: z.string().describe('user query or input'),
  user_id: z.string().default('default-user'),
  context: z.record(z.string(), z.unknown()).default({}).describe('extra context for the agent'),
  metadata: z.record(z.string(), z.unknown()).default({}),
});

/** What every run returns when no output model is declared (AgentInvokeResponse's agent part). */
const DefaultOutput = z.object({
  response: z.string().describe('agent response text'),
  output: z.unknown().nullable().describe('structured payload when available'),
  suggestions: z.array(z.string()),
  citations: z.array(z.record(z.string(), z.unknown())),
  steps_taken: z.array(z.string()),
  context: z.unknown().nullable(),
  metadata: z.record(z.string(), z.unknown()),
});

/** The state keys every graph runs over; agents add their own beside them. */
const StateModel = z
  .object({
    messages: z.array(
      z.object({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: z.string(), timestamp: z.string().optional() }),
    ),
    response: z.string(),
    steps_taken: z.array(z.string()),
    metadata: z.record(z.string(), z.unknown()),
  })
  .catchall(z.unknown());

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  return json;
}

export function agentSchemas(agent: Agent) {
  const { input, output } = agent.definition;
  return {
    agent_name: agent.name,
    input_schema: jsonSchema(input ?? DefaultInput, 'input'),
    output_schema: jsonSchema(output ?? DefaultOutput, 'output'),
    state_schema: jsonSchema(StateModel, 'output'),
    sources: { input: input ? ('agent' as const) : ('default' as const), output: output ? ('agent' as const) : ('default' as const) },
  };
}

export function agentConfig(agent: Agent, provider: ModelProvider) {
  return {
    agent_name: agent.name,
    kind: agent.definition.graph ? ('graph' as const) : ('function' as const),
    config: agent.config as Record<string, unknown>,
    prompts: { versions: Object.keys(agent.prompts.versions), active: agent.prompts.active },
    model: {
      configured: provider.configured,
      name: agent.config.model ?? provider.model,
      required: agent.definition.requiresModel ?? false,
    },
  };
}

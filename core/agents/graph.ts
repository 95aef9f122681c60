/**
 * Graph topology: turning an agent definition into a checked, read-only graph, and the view the
 * studio draws. Mutation never happens here — the engine reads a `CompiledGraph` and the state.
 *
 * A function agent (`run`) compiles to the graph start → agent → end, so the engine, checkpoints,
 * events and the studio treat both kinds the same way.
 */
import { type AgentDefinition, type AgentState, END, type GraphEdge, type NodeFn } from './types.js';

export const START = '__start__';
export { END };

export type CompiledNode =
  | { name: string; kind: 'function'; type: string; description?: string; run: NodeFn }
  | { name: string; kind: 'approval'; type: 'approval'; description?: string; message: string | ((state: AgentState) => string) }
  | { name: string; kind: 'subagent'; type: 'subagent'; description?: string; agent: string; query?: (state: AgentState) => string };

export interface CompiledGraph {
  /** True for a function agent: its single node is an implementation detail, not a step. */
  readonly synthetic: boolean;
  readonly nodes: ReadonlyMap<string, CompiledNode>;
  /** Outgoing edges per node, in declaration order (the first matching one is taken). */
  readonly outgoing: ReadonlyMap<string, readonly GraphEdge[]>;
  readonly entry: string;
  readonly ends: ReadonlySet<string>;
}

export class GraphDefinitionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GraphDefinitionError';
  }
}

/** The node name a function agent runs as. */
export const FUNCTION_NODE = 'agent';

const compiled = new WeakMap<AgentDefinition, CompiledGraph>();

/**
 * Check and compile a definition; throws `GraphDefinitionError` saying what is wrong (unknown
 * entry, an edge naming a missing node, a node of no known shape). Cached per definition object,
 * so a hot-reloaded definition is compiled once.
 */
export function compileGraph(definition: AgentDefinition): CompiledGraph {
  const cached = compiled.get(definition);
  if (cached) return cached;
  const graph = definition.graph ? compileSpec(definition) : compileFunction(definition);
  compiled.set(definition, graph);
  return graph;
}

function compileFunction(definition: AgentDefinition): CompiledGraph {
  const run = definition.run;
  if (typeof run !== 'function') throw new GraphDefinitionError('an agent needs either `run` (a function) or `graph`');
  const node: CompiledNode = {
    name: FUNCTION_NODE,
    kind: 'function',
    type: 'agent',
    description: definition.description,
    // The function's result becomes state keys; `buildResult` reads them back.
    run: async (state, ctx) => {
      const raw = await run(ctx.input, ctx);
      const result = typeof raw === 'string' ? { response: raw } : raw;
      if (!result || typeof result !== 'object' || typeof result.response !== 'string') {
        throw new Error('agent returned neither a string nor an object with a string `response`');
      }
      return {
        response: result.response,
        output: result.output ?? null,
        suggestions: result.suggestions ?? [],
        citations: result.citations ?? [],
        context: result.context ?? null,
        result_metadata: result.metadata ?? {},
        reasoning: result.reasoning,
        steps_taken: [...state.steps_taken, ...(result.steps_taken ?? [])],
      };
    },
  };
  return {
    synthetic: true,
    nodes: new Map([[FUNCTION_NODE, node]]),
    outgoing: new Map([[FUNCTION_NODE, [{ from: FUNCTION_NODE, to: END }]]]),
    entry: FUNCTION_NODE,
    ends: new Set([FUNCTION_NODE]),
  };
}

function compileSpec(definition: AgentDefinition): CompiledGraph {
  const spec = definition.graph!;
  if (!spec.nodes || typeof spec.nodes !== 'object') throw new GraphDefinitionError('graph.nodes must be an object of nodes');
  const nodes = new Map<string, CompiledNode>();
  for (const [name, node] of Object.entries(spec.nodes)) {
    if (name === START || name === END) throw new GraphDefinitionError(`graph node name '${name}' is reserved`);
    nodes.set(name, compileNode(name, node));
  }
  if (!nodes.has(spec.entry)) {
    throw new GraphDefinitionError(`graph.entry '${spec.entry}' is not a node (nodes: ${[...nodes.keys()].join(', ')})`);
  }
  const outgoing = new Map<string, GraphEdge[]>();
  for (const [i, edge] of (spec.edges ?? []).entries()) {
    if (!nodes.has(edge.from)) throw new GraphDefinitionError(`graph.edges[${i}].from '${edge.from}' is not a node`);
    if (edge.to !== END && !nodes.has(edge.to)) throw new GraphDefinitionError(`graph.edges[${i}].to '${edge.to}' is not a node`);
    if (edge.when !== undefined && typeof edge.when !== 'function') {
      throw new GraphDefinitionError(`graph.edges[${i}].when must be a function of the state`);
    }
    outgoing.set(edge.from, [...(outgoing.get(edge.from) ?? []), edge]);
  }
  const ends = new Set(spec.end ?? []);
  for (const name of ends) if (!nodes.has(name)) throw new GraphDefinitionError(`graph.end names unknown node '${name}'`);
  // A node with no way out finishes the run, so it is an end point too.
  for (const name of nodes.keys()) if (!outgoing.has(name)) ends.add(name);
  for (const [from, edges] of outgoing) if (edges.some((e) => e.to === END)) ends.add(from);
  return { synthetic: false, nodes, outgoing, entry: spec.entry, ends };
}

function compileNode(name: string, node: unknown): CompiledNode {
  if (typeof node === 'function') return { name, kind: 'function', type: 'node', run: node as NodeFn };
  if (!node || typeof node !== 'object') throw new GraphDefinitionError(`graph node '${name}' must be a function or an object`);
  const n = node as Record<string, unknown>;
  const description = typeof n.description === 'string' ? n.description : undefined;
  if (n.type === 'approval') {
    if (typeof n.message !== 'string' && typeof n.message !== 'function') {
      throw new GraphDefinitionError(`approval node '${name}' needs a message (string or function of the state)`);
    }
    return { name, kind: 'approval', type: 'approval', description, message: n.message as string | ((state: AgentState) => string) };
  }
  if (n.type === 'subagent') {
    if (typeof n.agent !== 'string' || !n.agent) throw new GraphDefinitionError(`subagent node '${name}' needs an agent name`);
    return {
      name,
      kind: 'subagent',
      type: 'subagent',
      description,
      agent: n.agent,
      query: typeof n.query === 'function' ? (n.query as (state: AgentState) => string) : undefined,
    };
  }
  if (typeof n.run !== 'function') throw new GraphDefinitionError(`graph node '${name}' needs a run function`);
  return { name, kind: 'function', type: typeof n.type === 'string' ? n.type : 'node', description, run: n.run as NodeFn };
}

/** The node after `from` for this state: the first edge whose condition holds; null = finished. */
export function nextNode(graph: CompiledGraph, from: string, state: AgentState): string | null {
  const edges = graph.outgoing.get(from) ?? [];
  for (const edge of edges) {
    if (!edge.when || edge.when(state)) return edge.to === END ? null : edge.to;
  }
  if (graph.ends.has(from)) return null;
  throw new GraphDefinitionError(`no edge out of node '${from}' matched the state, and '${from}' is not an end point`);
}

/**
 * A graph's own code that is not a node: its edge conditions (asked together, as `nextNode` does),
 * its `result`, an approval node's `message` and a subagent node's `query`. A supervised agent's
 * host runs them (`runGraphFunction`) for the server's engine, which names them by this.
 */
export type GraphFunction =
  | { kind: 'next'; from: string }
  | { kind: 'result' }
  | { kind: 'message'; node: string }
  | { kind: 'query'; node: string };

/** Run one of the graph's functions on the state: the same answer on the server and in a host. */
export function runGraphFunction(definition: AgentDefinition, fn: GraphFunction, state: AgentState): unknown {
  const graph = compileGraph(definition);
  switch (fn.kind) {
    case 'next':
      return nextNode(graph, fn.from, state);
    case 'result':
      return definition.graph?.result?.(state);
    case 'message': {
      const node = graph.nodes.get(fn.node);
      if (node?.kind !== 'approval') throw new GraphDefinitionError(`graph node '${fn.node}' is not an approval node in this build`);
      return typeof node.message === 'function' ? node.message(state) : node.message;
    }
    case 'query': {
      const node = graph.nodes.get(fn.node);
      if (node?.kind !== 'subagent') throw new GraphDefinitionError(`graph node '${fn.node}' is not a subagent node in this build`);
      return node.query?.(state);
    }
  }
}

export interface GraphView {
  nodes: Array<{ id: string; name: string; type: string; metadata: Record<string, unknown> }>;
  edges: Array<{ id: string; source: string; target: string; condition: string | null }>;
  entry_point: string;
  end_points: string[];
}

/** The topology as the studio draws it (GET /studio/agents/{name}/graph), start and end included. */
export function graphView(definition: AgentDefinition): GraphView {
  const graph = compileGraph(definition);
  const nodes: GraphView['nodes'] = [{ id: START, name: START, type: 'start', metadata: {} }];
  for (const node of graph.nodes.values()) {
    const metadata: Record<string, unknown> = {};
    if (node.description) metadata.description = node.description;
    if (node.kind === 'subagent') metadata.agent = node.agent;
    if (node.kind === 'approval' && typeof node.message === 'string') metadata.message = node.message;
    nodes.push({ id: node.name, name: node.name, type: node.type, metadata });
  }
  nodes.push({ id: END, name: END, type: 'end', metadata: {} });
  const edges: GraphView['edges'] = [{ id: `${START}->${graph.entry}`, source: START, target: graph.entry, condition: null }];
  for (const list of graph.outgoing.values()) {
    for (const edge of list) {
      const condition = edge.label ?? (edge.when ? edge.when.toString() : null);
      edges.push({ id: `${edge.from}->${edge.to}#${edges.length}`, source: edge.from, target: edge.to, condition });
    }
  }
  // Explicit end points without an edge to END still finish there; draw that edge.
  for (const end of graph.ends) {
    if (!(graph.outgoing.get(end) ?? []).some((e) => e.to === END)) {
      edges.push({ id: `${end}->${END}#${edges.length}`, source: end, target: END, condition: null });
    }
  }
  return { nodes, edges, entry_point: graph.entry, end_points: [...graph.ends] };
}

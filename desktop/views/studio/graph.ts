/// <reference lib="dom" />
import { html } from 'htm/preact';
import { useMemo, useState } from 'preact/hooks';
import type { GraphView as GraphViewData } from '../../../core/agents/graph.js';
import { type GraphNode, layoutGraph } from './graph-layout.js';
import { idleRun, type RunView } from './run-state.js';

/**
 * The agent's graph as SVG, lit by the run: the executing node pulses, finished nodes are filled,
 * a paused node is outlined, a failed one is red. Clicking a node (or Enter/Space on it) toggles a
 * breakpoint there; the start and end markers take none.
 */
/** GET /studio/agents/{name}/graph. */
export type AgentGraph = GraphViewData & { agent_name: string };

const TERMINAL = new Set(['start', 'end']);

export function GraphView({
  graph,
  run,
  breakpoints,
  onToggleBreakpoint,
  readOnly = false,
  testId = 'graph',
}: {
  graph: AgentGraph;
  run: RunView;
  breakpoints: string[];
  onToggleBreakpoint: (node: string) => void;
  /** A graph shown for reference (a subagent's): no breakpoints, no focus stops. */
  readOnly?: boolean;
  testId?: string;
}) {
  const arrow = `arrow-${testId}`;
  const layout = useMemo(() => layoutGraph(graph.nodes, graph.edges), [graph]);
  const visited = new Set(run.visited);
  const stateOf = (id: string): string => {
    if (run.error?.node === id) return 'failed';
    if (run.paused?.node === id) return 'paused';
    if (run.active === id) return 'active';
    if (visited.has(id)) return 'visited';
    if (id === '__start__' && run.status !== 'idle') return 'visited';
    if (id === '__end__' && run.status === 'completed') return 'visited';
    return 'idle';
  };
  return html`<figure class="graph" data-testid=${testId}>
    <svg
      viewBox=${`0 0 ${layout.width} ${layout.height}`}
      width=${layout.width}
      height=${layout.height}
      role="group"
      aria-label=${`Graph of ${graph.agent_name}`}
    >
      <defs>
        <marker id=${arrow} viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" class="arrow-head" />
        </marker>
      </defs>
      ${layout.edges.map(
        (
          e,
        ) => html`<g class=${`edge${e.back ? ' back' : ''}${visited.has(e.source) && (visited.has(e.target) || run.active === e.target || run.paused?.node === e.target) ? ' taken' : ''}`}>
          <path d=${e.path} marker-end=${`url(#${arrow})`} />
          ${e.condition && html`<text x=${e.labelX + 6} y=${e.labelY} class="edge-label">${e.condition}</text>`}
        </g>`,
      )}
      ${layout.nodes.map((n) => {
        const terminal = TERMINAL.has(n.type);
        const interactive = !terminal && !readOnly;
        const hasBreakpoint = breakpoints.includes(n.id);
        const label = terminal ? (n.type === 'start' ? 'start' : 'end') : n.name;
        const toggle = () => interactive && onToggleBreakpoint(n.id);
        return html`<g
          class=${`node ${n.type} ${stateOf(n.id)}${hasBreakpoint ? ' breakpoint' : ''}`}
          data-node=${n.id}
          data-state=${stateOf(n.id)}
          transform=${`translate(${n.x} ${n.y})`}
          role=${interactive ? 'button' : undefined}
          tabindex=${interactive ? 0 : undefined}
          aria-pressed=${interactive ? hasBreakpoint : undefined}
          aria-label=${interactive ? `${n.name} (${n.type})${hasBreakpoint ? ', breakpoint set' : ''}: toggle breakpoint` : terminal ? label : `${n.name} (${n.type})`}
          onClick=${toggle}
          onKeyDown=${(e: KeyboardEvent) => {
            if (interactive && (e.key === 'Enter' || e.key === ' ')) {
              e.preventDefault();
              toggle();
            }
          }}
        >
          <title>${String(n.metadata.description ?? n.type)}</title>
          <rect width=${n.width} height=${n.height} rx=${terminal ? n.height / 2 : 8} />
          <text x=${n.width / 2} y=${n.height / 2 + 1} text-anchor="middle" dominant-baseline="middle">${label}</text>
          ${!terminal && html`<text x=${n.width - 8} y="13" text-anchor="end" class="node-type">${n.type}</text>`}
          ${hasBreakpoint && html`<circle cx="10" cy="10" r="5" class="bp-dot" />`}
        </g>`;
      })}
    </svg>
    ${!readOnly && html`<figcaption class="muted">Click a node, or press Enter on it, to stop the next run there (breakpoint).</figcaption>`}
  </figure>`;
}

/**
 * What runs inside each subagent node: the called agent's own graph, fetched when its disclosure
 * is opened and drawn read-only (the run's subagent_start/subagent_end events light the node
 * itself in the main graph).
 */
export function SubagentGraphs({ graph, load }: { graph: AgentGraph; load: (agent: string) => Promise<AgentGraph> }) {
  const subagents = graph.nodes.filter((n) => n.type === 'subagent' && typeof n.metadata.agent === 'string');
  return html`${subagents.map((n) => html`<${SubagentGraph} key=${n.id} node=${n} load=${load} />`)}`;
}

function SubagentGraph({ node, load }: { node: GraphNode; load: (agent: string) => Promise<AgentGraph> }) {
  const agent = String(node.metadata.agent);
  const [inner, setInner] = useState<AgentGraph | null>(null);
  const [error, setError] = useState<string | null>(null);
  const onToggle = (e: Event) => {
    if ((e.currentTarget as HTMLDetailsElement).open && !inner) load(agent).then(setInner, (err: unknown) => setError(String(err)));
  };
  return html`<details class="subgraph" data-testid=${`subgraph-${node.id}`} onToggle=${onToggle}>
    <summary>Inside <strong>${node.name}</strong>: agent ${agent}</summary>
    ${
      error
        ? html`<p class="error" role="alert">${error}</p>`
        : inner
          ? html`<${GraphView} graph=${inner} run=${idleRun} breakpoints=${[]} onToggleBreakpoint=${() => {}} readOnly=${true} testId=${`subgraph-graph-${node.id}`} />`
          : html`<p class="muted">Loading…</p>`
    }
  </details>`;
}
